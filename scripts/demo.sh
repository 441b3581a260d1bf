#!/usr/bin/env bash
# The README's main job. For now: build everything and run the runtime-library benchmark,
# Python's http.server, a Nagle-stalled exchange and an allocation-heavy program, each
# baseline vs libbooster.so side by side, as ratios. Needs root (network namespaces).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
cmake -S . -B build -G Ninja >/dev/null
cmake --build build -j"${BOOSTER_JOBS:-2}" --target booster_preload booster_bench_pingpong \
  booster_bench_alloc
mkdir -p bench/results
out="bench/results/runtime-$(date -u +%Y%m%dT%H%M%SZ).md"
python3 bench/runtime/run.py --build build --markdown "$out" "$@"
echo
echo "demo: tables written to $out"
