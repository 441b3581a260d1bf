#!/usr/bin/env bash
# bench/judge: time from the onset of a 2x p99 regression to the rollback, and the judge's
# CPU per verdict (docs/benchmarks.md, "Judge: detection time and CPU per verdict").
#
# Builds judge_bench in BUILD_DIR (default build; configured here if it is not yet), then:
#   detect: RUNS seeded rollouts per scenario (aa: no regression; start: the canary's p99 2x
#           from its first window; mid: 2x from an onset uniform within step 1's analysis),
#           through the real state machine, JudgeVerdictSource, StoreWindowSource and
#           WindowStore on a simulated clock (pods ready READY_SECONDS after they start),
#           reconciling at the plan's requeue and on watch events and, as a second row,
#           every second;
#   onset:  ONSET_RUNS (default 100) rollouts per row with a 15-minute step 1 and the
#           canary's p99 2x and 1.2x from 0, 2, 5 and 10 minutes into that step's analysis
#           (ONSET=0 skips it);
#   cpu:    wall and CPU time per verdict with 2 metrics and WINDOWS per arm, against the
#           time-based verdict source in the same invocation.
# Prints markdown tables; the per-run JSON lines stay in $WORK (default /tmp/judge-bench).
#
#   bench/judge/run.sh [BUILD_DIR]
#   RUNS=200 ONSET_RUNS=100 SEED=1 READY_SECONDS=3 WINDOWS=24,100,1000 ROUNDS=5 MIN_SECONDS=0.3 \
#     bench/judge/run.sh build
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$ROOT/build}
RUNS=${RUNS:-200}
ONSET=${ONSET:-1}
ONSET_RUNS=${ONSET_RUNS:-100}
SEED=${SEED:-1}
WINDOWS=${WINDOWS:-24,100,1000}
ROUNDS=${ROUNDS:-5}
MIN_SECONDS=${MIN_SECONDS:-0.3}
READY_SECONDS=${READY_SECONDS:-3}
WORK=${WORK:-/tmp/judge-bench}
JOBS=${JOBS:-2}

if [[ ! -f $BUILD/build.ninja && ! -f $BUILD/Makefile ]]; then
  cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
cmake --build "$BUILD" --target judge_bench -j "$JOBS" >/dev/null
BENCH=$BUILD/bench/judge/judge_bench
mkdir -p "$WORK"
rm -f "$WORK"/detect-*.jsonl "$WORK"/onset-*.jsonl "$WORK"/cpu.jsonl

for reconcile in requeue 1s; do
  for scenario in aa start mid; do
    "$BENCH" detect --scenario="$scenario" --runs="$RUNS" --seed="$SEED" \
      --reconcile="$reconcile" --ready-seconds="$READY_SECONDS" \
      >"$WORK/detect-$scenario-$reconcile.jsonl"
  done
done
if [[ $ONSET -eq 1 ]]; then
  for factor in 2 1.2; do
    for minutes in 0 2 5 10; do
      "$BENCH" detect --scenario=at --onset-minutes="$minutes" --step-duration=15m \
        --regression="$factor" --runs="$ONSET_RUNS" --seed="$SEED" \
        --ready-seconds="$READY_SECONDS" >"$WORK/onset-$factor-$minutes.jsonl"
    done
  done
fi
"$BENCH" cpu --windows="$WINDOWS" --rounds="$ROUNDS" --min-seconds="$MIN_SECONDS" \
  >"$WORK/cpu.jsonl"

python3 - "$WORK" <<'EOF'
import collections, json, math, os, sys

work = sys.argv[1]
LABEL = {"requeue": "requeue + watch events", "1s": "every 1 s"}

def pct(xs, q):  # nearest rank
    xs = sorted(xs)
    return xs[max(0, math.ceil(q * len(xs)) - 1)]

def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]

print("### Detection: onset of a 2x canary p99 -> the plan's transition to RollingBack")
print()
print("| reconcile | onset | runs | detected (Fail before the onset) | in step 1 / 2 | "
      "median | p95 | max | within 60 s | onset -> RolledBack, median / max |")
print("|---|---|---|---|---|---|---|---|---|---|")
for reconcile in ("requeue", "1s"):
    for scenario, label in (("start", "2x from the start"), ("mid", "2x from a random time in step 1")):
        rs = load(os.path.join(work, f"detect-{scenario}-{reconcile}.jsonl"))
        # A Fail before the onset (mid) is a false rollback, not a detection.
        failed = [r for r in rs if r["fail_s"] is not None and r["fail_s"] >= 0]
        early = sum(1 for r in rs if r["fail_s"] is not None and r["fail_s"] < 0)
        t = [r["fail_s"] for r in failed]
        rb = [r["rolled_back_s"] for r in failed if r["rolled_back_s"] is not None]
        s1 = sum(1 for r in failed if r["fail_step"] == 1)
        s2 = sum(1 for r in failed if r["fail_step"] == 2)
        within = sum(1 for x in t if x <= 60)
        fmt = lambda x: f"{x:.1f} s"
        print(f"| {LABEL[reconcile]} | {label} | {len(rs)} | {len(failed)} ({early}) | {s1} / {s2} | "
              f"{fmt(pct(t, .5)) if t else '-'} | {fmt(pct(t, .95)) if t else '-'} | "
              f"{fmt(max(t)) if t else '-'} | {within}/{len(rs)} ({100 * within / len(rs):.1f}%) | "
              f"{fmt(pct(rb, .5)) if rb else '-'} / {fmt(max(rb)) if rb else '-'} |")
