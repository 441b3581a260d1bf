#!/usr/bin/env bash
# bench/operator: booster-operator at scale. P BoosterProfiles over P Deployments of R pods
# each on a kwok node, all applied at once and progressing together, time-based steps.
# Measures, in one run:
#   - time from applying the profiles to all Promoted (and per profile: Promoted time minus
#     creation minus the nominal steps x stepDuration = the delay the operator added);
#   - the operator's reconcile latency (its booster_operator_reconcile_duration_seconds
#     histogram: p50/p90/p99 from the buckets), reconciles, errors, and the work done;
#   - the operator's resident memory (VmRSS sampled every second, and VmHWM) before the
#     profiles (informers synced over P Deployments and their pods) and during the rollout;
#   - that target + canary replicas never exceeded R for any profile (sampled).
#
#   flock /tmp/booster-cluster.lock bench/operator/run.sh [BUILD_DIR]   # e2e cluster up
#   PROFILES=100 REPLICAS=2 STEPS="[10, 50, 100]" STEP=10s WORKERS=4 bench/operator/run.sh build
#
# Prints a JSON summary (also $OUT, default /tmp/operator-bench.json); the operator's log
# and the samples stay in $WORK (default /tmp/operator-bench).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$ROOT/build}
PROFILES=${PROFILES:-100}
REPLICAS=${REPLICAS:-2}
STEPS=${STEPS:-"[10, 50, 100]"}
STEP=${STEP:-10s}
WORKERS=${WORKERS:-4}
TIMEOUT=${TIMEOUT:-1200}
OUT=${OUT:-/tmp/operator-bench.json}
WORK=${WORK:-/tmp/operator-bench}
# Fresh names per run: the previous run's namespace may still be terminating.
RUN_ID=$(date +%s)
NAMESPACE=bench-operator-$RUN_ID
NODE=bench-operator-kwok-$RUN_ID
export KUBECONFIG=${KUBECONFIG:-/var/lib/booster-e2e/admin.kubeconfig}
KUBECTL=$ROOT/tests/e2e/cluster/kubectl
OPERATOR=${BOOSTER_OPERATOR_BIN:-$BUILD/operator/booster-operator}

if ! "$KUBECTL" get --raw /readyz >/dev/null 2>&1; then
  echo "bench/operator: the e2e cluster is not up (tests/e2e/cluster/build && up)" >&2
  exit 1
fi
[[ -x $OPERATOR ]] || { echo "bench/operator: no operator at $OPERATOR" >&2; exit 1; }
rm -rf "$WORK" && mkdir -p "$WORK"

"$ROOT/tests/e2e/cluster/kwok-node" "$NODE" --pods $((PROFILES * REPLICAS * 10 + 1000)) \
  --cpu 100000 --memory 100000Gi >/dev/null
# kwok v0.7 as tests/e2e/cluster/up runs it keeps no node Lease: the node lifecycle
# controller marks the node NotReady 40 s after its last status patch, and with it every
# pod on it (Ready=False), which kwok does not undo. A run longer than that would measure
# canaries that never become ready. Renew the node's Lease every 10 s, as a kubelet does.
heartbeat() {
  while :; do
    "$KUBECTL" apply -f - >/dev/null 2>&1 <<YAML || true
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: $NODE, namespace: kube-node-lease}
spec:
  holderIdentity: $NODE
  leaseDurationSeconds: 40
  renewTime: "$(date -u +%Y-%m-%dT%H:%M:%S.%6NZ)"
YAML
    sleep 10
  done
}
"$KUBECTL" apply -f "$ROOT/crds/boosterprofile.yaml" >/dev/null
"$KUBECTL" wait --for=condition=Established crd/boosterprofiles.booster.dev --timeout=60s \
  >/dev/null
"$KUBECTL" create namespace "$NAMESPACE" >/dev/null

