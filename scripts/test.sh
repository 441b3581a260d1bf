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
SUMMARY=$(mktemp) SKIPS=$(mktemp) SKIP_COUNTS=$(mktemp)
trap 'rm -f "$SUMMARY" "$SKIPS" "$SKIP_COUNTS"' EXIT
failed_stage=""

stage() { printf '\n=== %s (%s)\n' "$1" "$(date -u +%H:%M:%S)"; }

# Skipped GoogleTest cases in the log of the last ctest run of build dir $1, one per line:
# "<Suite.Test>\t<the skip message>". A skip is a pass only for a limit of the machine
# that bootstrap cannot lift (one CPU, no root, no cgroup v1), and the test says so by
# starting its message with "machine:" (GTEST_SKIP() << "machine: needs two CPUs");
# any other skip (a missing tool, a missing install step) fails the stage.
skipped_tests() {
  local log=$1/Testing/Temporary/LastTest.log
  [[ -f $log ]] || return 0
  awk '/: Skipped$/ { getline msg; pending = msg; next }
       /^\[  SKIPPED \] [^ ]+\.[^ ]+ \([0-9]+ ms\)$/ { print $4 "\t" pending; pending = "" }' "$log"
}

run_ctest() {  # run_ctest <build-dir> <label> <name> [more ctest arguments]
  local out
  out=$(mktemp)
  ctest --test-dir "$1" -L "$2" --output-on-failure --timeout 1200 -j1 "${@:4}" 2>&1 | tee "$out"
  local rc=${PIPESTATUS[0]}
  local skips machine_skips=0 other_skips=0 name msg
  skips=$(skipped_tests "$1")
  while IFS=$'\t' read -r name msg; do
    [[ -n $name ]] || continue
    if [[ $msg == machine:* ]]; then
      machine_skips=$((machine_skips + 1))
      echo "skipped ($3): $name: $msg" >>"$SKIPS"
    else
      other_skips=$((other_skips + 1))
      echo "SKIPPED, NOT ALLOWED ($3): $name: $msg" >>"$SKIPS"
    fi
  done <<<"$skips"
  echo "$3 $machine_skips $other_skips" >>"$SKIP_COUNTS"
  # "100% tests passed, 0 tests failed out of 12"
  local line
  line=$(grep -E 'tests passed, [0-9]+ tests failed out of [0-9]+' "$out" | tail -1)
  if [[ -n $line ]]; then
    local failed total
    failed=$(sed -E 's/.* ([0-9]+) tests failed out of ([0-9]+).*/\1/' <<<"$line")
    total=$(sed -E 's/.* out of ([0-9]+).*/\1/' <<<"$line")
    echo "$3 $((total - failed)) $failed" >>"$SUMMARY"
  elif [[ $rc -ne 0 ]]; then
    echo "$3 0 1" >>"$SUMMARY"
  fi
  rm -f "$out"
  [[ $rc -eq 0 ]] || failed_stage+=" $3"
  [[ $other_skips -eq 0 ]] || failed_stage+=" $3-skips"
}

stage "bootstrap: Debian packages"
bash scripts/bootstrap.sh || exit 1

stage "build (RelWithDebInfo, warnings as errors: $WERROR)"
cmake -S . -B build -G Ninja -DBOOSTER_WERROR=$WERROR >/dev/null || exit 1
cmake --build build -j"$JOBS" || exit 1

stage "unit tests"
run_ctest build unit unit

stage "build with ASan + UBSan"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DBOOSTER_SANITIZE=ON \
  -DBOOSTER_BUILD_BENCH=OFF -DBOOSTER_WERROR=$WERROR >/dev/null || exit 1
cmake --build build-asan -j"$JOBS" || exit 1

stage "unit tests under ASan + UBSan"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
  run_ctest build-asan unit sanitizer

