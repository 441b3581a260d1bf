#!/usr/bin/env bash
# bench/cluster/search.sh: the search's headline (docs/benchmarks.md, "Search (open loop)"):
# the allocation-heavy Go JSON API (bench/cluster/usersapi, GET /api/v1/users?n=USERS_N) in
# one CPU-limited pod (CPU_LIMIT, default 500m) on the e2e cluster, loaded from the host
# through its Service by bench/cluster/load in open loop (`load rate`: a fixed arrival rate,
# latency from each request's due time, so a stalled server is not hidden by a stalled
# client). In one run:
#
#   1. As deployed: the capacity at the p99 objective (P99_OBJECTIVE_MS): rates from
#      RATE_START up by RATE_FACTOR until a rate's p99 exceeds the objective or more than
#      0.1% of its requests fail, then one bisection between the last rate that held and the
#      first that did not; each rate WARMUP s unrecorded then SECONDS_MEASURED s measured.
#      Then REPEATS windows at 70% of that capacity (R70): CPU per request (the pod's
#      cgroup CPU time, read on the host, over the requests answered) and p99.
#   2. The search: a BoosterProfile with spec.search (objective cpuPerRequest, at least 5%
#      better; guardrail latencyP99 at most P99_GUARD_PERCENT worse; candidates SEARCH_KNOBS)
#      run by a booster-operator installed from the Helm chart (its agents stream their
#      windows to it) while the load runs at R70 (connections opened again every CONN_AGE,
#      so each trial's new pods get their share), until status.search is
#      Done; each trial is a canary of the best so far plus one change against a fresh
#      baseline of the best so far (steps [100], STEP, one extension).
#   3. What the search found (the Deployment runs it): the same capacity sweep and R70
#      windows.
#   4. The profile deleted (the team's template back): GOMAXPROCS 1 against Go's own
#      default (2 here: usersapi's go.mod names go 1.22, so its DefaultGODEBUG has
#      containermaxprocs=0 and Go takes the node's 2 CPUs; Go 1.25+'s own rule would also
#      give 2, the 500m limit rounded up to at least 2) at SWEEP_PCTS
#      percent of the as-deployed capacity.
#
#   bench/cluster/search.sh [BUILD_DIR]          # the e2e cluster up; about 25 minutes
#
# Needs from BUILD_DIR (default build): operator/booster-operator, sidecar/booster-agent,
# runtime/libbooster.so; go (as tests/e2e/cluster/build). Writes $OUT (JSON, default
# bench/results/search-<time>.json), $OUT.svg (the plot) and prints markdown tables; logs
# and per-window files in $WORK (default /tmp/search-bench). Runs in a fresh namespace,
# deleted at the end.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$ROOT/bench/cluster
BUILD=$(cd "${1:-$ROOT/build}" && pwd)
CPU_LIMIT=${CPU_LIMIT:-500m}
CPU_REQUEST=${CPU_REQUEST:-100m}
MEMORY_LIMIT=${MEMORY_LIMIT:-256Mi}
USERS_N=${USERS_N:-200}
CONNS=${CONNS:-64}
WARMUP=${WARMUP:-3}
SECONDS_MEASURED=${SECONDS_MEASURED:-15}
P99_OBJECTIVE_MS=${P99_OBJECTIVE_MS:-50}
RATE_START=${RATE_START:-50}
RATE_FACTOR=${RATE_FACTOR:-1.25}
REPEATS=${REPEATS:-3}
SWEEP_PCTS=${SWEEP_PCTS:-"30 40 50 60 70 80 90"}
STEP=${STEP:-60s}
CONN_AGE=${CONN_AGE:-2s}
P99_GUARD_PERCENT=${P99_GUARD_PERCENT:-25}
SEARCH_KNOBS=${SEARCH_KNOBS:-"
      - {knob: runtime.go.gogc, values: [200, 400, 800]}
      - {knob: runtime.go.gomemlimit, values: [auto]}
      - {knob: runtime.go.gomaxprocs, values: [auto]}"}
SEARCH_TIMEOUT=${SEARCH_TIMEOUT:-2400}
RUN_ID=$(date -u +%Y%m%dT%H%M%SZ)
NS=${NS:-booster-search-$(date +%s)}
WORK=${WORK:-/tmp/search-bench}
OUT=${OUT:-$ROOT/bench/results/search-$RUN_ID.json}
# shellcheck source=bench/cluster/lib.sh
source "$HERE/lib.sh"
preflight
mkdir -p "$(dirname "$OUT")"
POINTS=$WORK/points.jsonl
: >"$POINTS"

log "building the workload and the load generator"
build_usersapi_and_load

trap cleanup EXIT

log "namespace $NS: usersapi, 1 replica, CPU limit $CPU_LIMIT, memory limit $MEMORY_LIMIT"
"$K" apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Namespace
metadata: {name: $NS}
---
$(usersapi_yaml 1)
YAML
start_operator_chart
wait_settled usersapi 1
URL="http://$("$K" -n "$NS" get svc usersapi -o jsonpath='{.spec.clusterIP}')/api/v1/users?n=$USERS_N"

NPOINT=0
# point CONFIG KIND RATE: one open-loop window at RATE; prints "p99_ms error_ratio" and
# appends the window (client figures, the pod's CPU and throttling) to $POINTS.
point() {
  local config=$1 kind=$2 rate=$3 pre
  NPOINT=$((NPOINT + 1))
  pre=$WORK/point-$NPOINT
  "$LOAD" rate -url "$URL" -rate "$rate" -c "$CONNS" -d "${WARMUP}s" -warmup 0s -timeout 2s >/dev/null
  python3 "$HERE/podstats.py" "$NS" app=usersapi api 8080 >"$pre.before"
  "$LOAD" rate -url "$URL" -rate "$rate" -c "$CONNS" -d "${SECONDS_MEASURED}s" -warmup 0s \
    -timeout 2s >"$pre.load"
  python3 "$HERE/podstats.py" "$NS" app=usersapi api 8080 >"$pre.after"
  python3 - "$pre" "$config" "$kind" "$rate" "$POINTS" <<'PY'
import json, sys
pre, config, kind, rate, points = sys.argv[1:6]
before, after = json.load(open(pre + ".before")), json.load(open(pre + ".after"))
load = json.load(open(pre + ".load"))
assert set(before) == set(after) and len(after) == 1, f"pods changed: {sorted(before)} {sorted(after)}"
name = next(iter(after))
a, b = after[name], before[name]
cpu_s = (a["cpu_usage_ns"] - b["cpu_usage_ns"]) / 1e9
due = load.get("due") or (load["requests"] + load["errors"])
rec = {"config": config, "kind": kind, "rate": float(rate), "pod": name,
       "env": {k: v for k, v in a.get("env", {}).items() if k.startswith("GO")},
       "runtime_gomaxprocs": a.get("runtime_gomaxprocs"),
       "rps": load["rps"], "requests": load["requests"], "errors": load["errors"],
       "error_kinds": load.get("error_kinds", {}), "due": due,
       "error_ratio": load["errors"] / due if due else 0.0,
       "p50_ms": load["p50_ms"], "p99_ms": load["p99_ms"], "p999_ms": load["p999_ms"],
       "cpu_s": cpu_s, "cpu_ms_per_request": 1e3 * cpu_s / max(1, load["requests"]),
       "throttled_s": (a["cpu_stat"]["throttled_time"] - b["cpu_stat"]["throttled_time"]) / 1e9,
       "nr_throttled": a["cpu_stat"]["nr_throttled"] - b["cpu_stat"]["nr_throttled"],
       "nr_periods": a["cpu_stat"]["nr_periods"] - b["cpu_stat"]["nr_periods"]}
open(points, "a").write(json.dumps(rec) + "\n")
print(f"{rec['p99_ms']:.3f} {rec['error_ratio']:.6f}")
print(f"  {config} {kind} {float(rate):.0f}/s: {rec['rps']:.0f} answered/s, p50 {rec['p50_ms']:.2f} ms, "
      f"p99 {rec['p99_ms']:.2f} ms, errors {rec['errors']}, CPU {rec['cpu_ms_per_request']:.3f} ms/request, "
      f"throttled {rec['nr_throttled']}/{rec['nr_periods']} periods, env {rec['env']}, "
      f"runtime GOMAXPROCS {rec['runtime_gomaxprocs']}", file=sys.stderr)
PY
}
holds() {  # holds "p99 error_ratio": within the objective
  python3 -c 'import sys; p, e = map(float, sys.argv[1].split()); sys.exit(0 if p <= float(sys.argv[2]) and e <= 0.001 else 1)' \
    "$1" "$P99_OBJECTIVE_MS"
}
# capacity CONFIG: the sweep; prints the highest rate that held (0 if none did).
capacity() {
  local config=$1 rate=$RATE_START ok=0 bad=0 r
  while :; do
    r=$(point "$config" capacity "$rate")
    if holds "$r"; then ok=$rate; else bad=$rate; break; fi
    rate=$(python3 -c "print(round($rate * $RATE_FACTOR))")
    ((rate <= 20000)) || break
  done
  if ((ok > 0 && bad > 0)); then
    rate=$(((ok + bad) / 2))
    r=$(point "$config" capacity "$rate")
    holds "$r" && ok=$rate
  fi
  log "$config: capacity at p99 <= $P99_OBJECTIVE_MS ms: $ok requests/s"
  echo "$ok"
}
at_rate() {  # at_rate CONFIG KIND RATE: REPEATS windows
  local i
  for ((i = 1; i <= REPEATS; i++)); do point "$1" "$2" "$3" >/dev/null; done
}

T0=$SECONDS
log "1. as deployed"
CAP_BASE=$(capacity baseline)
((CAP_BASE > 0)) || die "no rate from $RATE_START/s held p99 <= $P99_OBJECTIVE_MS ms as deployed"
R70=$(python3 -c "print(round(0.7 * $CAP_BASE))")
at_rate baseline r70 "$R70"

log "2. the search, under open-loop load at $R70/s (70% of the capacity as deployed)"
# Connections are opened again every CONN_AGE, so each trial's canary and fresh baseline,
# which come up while the load runs, get their share through the Service.
"$LOAD" rate -url "$URL" -rate "$R70" -c "$CONNS" -d "${SEARCH_TIMEOUT}s" -warmup 0s -timeout 2s \
  -conn-age "$CONN_AGE" \
  >"$WORK/search-load.json" 2>"$WORK/search-load.log" &
LOAD_PID=$!
cat >"$WORK/profile.yaml" <<YAML
apiVersion: booster.dev/v1alpha1
kind: BoosterProfile
metadata: {name: usersapi, namespace: $NS}
spec:
  targetRef: {kind: Deployment, name: usersapi}
  rollout:
    steps: [100]
    stepDuration: $STEP
    progressDeadline: 3m
    analysis:
      interval: 5s
      warmup: 10s
      minSamples: 4
      maxExtensions: 1
      metrics:
        - {name: latencyP99, maxRegressionPercent: $P99_GUARD_PERCENT}
  search:
    objective: cpuPerRequest
    minImprovementPercent: 5
    maxTrials: 8
    knobs:$SEARCH_KNOBS
YAML
T_SEARCH=$SECONDS
"$K" apply -f "$WORK/profile.yaml" >/dev/null
last=""
while :; do
  s=$("$K" -n "$NS" get bp usersapi -o jsonpath='{.status.search.phase} trials={.status.search.trials[*].result}' 2>/dev/null || true)
  [[ $s != "$last" ]] && { log "  search: $s"; last=$s; }
  [[ ${s%% *} == Done ]] && break
  ((SECONDS - T_SEARCH < SEARCH_TIMEOUT)) || die "the search was not Done after $SEARCH_TIMEOUT s"
  sleep 2
done
SEARCH_SECONDS=$((SECONDS - T_SEARCH))
kill "$LOAD_PID" 2>/dev/null || true
wait "$LOAD_PID" 2>/dev/null || true
LOAD_PID=""
"$K" -n "$NS" get bp usersapi -o json >"$WORK/profile-done.json"
"$K" -n "$NS" get events --field-selector involvedObject.kind=BoosterProfile,involvedObject.name=usersapi \
  -o jsonpath='{range .items[*]}{.lastTimestamp} {.reason}: {.message}{"\n"}{end}' >"$WORK/events.txt"
log "  the search took $SEARCH_SECONDS s"

log "3. what the search found"
wait_settled usersapi 1
CAP_FOUND=$(capacity found)
at_rate found r70 "$R70"

log "4. GOMAXPROCS 1 against Go's default, the profile deleted"
"$K" -n "$NS" delete bp usersapi --timeout=180s >/dev/null
wait_settled usersapi 1
for g in default 1; do
  if [[ $g == 1 ]]; then
    "$K" -n "$NS" set env deploy/usersapi GOMAXPROCS=1 >/dev/null
    "$K" -n "$NS" rollout status deploy/usersapi --timeout=180s >/dev/null
    wait_settled usersapi 1
  fi
  for pct in $SWEEP_PCTS; do
    point "gomaxprocs-$g" "sweep-$pct" "$(python3 -c "print(round($pct * $CAP_BASE / 100))")" >/dev/null
  done
done
log "measured in $(((SECONDS - T0) / 60)) min $(((SECONDS - T0) % 60)) s"

python3 "$HERE/searchreport.py" "$WORK" "$OUT" --meta "$(python3 -c '
import json, sys
print(json.dumps(dict(zip(sys.argv[1::2], sys.argv[2::2]))))' \
  run "$RUN_ID" namespace "$NS" cpu_limit "$CPU_LIMIT" memory_limit "$MEMORY_LIMIT" \
  users_n "$USERS_N" conns "$CONNS" seconds "$SECONDS_MEASURED" warmup "$WARMUP" \
  p99_objective_ms "$P99_OBJECTIVE_MS" capacity_baseline "$CAP_BASE" capacity_found "$CAP_FOUND" \
  r70 "$R70" search_seconds "$SEARCH_SECONDS" step "$STEP" p99_guard_percent "$P99_GUARD_PERCENT" \
  conn_age "$CONN_AGE" \
  nproc "$(nproc)" kernel "$(uname -r)" go "$(go env GOVERSION)")"
log "results: $OUT and $OUT.svg (per-window files in $WORK)"
