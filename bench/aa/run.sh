#!/usr/bin/env bash
# bench/aa: consecutive A/A rollouts on the e2e cluster (docs/benchmarks.md, "A/A rollouts
# on the cluster"). The tuning changes nothing — net.core.somaxconn "4096", the kernel's
# own default in a pod's network namespace — and is judged by the operator installed from
# the Helm chart on the agents' windows, with the demo's thresholds (p50 20%, p99 10%,
# throughput 20%, no listen overflows; steps 50, 100 of $STEP, default 60 s, up to
# $EXTENSIONS extensions, default 2), against a fresh baseline, under the demo's load
# (bursts of 24 new connections every 50 ms through the Service). Every rollout should end Promoted: each one rolled back is a false
# rollback. Prints one row per rollout and the evidence of every judged step; the raw
# decisions stay in $WORK (default /tmp/booster-aa).
#
#   scripts/demo.sh --no-bench   # once: the cluster, shop/checkout and Booster (its chart)
#   bench/aa/run.sh              # ROLLOUTS=10; each takes 2-6 minutes
#   STEP=120s bench/aa/run.sh    # longer steps (stepDuration; EXTENSIONS: maxExtensions)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
ROLLOUTS=${ROLLOUTS:-10}
STEP=${STEP:-60s}
EXTENSIONS=${EXTENSIONS:-2}
WORK=${WORK:-/tmp/booster-aa}
export KUBECONFIG=${KUBECONFIG:-/var/lib/booster-e2e/admin.kubeconfig}
K=$ROOT/tests/e2e/cluster/kubectl
log() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

"$K" get --raw /readyz >/dev/null 2>&1 || die "no cluster: run scripts/demo.sh --no-bench first"
"$K" -n booster-system get deploy >/dev/null 2>&1 || die "Booster is not installed: run scripts/demo.sh --no-bench first"
"$K" -n shop get deploy checkout >/dev/null 2>&1 || die "no shop/checkout: run scripts/demo.sh --no-bench first"
rm -rf "$WORK" && mkdir -p "$WORK"

# One profile per Deployment: the demo's (and an earlier run's) go first; deleting one
# gives the Deployment its template back.
"$K" -n shop delete bp --all --timeout=180s >/dev/null
"$K" -n shop rollout status deploy/checkout --timeout=5m >/dev/null
ip=$("$K" -n shop get svc checkout -o jsonpath='{.spec.clusterIP}')
python3 "$ROOT/scripts/demo/load.py" "$ip" &
load=$!
trap 'kill $load 2>/dev/null || true; "$K" -n shop delete bp aa --ignore-not-found --timeout=180s >/dev/null 2>&1 || true' EXIT
sleep 10  # the load reaches every pod before the first window

profile() {
  cat <<YAML
apiVersion: booster.dev/v1alpha1
kind: BoosterProfile
metadata: {name: aa, namespace: shop}
spec:
  targetRef: {kind: Deployment, name: checkout}
  tuning:
    sysctls: {net.core.somaxconn: "4096"}
  rollout:
    steps: [50, 100]
    stepDuration: $STEP
    progressDeadline: 5m
    analysis:
      mode: Metrics
      interval: 5s
      warmup: 10s
      minSamples: 6
      maxExtensions: $EXTENSIONS
      metrics:
        - {name: latencyP50, maxRegressionPercent: 20}
        - {name: latencyP99, maxRegressionPercent: 10}
        - {name: throughput, maxRegressionPercent: 20}
        - {name: cpuThrottling, maxRegressionPercent: 100, required: false}
        - {name: listenOverflows, maxRegressionPercent: 0}
YAML
}

for i in $(seq "$ROLLOUTS"); do
  log "rollout $i of $ROLLOUTS"
  profile | "$K" apply -f - >/dev/null
  t0=$SECONDS
  : >"$WORK/decisions-$i.jsonl"
  last=""
  phase=""
  while ((SECONDS - t0 < 2400)); do
    json=$("$K" -n shop get bp aa -o json 2>/dev/null || true)
    [[ -z $json ]] && { sleep 1; continue; }
    phase=$(python3 -c 'import json,sys; print(json.load(sys.stdin).get("status",{}).get("phase",""))' <<<"$json")
    # Every new decision (a step's verdict, an extension) once.
    decision=$(python3 -c 'import json,sys; d=json.load(sys.stdin).get("status",{}).get("lastDecision"); print(json.dumps(d, sort_keys=True) if d else "")' <<<"$json")
    if [[ -n $decision && $decision != "$last" ]]; then
      echo "$decision" >>"$WORK/decisions-$i.jsonl"
      last=$decision
    fi
    [[ $phase == Promoted || $phase == RolledBack || $phase == Failed ]] && break
    sleep 1
  done
  echo "{\"rollout\": $i, \"phase\": \"$phase\", \"seconds\": $((SECONDS - t0))}" >>"$WORK/rollouts.jsonl"
  log "rollout $i: $phase after $((SECONDS - t0)) s"
  "$K" -n shop delete bp aa --timeout=180s >/dev/null
  "$K" -n shop rollout status deploy/checkout --timeout=5m >/dev/null
done

python3 - "$WORK" <<'EOF'
import json, os, sys
work = sys.argv[1]
rows = [json.loads(l) for l in open(os.path.join(work, "rollouts.jsonl"))]
promoted = sum(1 for r in rows if r["phase"] == "Promoted")
print(f"### A/A rollouts on the cluster: {promoted} of {len(rows)} Promoted")
print()
print("| rollout | outcome | seconds | step | verdict | reason | evidence (p50, p99, throughput: change, at worst; pods; the p99 pods' SD; look) |")
print("|---|---|---|---|---|---|---|")
for r in rows:
    path = os.path.join(work, f"decisions-{r['rollout']}.jsonl")
    ds = [json.loads(l) for l in open(path) if l.strip()] if os.path.exists(path) else []
    if not ds:
        print(f"| {r['rollout']} | {r['phase']} | {r['seconds']} | - | - | - | no decision |")
    for k, d in enumerate(ds):
        e = d.get("evidence", {})
        parts = []
        for m in ("latencyP50", "latencyP99", "throughput"):
            if f"{m}.changePercent" in e:
                parts.append(f"{m} {float(e[m + '.changePercent']):+.1f}% (at worst "
                             f"{e.get(m + '.atWorstPercent', '?')}%)")
        parts.append(e.get("latencyP99.pods", ""))
        if "latencyP99.podSdObservedPercent" in e:
            parts.append(f"p99 pods' SD {float(e['latencyP99.podSdObservedPercent']):.1f}% "
                         f"(allowed {float(e['latencyP99.podSdPercent']):.1f}%)")
        if "latencyP99.passAlpha" in e:
            parts.append(f"pass alpha {e['latencyP99.passAlpha']}")
        parts.append(f"look {e.get('look', '?')}")
        head = f"| {r['rollout']} | {r['phase']} | {r['seconds']}" if k == 0 else "| | |"
        print(f"{head} | {d.get('step', '')} | {d.get('verdict', '')} | {d.get('reason', '')} | "
              f"{'; '.join(p for p in parts if p)} |")
EOF