OP_PID=""
SAMPLER_PID=""
HEARTBEAT_PID=""
cleanup() {
  # What the pods and the scheduler looked like at the end, for a run that did not finish.
  "$KUBECTL" -n "$NAMESPACE" get pods -o json >"$WORK/pods.json" 2>/dev/null || true
  "$KUBECTL" -n "$NAMESPACE" get events -o json >"$WORK/events.json" 2>/dev/null || true
  [[ -n $SAMPLER_PID ]] && kill "$SAMPLER_PID" 2>/dev/null || true
  kill "$HEARTBEAT_PID" 2>/dev/null || true
  "$KUBECTL" -n kube-node-lease delete lease "$NODE" --ignore-not-found >/dev/null 2>&1 || true
  [[ -n $OP_PID ]] && kill -KILL "$OP_PID" 2>/dev/null || true
  # No operator left to remove the finalizers: strip them so the namespace can go.
  for bp in $("$KUBECTL" -n "$NAMESPACE" get boosterprofiles -o name 2>/dev/null); do
    "$KUBECTL" -n "$NAMESPACE" patch "$bp" --type=merge -p '{"metadata":{"finalizers":null}}' \
      >/dev/null 2>&1 || true
  done
  "$KUBECTL" delete namespace "$NAMESPACE" --wait=false >/dev/null 2>&1 || true
  "$ROOT/tests/e2e/cluster/kwok-node" --delete "$NODE" >/dev/null 2>&1 || true
}
trap cleanup EXIT
heartbeat &
HEARTBEAT_PID=$!

# P Deployments of R pods pinned to the kwok node.
echo "== $PROFILES Deployments x $REPLICAS pods on $NODE" >&2
for i in $(seq -w 1 "$PROFILES"); do
  cat <<YAML
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: app-$i, namespace: $NAMESPACE}
spec:
  replicas: $REPLICAS
  selector: {matchLabels: {app: app-$i}}
  template:
    metadata: {labels: {app: app-$i}}
    spec:
      nodeSelector: {kubernetes.io/hostname: $NODE}
      tolerations: [{key: kwok.x-k8s.io/node, operator: Exists, effect: NoSchedule}]
      containers:
      - name: web
        image: booster.local/httpserver:e2e
        resources: {limits: {cpu: 500m, memory: 64Mi}}
YAML
done >"$WORK/deployments.yaml"
"$KUBECTL" apply -f "$WORK/deployments.yaml" >/dev/null
"$KUBECTL" -n "$NAMESPACE" wait --for=condition=Available deployment --all --timeout=600s \
  >/dev/null

# The operator, watching only the namespace.
"$OPERATOR" --kubeconfig="$KUBECONFIG" --namespace="$NAMESPACE" --leader-elect=true \
  --leader-election-namespace="$NAMESPACE" --identity=bench-operator \
  --agent-image=booster.local/agent:e2e --metrics-bind-address=127.0.0.1:0 \
  --health-probe-bind-address=127.0.0.1:0 --workers="$WORKERS" --log-format=json \
  >"$WORK/operator.log" 2>&1 &
OP_PID=$!
addr() {  # the bound address the operator logged for endpoint $1
  python3 - "$WORK/operator.log" "$1" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    try:
        j = json.loads(line)
    except ValueError:
        continue
    if j.get("msg") == "serving" and j.get("endpoint") == sys.argv[2]:
        print(j["address"])
PY
}
for _ in $(seq 600); do
  kill -0 "$OP_PID" 2>/dev/null || { cat "$WORK/operator.log" >&2; exit 1; }
  METRICS=$(addr metrics) HEALTH=$(addr health)
  [[ -n $METRICS && -n $HEALTH ]] &&
    [[ $(curl -s -o /dev/null -w '%{http_code}' "http://$HEALTH/readyz") == 200 ]] && break
  sleep 0.1
done
[[ -n ${METRICS:-} ]] || { echo "operator never became ready" >&2; exit 1; }
echo "== operator pid $OP_PID, metrics on $METRICS" >&2

