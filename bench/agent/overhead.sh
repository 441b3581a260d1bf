#!/usr/bin/env bash
# booster-agent overhead: the agent's CPU and memory while it samples one busy workload
# every second (per-thread schedstat/status, cgroup cpu.stat, netstat/snmp) and scrapes
# the workload's /metrics each window; and the workload's own throughput with and
# without the agent, measured in the same invocation (ratio).
#
# usage: bench/agent/overhead.sh [AGENT_BINARY] [SECONDS]
#   AGENT_BINARY defaults to build-agent/sidecar/booster-agent, SECONDS to 60.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
agent=${1:-$root/build-agent/sidecar/booster-agent}
secs=${2:-60}
[[ -x $agent ]] || { echo "no agent binary at $agent (build target booster-agent)" >&2; exit 2; }

work=$(mktemp -d /tmp/booster-agent-bench-XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

cp "$root/sidecar/testdata/app_metrics_2.txt" "$work/metrics.txt"
cp "$here/workload.py" "$work/booster_bench_workload.py"

wait_file() { for _ in $(seq 1 250); do [[ -s $1 ]] && return 0; sleep 0.02; done; return 1; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# 1. Baseline: the workload alone.
python3 "$work/booster_bench_workload.py" "$secs" "$work/metrics.txt" "$work/port0" > "$work/base.out" &
pids+=($!)
wait "${pids[-1]}"
base=$(cat "$work/base.out")

# 2. The workload with the agent sampling it.
python3 "$work/booster_bench_workload.py" "$secs" "$work/metrics.txt" "$work/port1" > "$work/with.out" &
wl=$!
pids+=($wl)
wait_file "$work/port1"
port=$(cat "$work/port1")
mkdir -p "$work/state"
"$agent" run --state-dir "$work/state" --target-command booster_bench_workload \
  --app-metrics-url "http://127.0.0.1:$port/metrics" --tick 1 --window 10 \
  --report-file "$work/report.jsonl" --pod bench --metrics-address 127.0.0.1:0 2>/dev/null &
ag=$!
pids+=($ag)
# Measure from the second second on (start-up: topology discovery, first scrape).
sleep 2
t0=$(date +%s.%N)
c0=$(cpu_ticks "$ag")
wait "$wl"
t1=$(date +%s.%N)
c1=$(cpu_ticks "$ag")
rss_kb=$(awk '/^VmRSS/ {print $2}' "/proc/$ag/status")
hwm_kb=$(awk '/^VmHWM/ {print $2}' "/proc/$ag/status")
kill -TERM "$ag"
wait "$ag" || true
with=$(cat "$work/with.out")
hz=$(getconf CLK_TCK)

windows=$(grep -c '"type":"report"' "$work/report.jsonl" || true)
threads=$(grep '"type":"report"' "$work/report.jsonl" | tail -1 | sed -n 's/.*"threads":\([0-9]*\).*/\1/p')
app=$(grep -c '"histograms"' "$work/report.jsonl" || true)

awk -v c0="$c0" -v c1="$c1" -v t0="$t0" -v t1="$t1" -v hz="$hz" -v rss="$rss_kb" \
    -v hwm="$hwm_kb" -v base="$base" -v with="$with" -v w="$windows" -v th="$threads" \
    -v app="$app" -v secs="$secs" 'BEGIN {
  cpu = (c1 - c0) / hz; wall = t1 - t0;
  printf "seconds sampled:            %.1f (1 sample/s, %d windows of 10 s, %d with app quantiles)\n", wall, w, app;
  printf "threads sampled per tick:   %s\n", th;
  printf "agent CPU:                  %.3f s = %.2f%% of one core\n", cpu, 100 * cpu / wall;
  printf "agent RSS:                  %.1f MiB now, %.1f MiB peak (VmHWM)\n", rss / 1024, hwm / 1024;
  printf "workload loop rate:         %s/s alone, %s/s with the agent (ratio %.3f)\n", base, with, with / base;
}'
