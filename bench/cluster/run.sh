#!/usr/bin/env bash
# bench/cluster: the headline benchmark (docs/benchmarks.md, "Cluster (headline)"): real
# services in CPU-limited pods on the e2e cluster, loaded from the host through their
# Service, measured as deployed (baseline) and after a real booster-operator has rolled a
# BoosterProfile out as a canary and promoted it, in one run, as ratios promoted/baseline.
#
# Case "users", Go JSON API: bench/cluster/usersapi (static Go, GET /api/v1/users?n=USERS_N),
#   REPLICAS pods with a CPU limit of CPU_LIMIT, loaded by bench/cluster/load (closed loop, CONNS
#   kept-alive connections, WARMUP seconds unrecorded then SECONDS_MEASURED measured).
#   Profile: go.gomaxprocs auto.
# Case "work": the same with the e2e cluster's own HTTP server
#   (booster.local/httpserver:e2e, static Go) and GET /work?ms=WORK_MS, a handler that
#   only spins on the CPU: no allocation, so no garbage collector.
# Case "burst", short-connection burst: bench/cluster/burst/backlog_server.c (dynamically linked
#   C, listen backlog BACKLOG, WORK_US of CPU per request) in REPLICAS pods, loaded by
#   `load burst` (BURST new connections at once every PERIOD for BURST_SECONDS).
#   Profile: sysctl net.core.somaxconn + preload.listenBacklog (SOMAXCONN).
#
# Each round: the Deployment as deployed (no profile) is measured; the profile is applied
# and the operator runs it (steps [50, 100], STEP each, mode Time) to Promoted; once only
# the promoted pods are left they are measured the same way; the profile is deleted (the
# operator restores the original template) and the next round starts from the baseline
# again. Per window: the client's p50/p99/requests/s/errors, and from each pod's app
# container cgroup (read on the host) throttled time, throttled periods and CPU time, the
# GOMAXPROCS the app runs with (environment; for usersapi also the runtime's own); for
# the burst case the pods' TcpExt ListenOverflows (their network namespaces) and backlogs.
#
#   bench/cluster/run.sh [BUILD_DIR]                  # the e2e cluster up; about 20 minutes
#   ROUNDS=5 BURST_ROUNDS=3 SECONDS_MEASURED=20 CONNS=32 USERS_N=200 CASES="users work burst" \
#     bench/cluster/run.sh build
#
# Needs from BUILD_DIR (default build): operator/booster-operator, sidecar/booster-agent,
# runtime/libbooster.so (cmake --build build --target booster-operator booster-agent
# booster_preload); gcc (scripts/bootstrap.sh) and go (as tests/e2e/cluster/build);
# conntrack, nsenter and ss on the host (scripts/bootstrap.sh). Images are built here and imported
# into the cluster's containerd (tests/e2e/cluster/image) under their own tags.
# Writes $OUT (JSON, default bench/results/cluster-<time>.json) and prints markdown tables;
# logs in $WORK (default /tmp/cluster-bench). Everything runs in a fresh namespace
# booster-bench-<time>, deleted at the end, with an operator watching only it.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$ROOT/bench/cluster
BUILD=$(cd "${1:-$ROOT/build}" && pwd)
CASES=${CASES:-"users work burst"}
WORK_MS=${WORK_MS:-1}
ROUNDS=${ROUNDS:-5}
BURST_ROUNDS=${BURST_ROUNDS:-3}
REPLICAS=${REPLICAS:-2}
CPU_LIMIT=${CPU_LIMIT:-500m}
CPU_REQUEST=${CPU_REQUEST:-100m}
USERS_N=${USERS_N:-200}
CONNS=${CONNS:-32}
WARMUP=${WARMUP:-3}
SECONDS_MEASURED=${SECONDS_MEASURED:-20}
# The Service spreads connections at random; BALANCE=REPLICAS has the load generator keep
# an even share of its connections on every pod (still through the Service), BALANCE=0
# takes the split as it comes.
BALANCE=${BALANCE:-$REPLICAS}
BACKLOG=${BACKLOG:-8}
WORK_US=${WORK_US:-300}
BURST=${BURST:-100}
PERIOD=${PERIOD:-250ms}
BURST_SECONDS=${BURST_SECONDS:-15}
SOMAXCONN=${SOMAXCONN:-4096}
STEP=${STEP:-10s}
RUN_ID=$(date -u +%Y%m%dT%H%M%SZ)
NS=${NS:-booster-bench-$(date +%s)}
WORK=${WORK:-/tmp/cluster-bench}
OUT=${OUT:-$ROOT/bench/results/cluster-$RUN_ID.json}
# shellcheck source=bench/cluster/lib.sh
source "$HERE/lib.sh"
preflight
mkdir -p "$(dirname "$OUT")"