# Resident memory every second, and replicas of target + canary per profile every 2 s.
(
  while kill -0 "$OP_PID" 2>/dev/null; do
    printf '%s %s\n' "$(date +%s.%N)" "$(awk '/^VmRSS/ {print $2}' "/proc/$OP_PID/status")"
    sleep 1
  done
) >"$WORK/rss.txt" &
SAMPLER_PID=$!
RSS_BEFORE=$(awk '/^VmRSS/ {print $2}' "/proc/$OP_PID/status")

for i in $(seq -w 1 "$PROFILES"); do
  cat <<YAML
---
apiVersion: booster.dev/v1alpha1
kind: BoosterProfile
metadata: {name: app-$i, namespace: $NAMESPACE}
spec:
  targetRef: {kind: Deployment, name: app-$i}
  tuning:
    sysctls: {net.core.somaxconn: "4096"}
    runtime: {go: {gomaxprocs: auto, gomemlimit: auto}, preload: {listenBacklog: 4096}}
  rollout: {steps: $STEPS, stepDuration: $STEP, progressDeadline: 10m, analysis: {mode: Time, interval: 1s}}
YAML
done >"$WORK/profiles.yaml"
echo "== applying $PROFILES profiles" >&2
T0=$(date +%s.%N)
"$KUBECTL" apply -f "$WORK/profiles.yaml" >/dev/null

# Poll until every profile is Promoted (or one is RolledBack/Failed, or the timeout).
: >"$WORK/replicas.jsonl"
: >"$WORK/phases.txt"
DONE=""
while :; do
  now=$(date +%s.%N)
  "$KUBECTL" -n "$NAMESPACE" get deployments -o json >"$WORK/deps.json"
  "$KUBECTL" -n "$NAMESPACE" get boosterprofiles -o json >"$WORK/bps.json"
  summary=$(python3 - "$WORK/deps.json" "$WORK/bps.json" "$now" "$WORK/replicas.jsonl" <<'PY'
import collections, json, sys
deps = {d["metadata"]["name"]: d["spec"].get("replicas", 0)
        for d in json.load(open(sys.argv[1]))["items"]}
bps = json.load(open(sys.argv[2]))["items"]
phases = collections.Counter(b.get("status", {}).get("phase", "None") for b in bps)
worst = 0
for b in bps:
    n = b["metadata"]["name"]
    worst = max(worst, deps.get(n, 0) + deps.get(n + "-booster", 0))
with open(sys.argv[4], "a") as f:
    f.write(json.dumps({"t": float(sys.argv[3]), "max_total": worst, "phases": phases}) + "\n")
print(" ".join(f"{k}={v}" for k, v in sorted(phases.items())))
PY
)
  elapsed=$(python3 -c "print(f'{$now - $T0:.1f}')")
  echo "$elapsed $summary" | tee -a "$WORK/phases.txt" >&2
  if [[ $summary == "Promoted=$PROFILES" ]]; then DONE=$(date +%s.%N); break; fi
  [[ $summary == *RolledBack* || $summary == *Failed* ]] && { echo "a profile did not promote" >&2; break; }
  python3 -c "import sys; sys.exit(0 if $now - $T0 < $TIMEOUT else 1)" || break
  sleep 2
done
curl -s "http://$METRICS/metrics" >"$WORK/metrics.txt"
HWM=$(awk '/^VmHWM/ {print $2}' "/proc/$OP_PID/status")
kill -TERM "$OP_PID"
STOP_T0=$(date +%s.%N)
OP_EXIT=0
wait "$OP_PID" || OP_EXIT=$?
STOP_S=$(python3 -c "print(f'{$(date +%s.%N) - $STOP_T0:.2f}')")
OP_PID=""

python3 - "$WORK" "$T0" "${DONE:-0}" "$RSS_BEFORE" "$HWM" "$OP_EXIT" "$STOP_S" "$PROFILES" \
  "$REPLICAS" "$STEPS" "$STEP" "$WORKERS" <<'PY' | tee "$OUT"