print()
print("### Mid-step onsets by where in step 1 the onset fell (requeue + watch events)")
print()
print("| onset, s after step 1's analysis started | runs | median | max | within 60 s | "
      "detected in step 2 | runs with an extension |")
print("|---|---|---|---|---|---|---|")
rs = load(os.path.join(work, "detect-mid-requeue.jsonl"))
starts = [r["onset_s"] for r in load(os.path.join(work, "detect-start-requeue.jsonl"))]
analysis_start = min(starts)  # the same in every run: the clock and the pods' readiness are fixed
for lo in (0, 30, 60, 90):
    b = [r for r in rs if lo <= r["onset_s"] - analysis_start < lo + 30 and r["fail_s"] is not None]
    t = [r["fail_s"] for r in b]
    if not t:
        continue
    print(f"| {lo}-{lo + 30} | {len(b)} | {pct(t, .5):.1f} s | {max(t):.1f} s | "
          f"{sum(1 for x in t if x <= 60)}/{len(t)} | {sum(1 for r in b if r['fail_step'] == 2)} | "
          f"{sum(1 for r in b if r['extensions'] > 0)} |")
print()
onsets = sorted(f for f in os.listdir(work) if f.startswith("onset-"))
if onsets:
    print("### Onsets at a fixed time into a 15-minute step 1 (requeue + watch events)")
    print()
    print("| canary p99 from the onset | onset, min into step 1's analysis | runs | "
          "detected (Fail before the onset) | in step 1 | median | p95 | max | within 60 s | "
          "within 120 s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for factor in ("2", "1.2"):
        for minutes in ("0", "2", "5", "10"):
            path = os.path.join(work, f"onset-{factor}-{minutes}.jsonl")
            if not os.path.exists(path):
                continue
            rs = load(path)
            failed = [r for r in rs if r["fail_s"] is not None and r["fail_s"] >= 0]
            early = sum(1 for r in rs if r["fail_s"] is not None and r["fail_s"] < 0)
            t = [r["fail_s"] for r in failed]
            fmt = lambda x: f"{x:.1f} s"
            w60 = sum(1 for x in t if x <= 60)
            w120 = sum(1 for x in t if x <= 120)
            print(f"| {factor}x | {minutes} | {len(rs)} | {len(failed)} ({early}) | "
                  f"{sum(1 for r in failed if r['fail_step'] == 1)} | "
                  f"{fmt(pct(t, .5)) if t else '-'} | {fmt(pct(t, .95)) if t else '-'} | "
                  f"{fmt(max(t)) if t else '-'} | {w60}/{len(rs)} | {w120}/{len(rs)} |")
    print()
print("### A/A (no regression): rollbacks, false Fails apart from steps not shown within the margins")
print()
print("| reconcile | runs | Promoted | rolled back | of those AnalysisFailed (false Fail) | "
      "AnalysisInconclusive (not shown within the margins) | by reason and step | "
      "extensions granted (runs) |")
print("|---|---|---|---|---|---|---|---|")
for reconcile in ("requeue", "1s"):
    rs = load(os.path.join(work, f"detect-aa-{reconcile}.jsonl"))
    promoted = sum(1 for r in rs if r["outcome"] == "Promoted")
    back = [r for r in rs if r["outcome"] != "Promoted"]
    failed = sum(1 for r in back if r["fail_reason"] == "AnalysisFailed")
    why = collections.Counter((r["fail_reason"], r["fail_step"]) for r in back)
    why_text = ", ".join(f"{n} {reason} step {step}" for (reason, step), n in sorted(why.items()))
    ext = sum(1 for r in rs if r["extensions"] > 0)
    print(f"| {LABEL[reconcile]} | {len(rs)} | {promoted} | {len(back)} ({100 * len(back) / len(rs):.1f}%) "
          f"| {failed} ({100 * failed / len(rs):.1f}%) | {len(back) - failed} | {why_text or '-'} | {ext} |")
print()
print("### CPU per verdict (2 metrics, A/A windows; ratio = against TimeVerdictSource's CPU)")
print()
print("| windows per arm | TimeVerdictSource CPU (baseline) | Judge() CPU, step end | wall | ratio | "
      "Judge() CPU, mid-step | ratio | JudgeVerdictSource + store CPU, step end | wall | ratio |")
print("|---|---|---|---|---|---|---|---|---|---|")
for r in load(os.path.join(work, "cpu.jsonl")):
    print(f"| {r['windows_per_arm']} | {r['time_source_cpu_us']:.3f} us | "
          f"{r['judge_cpu_us']:.1f} us | {r['judge_wall_us']:.1f} us | {r['judge_cpu_ratio']:.0f}x | "
          f"{r['judge_mid_step_cpu_us']:.1f} us | {r['judge_mid_step_cpu_ratio']:.0f}x | "
          f"{r['judge_source_cpu_us']:.1f} us | {r['judge_source_wall_us']:.1f} us | "
          f"{r['judge_source_cpu_ratio']:.0f}x |")
EOF
