#!/usr/bin/env bash
# The README's test command: installs what is needed, builds, and runs every test —
# unit tests, the same unit tests under ASan+UBSan, every fuzz target for a bounded time,
# the unit tests of the concurrent parts under ThreadSanitizer, then the end-to-end tests
# on a real single-node cluster built on this machine.
#
#   scripts/test.sh            everything
#   scripts/test.sh --no-e2e   skip the cluster (unit, sanitizer, fuzz, tsan only)
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

RUN_E2E=1
for arg in "$@"; do
  case $arg in
    --no-e2e) RUN_E2E=0 ;;
    *) echo "usage: $0 [--no-e2e]" >&2; exit 2 ;;
  esac
done

JOBS=${BOOSTER_JOBS:-2}
# Compiler cache shared by every clone on this machine (CI builds a fresh clone).
export CCACHE_DIR=${CCACHE_DIR:-/var/cache/booster/ccache}
export CCACHE_BASEDIR=$ROOT CCACHE_NOHASHDIR=1 CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-5G}
mkdir -p "$CCACHE_DIR"
WERROR=OFF
if [[ ${CI:-} == true ]]; then WERROR=ON; fi
# JUnit reports of every stage (ctest's and GoogleTest's), read by scripts/test_report.py;
# kept after the run for a look at what failed or skipped.
REPORTS=$ROOT/build/test-reports
rm -rf "$REPORTS"
mkdir -p "$REPORTS"
failed_stage=""

stage() { printf '\n=== %s (%s)\n' "$1" "$(date -u +%H:%M:%S)"; }

# Each stage says how many tests run at once (-jN): the unit tests (plain and under ASan)
# are hermetic (port 0, temporary directories) and run two at a time; the cluster's, the
# fuzzers' and TSan's one at a time.
run_ctest() {  # run_ctest <build-dir> <label> <stage> -jN [more ctest arguments]
  local dir=$REPORTS/$3
  mkdir -p "$dir/gtest"
  GTEST_OUTPUT=xml:$dir/gtest/ ctest --test-dir "$1" -L "$2" --output-on-failure \
    --timeout 1200 --output-junit "$dir/ctest.xml" "${@:4}"
  local rc=$?
  python3 scripts/test_report.py stage "$REPORTS" "$3" || failed_stage+=" $3"
  [[ $rc -eq 0 || $failed_stage == *" $3"* ]] || failed_stage+=" $3"
}

stage "bootstrap: Debian packages"
bash scripts/bootstrap.sh || exit 1

stage "build (RelWithDebInfo, warnings as errors: $WERROR)"
cmake -S . -B build -G Ninja -DBOOSTER_WERROR=$WERROR >/dev/null || exit 1
cmake --build build -j"$JOBS" || exit 1

stage "unit tests"
run_ctest build unit unit -j"$JOBS"

# Tests that need the network (label "network"): the Helm chart check builds Helm from the
# Go module proxy the first time on a machine. The cluster's tests carry "e2e".
stage "tests that need the network"
run_ctest build network network -j1

stage "build with ASan + UBSan"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DBOOSTER_SANITIZE=ON \
  -DBOOSTER_BUILD_BENCH=OFF -DBOOSTER_WERROR=$WERROR >/dev/null || exit 1
cmake --build build-asan -j"$JOBS" || exit 1

stage "unit tests under ASan + UBSan"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
  run_ctest build-asan unit sanitizer -j"$JOBS"

# Fuzzing (docs/testing.md): clang, every library instrumented; only the fuzz targets
# and what they link are built. Each runs BOOSTER_FUZZ_SECONDS (15) from its seed corpus.
stage "build the fuzz targets (clang, libFuzzer + ASan + UBSan)"
if CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DBOOSTER_FUZZ=ON \
     -DBOOSTER_COMPONENTS="common;proto;runtime;operator;sidecar" -DBOOSTER_BUILD_BENCH=OFF \
     -DBOOSTER_FUZZ_SECONDS="${BOOSTER_FUZZ_SECONDS:-15}" >/dev/null &&
   cmake --build build-fuzz -j"$JOBS" --target booster_fuzzers; then
  stage "fuzz: each target for ${BOOSTER_FUZZ_SECONDS:-15} s"
  BOOSTER_FUZZ_ARTIFACTS=$ROOT/build-fuzz/fuzz-artifacts run_ctest build-fuzz fuzz fuzz -j1
else
  failed_stage+=" fuzz-build"
fi

# ThreadSanitizer on the unit tests of the concurrent parts: the work queue, controller,
# informer and leader election; the feedback window store and the agents' gRPC stream server
# (its threads are Debian's uninstrumented gRPC's: cmake/tsan/grpc_tsan.cc gives TSan the
# completion-queue edges); the agent's sampler and its HTTP server (/metrics, civetweb); the
# notifications' dispatcher and the Prometheus metrics' query thread.
# docs/testing.md, ThreadSanitizer.
TSAN_TESTS=(kube_queue_test kube_controller_test kube_informer_test kube_leader_election_test
  feedback_window_store_test feedback_server_test agent_sampler_test agent_metrics_test
  notify_test prometheus_source_test)
stage "build the concurrent parts with ThreadSanitizer"
if cmake -S . -B build-tsan -G Ninja -DBOOSTER_TSAN=ON \
     -DBOOSTER_COMPONENTS="common;proto;runtime;operator;sidecar" -DBOOSTER_BUILD_BENCH=OFF \
     -DBOOSTER_WERROR=$WERROR >/dev/null &&
   cmake --build build-tsan -j"$JOBS" --target "${TSAN_TESTS[@]}"; then
  stage "unit tests of the concurrent parts under ThreadSanitizer"
  tsan_regex="^($(IFS='|'; echo "${TSAN_TESTS[*]}"))\$"
  run_ctest build-tsan unit tsan -j1 -R "$tsan_regex"
else
  failed_stage+=" tsan-build"
fi

if [[ $RUN_E2E -eq 1 && -x tests/e2e/cluster/build ]]; then
  stage "end-to-end cluster: build or reuse cached Kubernetes binaries"
  if tests/e2e/cluster/build; then
    stage "end-to-end tests on the real cluster"
    run_ctest build e2e e2e -j1
  else
    failed_stage+=" e2e-build"
  fi
fi

stage "summary"
# Counts are test binaries (ctest's tests); skips are the GoogleTest cases inside them.
python3 scripts/test_report.py summary "$REPORTS" || true
if [[ -n $failed_stage ]]; then
  echo "failed stages:$failed_stage" >&2
  exit 1
fi
