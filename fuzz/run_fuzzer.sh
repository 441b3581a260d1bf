#!/usr/bin/env bash
# run_fuzzer.sh FUZZER SEED_DIR SECONDS: runs one libFuzzer target for SECONDS, starting
# from the seed corpus in SEED_DIR, which it only reads (every seed is replayed first, so a
# committed crash input fails at once); the inputs it finds go to a temporary directory
# that is removed afterwards. A crash, leak, UB report, timeout (10 s per input) or broken
# invariant exits non-zero and leaves the input in $BOOSTER_FUZZ_ARTIFACTS (default
# ./fuzz-artifacts), to be fixed in the product and added to SEED_DIR.
set -uo pipefail
fuzzer=$1 seeds=$2 seconds=$3
name=$(basename "$fuzzer")
artifacts=${BOOSTER_FUZZ_ARTIFACTS:-$PWD/fuzz-artifacts}/$name
mkdir -p "$artifacts"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="$artifacts/" "$work" "$seeds"
rc=$?
if [[ $rc -ne 0 ]]; then
  echo "$name: failed (exit $rc); input saved in $artifacts; reproduce: $fuzzer $artifacts/<file>" >&2
fi
exit "$rc"