# ---- binaries and images (tags from the inputs' hash: rebuilt only when they change)
log "building the workloads and the load generator"
build_usersapi_and_load
gcc -O2 -Wall -o "$WORK/backlog_server" "$HERE/burst/backlog_server.c"
readelf -l "$WORK/backlog_server" | grep -q 'program interpreter' || die "backlog_server is not dynamic"
BACKLOG_IMAGE=booster.local/bench-backlog:$(tag_of "$HERE/burst/backlog_server.c")
ensure_image "$BACKLOG_IMAGE" "$WORK/backlog_server"

trap cleanup EXIT

# ---- the namespace, the two services, and an operator watching only this namespace
log "namespace $NS: usersapi, httpwork and backlog-server, $REPLICAS replicas each, CPU limit $CPU_LIMIT"
cat >"$WORK/apps.yaml" <<YAML
apiVersion: v1
kind: Namespace
metadata: {name: $NS}
---
$(usersapi_yaml "$REPLICAS")
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: httpwork, namespace: $NS}
spec:
  replicas: $( [[ " $CASES " == *" work "* ]] && echo "$REPLICAS" || echo 0 )
  selector: {matchLabels: {app: httpwork}}
  template:
    metadata: {labels: {app: httpwork}}
    spec:
      terminationGracePeriodSeconds: 2
      containers:
      - name: web
        image: booster.local/httpserver:e2e
        imagePullPolicy: Never
        ports: [{containerPort: 8080}]
        readinessProbe: {httpGet: {path: /healthz, port: 8080}, periodSeconds: 1}
        resources:
          requests: {cpu: $CPU_REQUEST, memory: 32Mi}
          limits: {cpu: $CPU_LIMIT, memory: 64Mi}
---
apiVersion: v1
kind: Service
metadata: {name: httpwork, namespace: $NS}
spec:
  selector: {app: httpwork}
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: backlog-server, namespace: $NS}
spec:
  replicas: $REPLICAS
  selector: {matchLabels: {app: backlog-server}}
  template:
    metadata: {labels: {app: backlog-server}}
    spec:
      terminationGracePeriodSeconds: 2
      containers:
      - name: server
        image: $BACKLOG_IMAGE
        imagePullPolicy: Never
        args: ["8080", "$BACKLOG", "$WORK_US"]
        ports: [{containerPort: 8080}]
        readinessProbe: {tcpSocket: {port: 8080}, periodSeconds: 2}
        resources:
          requests: {cpu: $CPU_REQUEST, memory: 16Mi}
          limits: {cpu: $CPU_LIMIT, memory: 64Mi}
---
apiVersion: v1
kind: Service
metadata: {name: backlog-server, namespace: $NS}
spec:
  selector: {app: backlog-server}
  ports: [{port: 80, targetPort: 8080}]
YAML
"$K" apply -f "$WORK/apps.yaml" >/dev/null

start_operator