import collections, json, re, sys
from datetime import datetime
work, t0, done, rss0, hwm, exit_code, stop_s = sys.argv[1:8]
profiles, replicas, steps, step, workers = sys.argv[8:13]
t0, done = float(t0), float(done)

def secs(d):
    m = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+(?:\.\d+)?)s)?", d)
    return int(m[1] or 0) * 3600 + int(m[2] or 0) * 60 + float(m[3] or 0)

# Reconcile latency from the histogram (all label sets summed).
buckets, count, total, reconciles, errors = {}, 0.0, 0.0, 0.0, 0.0
for line in open(f"{work}/metrics.txt"):
    if line.startswith("#"):
        continue
    m = re.match(r'(\w+)(\{[^}]*\})? ([0-9.eE+-]+|\+Inf|NaN)$', line.strip())
    if not m:
        continue
    name, labels, value = m[1], m[2] or "", float(m[3])
    if name == "booster_operator_reconcile_duration_seconds_bucket":
        le = re.search(r'le="([^"]+)"', labels)[1]
        buckets[float(le)] = buckets.get(float(le), 0) + value
    elif name == "booster_operator_reconcile_duration_seconds_count":
        count += value
    elif name == "booster_operator_reconcile_duration_seconds_sum":
        total += value
    elif name == "booster_operator_reconcile_total":
        reconciles += value
    elif name == "booster_operator_reconcile_errors_total":
        errors += value

def quantile(q):
    if not buckets or count == 0:
        return None
    for le in sorted(buckets):
        if buckets[le] >= q * count:
            return le  # upper bound of the bucket holding the quantile
    return float("inf")

bps = json.load(open(f"{work}/bps.json"))["items"]
nominal = len(json.loads(steps)) * secs(step)
lags = []
def ts(s):
    return datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()
for b in bps:
    st = b.get("status", {})
    lt = st.get("lastTransition", {})
    if st.get("phase") == "Promoted" and lt.get("time"):
        lags.append(ts(lt["time"]) - ts(b["metadata"]["creationTimestamp"]) - nominal)
lags.sort()
def pct(xs, q):
    return round(xs[min(len(xs) - 1, int(q * len(xs)))], 1) if xs else None
rss = [int(l.split()[1]) for l in open(f"{work}/rss.txt") if len(l.split()) == 2]
max_total = max((json.loads(l)["max_total"] for l in open(f"{work}/replicas.jsonl")), default=0)
print(json.dumps({
    "date": datetime.utcnow().strftime("%Y-%m-%d"),
    "profiles": int(profiles), "replicas_per_deployment": int(replicas), "steps": steps,
    "step_duration": step, "workers": int(workers),
    "all_promoted_s": round(done - t0, 1) if done else None,
    "nominal_s": nominal,
    "promoted": sum(1 for b in bps if b.get("status", {}).get("phase") == "Promoted"),
    "added_delay_s": {"p50": pct(lags, .5), "p90": pct(lags, .9), "max": lags[-1] if lags else None},
    "reconciles": reconciles, "reconcile_errors": errors,
    "reconcile_latency_s": {"mean": round(total / count, 4) if count else None,
                            "p50_le": quantile(.5), "p90_le": quantile(.9),
                            "p99_le": quantile(.99)},
    "rss_mib": {"before_profiles": round(int(rss0) / 1024, 1),
                "max_sampled": round(max(rss) / 1024, 1) if rss else None,
                "vm_hwm": round(int(hwm) / 1024, 1)},
    "max_target_plus_canary": max_total,
    "sigterm_exit": int(exit_code), "sigterm_seconds": float(stop_s),
    "not_promoted": dict(collections.Counter(
        f'{b.get("status", {}).get("phase")} step {b.get("status", {}).get("currentStep")}'
        for b in bps if b.get("status", {}).get("phase") != "Promoted")),
}, indent=1))
PY