# Fuzzing (docs/testing.md): clang, every library instrumented; only the fuzz targets
# and what they link are built. Each runs BOOSTER_FUZZ_SECONDS (15) from its seed corpus.
stage "build the fuzz targets (clang, libFuzzer + ASan + UBSan)"
if CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DBOOSTER_FUZZ=ON \
     -DBOOSTER_COMPONENTS="common;proto;runtime;operator;sidecar" -DBOOSTER_BUILD_BENCH=OFF \
     -DBOOSTER_FUZZ_SECONDS="${BOOSTER_FUZZ_SECONDS:-15}" >/dev/null &&
   cmake --build build-fuzz -j"$JOBS" --target booster_fuzzers; then
  stage "fuzz: each target for ${BOOSTER_FUZZ_SECONDS:-15} s"
  BOOSTER_FUZZ_ARTIFACTS=$ROOT/build-fuzz/fuzz-artifacts run_ctest build-fuzz fuzz fuzz
else
  echo "fuzz 0 1" >>"$SUMMARY"
  failed_stage+=" fuzz-build"
fi

# ThreadSanitizer on the unit tests of the concurrent parts: the work queue, controller,
# informer and leader election; the feedback window store and the agents' gRPC stream server
# (its threads are Debian's uninstrumented gRPC's: cmake/tsan/grpc_tsan.cc gives TSan the
# completion-queue edges); the agent's sampler and its HTTP server (/metrics, civetweb).
# docs/testing.md, ThreadSanitizer.
TSAN_TESTS=(kube_queue_test kube_controller_test kube_informer_test kube_leader_election_test
  feedback_window_store_test feedback_server_test agent_sampler_test agent_metrics_test)
stage "build the concurrent parts with ThreadSanitizer"
if cmake -S . -B build-tsan -G Ninja -DBOOSTER_TSAN=ON \
     -DBOOSTER_COMPONENTS="common;proto;runtime;operator;sidecar" -DBOOSTER_BUILD_BENCH=OFF \
     -DBOOSTER_WERROR=$WERROR >/dev/null &&
   cmake --build build-tsan -j"$JOBS" --target "${TSAN_TESTS[@]}"; then
  stage "unit tests of the concurrent parts under ThreadSanitizer"
  tsan_regex="^($(IFS='|'; echo "${TSAN_TESTS[*]}"))\$"
  run_ctest build-tsan unit tsan -R "$tsan_regex"
else
  echo "tsan 0 1" >>"$SUMMARY"
  failed_stage+=" tsan-build"
fi

if [[ $RUN_E2E -eq 1 && -x tests/e2e/cluster/build ]]; then
  stage "end-to-end cluster: build or reuse cached Kubernetes binaries"
  if tests/e2e/cluster/build; then
    stage "end-to-end tests on the real cluster"
    run_ctest build e2e e2e
  else
    echo "e2e 0 1" >>"$SUMMARY"
    failed_stage+=" e2e-build"
  fi
fi

stage "summary"
# Counts are test binaries (ctest's tests); skips are the GoogleTest cases inside them.
passed=0; failed=0; skipped=0; refused=0
while read -r name p f; do
  read -r m o < <(awk -v n="$name" '$1 == n {print $2, $3}' "$SKIP_COUNTS")
  printf '  %-10s %4d passed, %d failed, %d cases skipped (machine), %d skipped (not allowed)\n' \
    "$name" "$p" "$f" "${m:-0}" "${o:-0}"
  passed=$((passed + p)); failed=$((failed + f))
  skipped=$((skipped + ${m:-0})); refused=$((refused + ${o:-0}))
done <"$SUMMARY"
[[ -s $SKIPS ]] && sed 's/^/  /' "$SKIPS"
echo "booster: $passed passed, $failed failed; $skipped cases skipped for the machine," \
  "$refused skipped without a machine reason"
if [[ -n $failed_stage ]]; then
  echo "failed stages:$failed_stage" >&2
  exit 1
fi