# ---- helpers
phase_of() { "$K" -n "$NS" get bp "$1" -o jsonpath='{.status.phase}' 2>/dev/null || true; }
# promote APP PROFILE_YAML: apply, follow to Promoted, wait until only promoted pods serve.
promote() {
  local app=$1 yaml=$2 t0=$SECONDS last="" p deadline=$((SECONDS + 600))
  "$K" apply -f "$yaml" >/dev/null
  while :; do
    p=$("$K" -n "$NS" get bp "$app" -o jsonpath='{.status.phase} step={.status.currentStep} weight={.status.canaryWeight}' 2>/dev/null || true)
    [[ $p != "$last" ]] && { log "  $app: $p"; last=$p; }
    case ${p%% *} in
      Promoted) break ;;
      RolledBack|Failed) die "profile $app ended $p; see $WORK/operator.log" ;;
    esac
    ((SECONDS < deadline)) || die "profile $app not Promoted after 600 s"
    sleep 1
  done
  wait_settled "$app" "$REPLICAS"
  log "  $app: Promoted and settled after $((SECONDS - t0)) s"
  echo $((SECONDS - t0))
}
# unpromote APP: delete the profile; the operator restores the original template.
unpromote() {
  "$K" -n "$NS" delete bp "$1" --timeout=180s >/dev/null
  wait_settled "$1" "$REPLICAS"
}
# measure CASE ARM ROUND: counters before, load, counters after -> $WORK/CASE-ARM-ROUND.json
measure() {
  local case=$1 arm=$2 round=$3 app container port=8080 ip
  local path="/api/v1/users?n=$USERS_N" balance=$BALANCE
  case $case in
    users) app=usersapi container=api ;;
    work) app=httpwork container=web path="/work?ms=$WORK_MS" balance=0 ;;  # no X-Served-By
    *) app=backlog-server container=server ;;
  esac
  ip=$("$K" -n "$NS" get svc "$app" -o jsonpath='{.spec.clusterIP}')
  local pre=$WORK/$case-$arm-$round
  # The warm-up is its own run, so that the cgroup counters cover the measured seconds only.
  if [[ $case != burst ]] && ((WARMUP > 0)); then
    "$LOAD" keepalive -url "http://$ip$path" -c "$CONNS" -d "${WARMUP}s" \
      -warmup 0s -balance "$balance" >"$pre.warmup"
  fi
  if [[ $case == burst ]]; then
    # The host's connection-tracking entries of earlier windows (TIME_WAIT, 2 minutes) keep
    # their translation to the pod that served them: a new connection reusing the same
    # source port would follow it to a pod deleted since ("no route to host"). Forget this
    # Service's entries before the window.
    conntrack -D -p tcp --orig-dst "$ip" >/dev/null 2>&1 || true
  fi
  python3 "$HERE/podstats.py" "$NS" "app=$app" "$container" "$port" >"$pre.before"
  local la0 la1
  la0=$(loadavg)
  if [[ $case != burst ]]; then
    "$LOAD" keepalive -url "http://$ip$path" -c "$CONNS" \
      -d "${SECONDS_MEASURED}s" -warmup 0s -balance "$balance" >"$pre.load"
  else
    "$LOAD" burst -addr "$ip:80" -burst "$BURST" -period "$PERIOD" -d "${BURST_SECONDS}s" \
      -timeout 5s >"$pre.load"
  fi
  la1=$(loadavg)
  python3 "$HERE/podstats.py" "$NS" "app=$app" "$container" "$port" >"$pre.after"
  python3 - "$pre" "$case" "$arm" "$round" "$la0" "$la1" <<'PY'
import json, sys
pre, case, arm, rnd, la0, la1 = sys.argv[1:7]
before, after = json.load(open(pre + ".before")), json.load(open(pre + ".after"))
load = json.load(open(pre + ".load"))
pods = {}
for name, a in after.items():
    b = before.get(name)
    if not b:
        continue
    d = {k: a["cpu_stat"][k] - b["cpu_stat"][k] for k in a["cpu_stat"]}
    pods[name] = {
        "arm_label": a["arm"], "env": a.get("env", {}), "listen_backlog": a.get("listen_backlog"),
        "runtime_gomaxprocs": a.get("runtime_gomaxprocs"),
        "nr_periods": d["nr_periods"], "nr_throttled": d["nr_throttled"],
        "throttled_s": d["throttled_time"] / 1e9,
        "cpu_s": (a["cpu_usage_ns"] - b["cpu_usage_ns"]) / 1e9,
        "listen_overflows": (a["listen_overflows"] or 0) - (b["listen_overflows"] or 0),
        "listen_drops": (a["listen_drops"] or 0) - (b["listen_drops"] or 0),
    }
