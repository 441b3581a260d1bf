#!/usr/bin/env bash
# Installs, idempotently, every Debian package Booster needs to build, test and
# benchmark. Safe to run repeatedly: packages already present are skipped.
set -euo pipefail

PACKAGES=(
  # toolchain
  build-essential cmake ninja-build pkg-config git ca-certificates ccache
  clang-format clang-tidy clang libclang-rt-14-dev
  # sanitizer runtimes: libFuzzer (-fsanitize=fuzzer) for clang 14 is in libclang-rt-14-dev;
  # ThreadSanitizer for gcc 12 is libtsan2
  libtsan2
  # product dependencies
  libcpprest-dev libssl-dev libyaml-cpp-dev libhwloc-dev hwloc libnuma-dev numactl
  prometheus-cpp-dev libcurl4-openssl-dev libgrpc++-dev libgrpc-dev protobuf-compiler-grpc
  libprotobuf-dev protobuf-compiler libabsl-dev nlohmann-json3-dev python3-yaml
  # tests and benchmarks
  libgtest-dev libgmock-dev googletest libbenchmark-dev wrk
  libjemalloc2 libjemalloc-dev libmimalloc2.0 libgoogle-perftools4
  python3 redis-server nginx-light iproute2 procps util-linux curl openssl
  # end-to-end cluster (tests/e2e)
  containerd runc containernetworking-plugins buildah iptables conntrack
  ethtool socat kmod prometheus
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "bootstrap: all ${#PACKAGES[@]} packages already installed"
  exit 0
fi

echo "bootstrap: installing ${#missing[@]} packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
$SUDO apt-get update -qq
# Daemons from these packages must not start on install (tests start their own).
if [[ ! -e /usr/sbin/policy-rc.d ]]; then
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
  $SUDO chmod +x /usr/sbin/policy-rc.d
  trap '$SUDO rm -f /usr/sbin/policy-rc.d' EXIT
fi
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "bootstrap: done"
