#!/usr/bin/env bash
# bench/judge sim: the judge's Monte Carlo tables over synthetic rollouts (pod offsets, AR(1)
# windows, shared shocks, churn, onsets), with more rollouts per row than the test command's
# judge_monte_carlo_test (docs/analysis.md, "Measured"). Builds judge_sim_bench in BUILD_DIR
# (default build), prints markdown tables; the JSON lines stay in $WORK.
#
#   bench/judge/run_sim.sh [BUILD_DIR]
#   ROLLOUTS=10000 ONSET_ROLLOUTS=2000 HISTOGRAM_ROLLOUTS=1000 LEVELS_ROLLOUTS=500 SEED=1 \
#     bench/judge/run_sim.sh build
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$ROOT/build}
ROLLOUTS=${ROLLOUTS:-10000}
ONSET_ROLLOUTS=${ONSET_ROLLOUTS:-2000}
HISTOGRAM_ROLLOUTS=${HISTOGRAM_ROLLOUTS:-1000}
LEVELS_ROLLOUTS=${LEVELS_ROLLOUTS:-500}
SEED=${SEED:-1}
WORK=${WORK:-/tmp/judge-sim-bench}
JOBS=${JOBS:-2}

if [[ ! -f $BUILD/build.ninja && ! -f $BUILD/Makefile ]]; then
  cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
cmake --build "$BUILD" --target judge_sim_bench -j "$JOBS" >/dev/null
BENCH=$BUILD/bench/judge/judge_sim_bench
mkdir -p "$WORK"
# Two lanes (the A/A rows take as long as the rest together); each mode is seeded alone, so
# the lanes do not change a figure.
"$BENCH" aa --rollouts="$ROLLOUTS" --seed="$SEED" >"$WORK/aa.jsonl" &
AA=$!
"$BENCH" power --rollouts="$ROLLOUTS" --seed="$SEED" >"$WORK/power.jsonl"
"$BENCH" onset --rollouts="$ONSET_ROLLOUTS" --seed="$SEED" >"$WORK/onset.jsonl"
"$BENCH" histogram --rollouts="$HISTOGRAM_ROLLOUTS" --seed="$SEED" >"$WORK/histogram.jsonl"
"$BENCH" levels --rollouts="$LEVELS_ROLLOUTS" --seed="$SEED" >"$WORK/levels.jsonl"
wait "$AA"

python3 - "$WORK" <<'PY'
import json, os, sys
work = sys.argv[1]
load = lambda n: [json.loads(l) for l in open(os.path.join(work, n)) if l.strip()]
pc = lambda x: f"{100 * x:.2f}%"
s = lambda r, k: f"{r[k]:.0f} s" if k in r else "-"
print("### A/A: 3 steps of 2 minutes, 5 s windows, one extension, confidence 0.99, p99 + throughput")
print()
print("| pods differ by (SD) | rho | pods per arm | margin | rollouts | falsely failed | promoted |")
print("|---|---|---|---|---|---|---|")
for r in load("aa.jsonl"):
    print(f"| {100 * r['pod_sd']:.0f}% | {r['rho']} | {r['pods']}{' (churn)' if r['churn'] else ''} | "
          f"{r['margin']:.0f}% | {r['rollouts']} | {pc(r['failed'])} | {pc(r['promoted'])} |")
print()
print("### Power: the canary's p99 worse from the start (margin 10%)")
print()
print("| p99 | pods differ by | pods per arm | rollouts | failed | rolled back | detection p50 / p95 |")
print("|---|---|---|---|---|---|---|")
for r in load("power.jsonl"):
    print(f"| x{r['factor']} | {100 * r['pod_sd']:.0f}% | {r['pods']} | {r['rollouts']} | {pc(r['failed'])} | "
          f"{pc(r['rolled_back'])} | {s(r, 'detect_p50_s')} / {s(r, 'detect_p95_s')} |")
print()
print("### Onsets in one 15-minute step (one pod per arm, margin 10%)")
print()
print("| p99 | onset | rollouts | failed | promoted | within 60 s | within 120 s | detection p50 / p95 / max |")
print("|---|---|---|---|---|---|---|---|")
for r in load("onset.jsonl"):
    if r["factor"] == 1.0:
        print(f"| x1 (A/A) | - | {r['rollouts']} | {pc(r['failed'])} | {pc(r['promoted'])} | - | - | - |")
        continue
    print(f"| x{r['factor']} | {r['onset_min']} min | {r['rollouts']} | {pc(r['failed'])} | "
          f"{pc(r['promoted'])} | {pc(r.get('within_60s', 0))} | {pc(r.get('within_120s', 0))} | "
          f"{s(r, 'detect_p50_s')} / {s(r, 'detect_p95_s')} / {s(r, 'detect_max_s')} |")
print()
print("### p99 from the windows' histograms: 2+2 pods, 400 requests a window")
print()
print("| p99 | margin | pods differ by | judged from | rollouts | failed | rolled back | promoted |")
print("|---|---|---|---|---|---|---|---|")
for r in load("histogram.jsonl"):
    src = "merged histograms" if r["histograms"] else "windows' p99s"
    print(f"| x{r['factor']} | {r['margin']:.0f}% | {100 * r['pod_sd']:.0f}% | {src} | {r['rollouts']} | "
          f"{pc(r['failed'])} | {pc(r['rolled_back'])} | {pc(r['promoted'])} |")
print()
print("### The level test's budget over every look or over the level looks: one 15-minute step, 1+1 pods")
print()
print("| p99 | onset | windows | level test spends over | rollouts | failed | promoted | within 60 s | within 120 s | detection p50 / p95 / max |")
print("|---|---|---|---|---|---|---|---|---|---|")
for r in load("levels.jsonl"):
    win = "400 requests + histogram" if r["requests"] else "values only"
    over = "level looks" if r["level_looks"] else "every look"
    onset = f"{r['onset_min']} min" if r["factor"] != 1.0 else "-"
    print(f"| x{r['factor']} | {onset} | {win} | {over} | {r['rollouts']} | {pc(r['failed'])} | "
          f"{pc(r['promoted'])} | {pc(r.get('within_60s', 0)) if r['factor'] != 1.0 else '-'} | "
          f"{pc(r.get('within_120s', 0)) if r['factor'] != 1.0 else '-'} | "
          f"{s(r, 'detect_p50_s')} / {s(r, 'detect_p95_s')} / {s(r, 'detect_max_s')} |")
PY