assert len(pods) == len(after) == len(before), "pods changed during the window"
tot = lambda k: sum(p[k] for p in pods.values())
rec = {"case": case, "arm": arm, "round": int(rnd), "load": load, "pods": pods,
       "loadavg_before": la0, "loadavg_after": la1,
       "throttled_s": tot("throttled_s"), "nr_periods": tot("nr_periods"),
       "nr_throttled": tot("nr_throttled"), "cpu_s": tot("cpu_s"),
       "listen_overflows": tot("listen_overflows"), "listen_drops": tot("listen_drops")}
json.dump(rec, open(pre + ".json", "w"), indent=1)
l = load
print(f"  {case} {arm} round {rnd}: {l['rps']:.0f} req/s, p50 {l['p50_ms']:.2f} ms, "
      f"p99 {l['p99_ms']:.2f} ms, errors {l['errors']}, throttled {rec['throttled_s']:.2f} s "
      f"({rec['nr_throttled']}/{rec['nr_periods']} periods), CPU {rec['cpu_s']:.2f} s, "
      f"overflows {rec['listen_overflows']}, env {[p['env'].get('GOMAXPROCS', p['env'].get('BOOSTER_LISTEN_BACKLOG', '-')) for p in pods.values()]}, "
      f"runtime GOMAXPROCS {[p['runtime_gomaxprocs'] for p in pods.values()]}, "
      f"backlog {[p['listen_backlog'] for p in pods.values()]}, load average {la0} -> {la1}",
      file=sys.stderr)
PY
}

profile_yaml() {  # profile_yaml CASE > file
  local app tuning
  if [[ $1 == users || $1 == work ]]; then
    app=usersapi
    [[ $1 == work ]] && app=httpwork
    tuning="runtime: {go: {gomaxprocs: auto}}"
  else
    app=backlog-server
    tuning="sysctls: {net.core.somaxconn: \"$SOMAXCONN\"}
    runtime: {preload: {listenBacklog: $SOMAXCONN}}"
  fi
  cat <<YAML
apiVersion: booster.dev/v1alpha1
kind: BoosterProfile
metadata: {name: $app, namespace: $NS}
spec:
  targetRef: {kind: Deployment, name: $app}
  tuning:
    $tuning
  rollout:
    steps: [50, 100]
    stepDuration: $STEP
    progressDeadline: 5m
    analysis: {mode: Time, interval: 5s}
YAML
}

T_START=$SECONDS
for case in $CASES; do
  case $case in
    users) app=usersapi rounds=$ROUNDS ;;
    work) app=httpwork rounds=$ROUNDS ;;
    burst) app=backlog-server rounds=$BURST_ROUNDS ;;
    *) die "unknown case $case (users, work, burst)" ;;
  esac
  profile_yaml "$case" >"$WORK/profile-$case.yaml"
  wait_settled "$app" "$REPLICAS"
  for ((r = 1; r <= rounds; r++)); do
    log "$case round $r/$rounds: baseline (as deployed)"
    measure "$case" baseline "$r"
    log "$case round $r/$rounds: BoosterProfile $app -> canary -> Promoted"
    promote "$app" "$WORK/profile-$case.yaml" >"$WORK/$case-promote-$r.seconds"
    measure "$case" promoted "$r"
    log "$case round $r/$rounds: profile deleted, original template restored"
    unpromote "$app"
  done
done
log "measured in $(((SECONDS - T_START) / 60)) min $(((SECONDS - T_START) % 60)) s"

python3 "$HERE/report.py" "$WORK" "$OUT" --meta "$(python3 -c '
import json, sys
print(json.dumps(dict(zip(sys.argv[1::2], sys.argv[2::2]))))' \
  run "$RUN_ID" namespace "$NS" replicas "$REPLICAS" cpu_limit "$CPU_LIMIT" users_n "$USERS_N" \
  conns "$CONNS" balance "$BALANCE" work_ms "$WORK_MS" seconds "$SECONDS_MEASURED" warmup "$WARMUP" backlog "$BACKLOG" \
  work_us "$WORK_US" burst "$BURST" period "$PERIOD" burst_seconds "$BURST_SECONDS" \
  somaxconn "$SOMAXCONN" step "$STEP" nproc "$(nproc)" kernel "$(uname -r)" \
  operator "$OPERATOR")"
log "results: $OUT (per-window files in $WORK)"
