#!/usr/bin/env bash
# The README's main job: the local demo. On this machine it
#   1. installs what it needs and builds the operator, the agent and libbooster.so;
#   2. builds (once, cached) and starts a real single-node Kubernetes cluster
#      (tests/e2e/cluster), unless one is already up;
#   3. deploys a Go service (4 replicas) under bursts of new connections (about 480
#      requests/s through its Service), builds the operator and agent images and installs
#      Booster with its Helm chart, watching that namespace;
#   4. act 1: a good profile (scripts/demo/profile.yaml, mode Metrics) goes 50% -> 100% ->
#      Promoted on the agents' measurements, printing every transition and the judge's
#      evidence for step 1: baseline vs canary per metric (p50, p99, throughput,
#      throttling, listen overflows);
#   5. act 2: a bad profile (scripts/demo/profile-bad.yaml: an accept queue of two under
#      those bursts) is rolled back by the judge, printing its evidence and the Event;
#   6. act 3: under steady allocation-heavy requests instead, a search
#      (scripts/demo/profile-search.yaml) tries a GOMEMLIMIT far too low and GOGC 400, one
#      canary each, keeps what the judge showed better and prints the trial table
#      (kubectl booster explain);
#   7. runs the runtime-library benchmark (baseline vs libbooster.so, as ratios).
# The cluster is left running to explore (kubectl: tests/e2e/cluster/kubectl);
# `tests/e2e/cluster/down` removes it. Needs root.
#
#   scripts/demo.sh [--no-bench] [--down]
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BENCH=1 DOWN=0
for a in "$@"; do
  case $a in
    --no-bench) BENCH=0 ;;
    --down) DOWN=1 ;;
    *) echo "usage: scripts/demo.sh [--no-bench] [--down]" >&2; exit 2 ;;
  esac
done
export KUBECONFIG=/var/lib/booster-e2e/admin.kubeconfig
K=$ROOT/tests/e2e/cluster/kubectl
HELM=$ROOT/charts/helm
start=$SECONDS
stage() { printf '\n[%s] == %s\n' "$(date -u +%H:%M:%S)" "$*"; }

stage "install packages and build"
bash scripts/bootstrap.sh
export CCACHE_DIR=${CCACHE_DIR:-/var/cache/booster/ccache}
# The same cache keys as scripts/test.sh, so a clone reuses what another one compiled.
export CCACHE_BASEDIR=$ROOT CCACHE_NOHASHDIR=1
cmake -S . -B build -G Ninja >/dev/null
cmake --build build -j"${BOOSTER_JOBS:-2}" --target booster-operator booster-agent \
  booster_preload booster_bench_pingpong booster_bench_alloc kubectl-booster

stage "local Kubernetes cluster"
if "$K" get --raw /readyz >/dev/null 2>&1; then
  echo "a cluster is already up; using it"
else
  tests/e2e/cluster/build
  tests/e2e/cluster/up
fi

stage "the service: Deployment shop/checkout, 4 replicas, under load"
# A profile left by an earlier run is deleted first (its operator restores the template).
"$K" delete bp -n shop checkout --ignore-not-found --timeout=120s >/dev/null 2>&1 || true
tests/e2e/rollout/images build
"$K" apply -f scripts/demo/checkout.yaml
"$K" -n shop rollout status deploy/checkout --timeout=5m
ip=$("$K" -n shop get svc checkout -o jsonpath='{.spec.clusterIP}')
# Bursts of 24 new connections every 50 ms through the Service (scripts/demo/load.py).
python3 scripts/demo/load.py "$ip" &
load=$!
trap 'kill $load 2>/dev/null || true' EXIT

stage "Booster: operator image and the Helm chart (watching namespace shop)"
tests/e2e/cluster/image booster.local/operator:demo build/operator/booster-operator
# The local cluster has no DNS: the agents are given the feedback Service's fixed address.
"$HELM" upgrade --install booster charts/booster --namespace booster-system \
  --create-namespace \
  --set operator.image.repository=booster.local/operator --set operator.image.tag=demo \
  --set operator.image.pullPolicy=Never --set agent.image.repository=booster.local/agent \
  --set agent.image.tag=e2e --set agent.image.pullPolicy=Never \
  --set feedback.clusterIP=10.96.0.60 --set feedback.agentAddress=10.96.0.60:9443 \
  --set operator.logFormat=text --set operator.watchNamespace=shop --wait --timeout 5m 2>&1 | { grep -v 'symbolic link' || true; }
"$K" -n booster-system get pods -o wide

# Follows profile shop/checkout until it ends, printing every change of phase, step and
# split, the arms' reports, and the first judged step's evidence (kept in $1).
follow() {
  local keep=$1 last="" line deadline=$((SECONDS + 600))
  phase=""
  : >"$keep"
  while ((SECONDS < deadline)); do
    line=$("$K" -n shop get bp checkout -o jsonpath='{.status.phase} step={.status.currentStep} weight={.status.canaryWeight}% target={.status.stableReplicas} canary={.status.canaryReplicas} fresh-baseline={.status.baselineReplicas} {.status.lastTransition.reason}' 2>/dev/null || true)
    phase=${line%% *}
    if [[ $line != "$last" ]]; then
      printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$line"
      last=$line
    fi
    if [[ ! -s $keep ]]; then
      "$K" -n shop get bp checkout -o json 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin).get("status", {}).get("lastDecision")
if d and d.get("evidence", {}).get("judge") == "metrics":
    print(json.dumps(d))' >"$keep" || true
    fi
    [[ $phase == Promoted || $phase == RolledBack || $phase == Failed ]] && break
    sleep 1
  done
}

stage "act 1, a good profile: kubectl apply -f scripts/demo/profile.yaml"
cat scripts/demo/profile.yaml
"$K" apply -f scripts/demo/profile.yaml
follow /tmp/booster-demo-act1.json
act1=$phase
echo
echo "the judge's evidence (status.lastDecision of the judged step), baseline vs canary:"
if [[ -s /tmp/booster-demo-act1.json ]]; then
  python3 scripts/demo/evidence.py </tmp/booster-demo-act1.json
else
  echo "  (no step was judged on metrics)"
fi
echo
"$K" -n shop get bp checkout
echo "the target's template now carries the tuning:"
"$K" -n shop get deploy checkout -o jsonpath='{range .spec.template.spec.containers[?(@.name=="web")].env[*]}  {.name}={.value}{"\n"}{end}'
"$K" -n shop get deploy checkout -o jsonpath='  sysctls: {.spec.template.spec.securityContext.sysctls}{"\n"}'

stage "act 2, a bad profile: kubectl apply -f scripts/demo/profile-bad.yaml"
# Deleting act 1's profile gives the Deployment its original template back first.
"$K" delete bp -n shop checkout --timeout=120s
"$K" -n shop rollout status deploy/checkout --timeout=5m
cat scripts/demo/profile-bad.yaml
"$K" apply -f scripts/demo/profile-bad.yaml
follow /tmp/booster-demo-act2.json
act2=$phase
# Rolled back by the judge itself, not by a deadline or a refused knob.
act2_reason=$("$K" -n shop get bp checkout -o jsonpath='{.status.lastDecision.reason}' || true)
kill $load 2>/dev/null || true
echo
echo "why it was rolled back (status.lastDecision):"
"$K" -n shop get bp checkout -o jsonpath='{.status.lastDecision}' | python3 scripts/demo/evidence.py || true
echo
"$K" -n shop get events --field-selector involvedObject.kind=BoosterProfile \
  --sort-by=.lastTimestamp -o custom-columns=TIME:.lastTimestamp,TYPE:.type,REASON:.reason,MESSAGE:.message | tail -8
echo
echo "every replica back on the baseline, no canary left:"
"$K" -n shop get deploy,pods -L booster.dev/arm

stage "act 3, let Booster find the tuning: kubectl apply -f scripts/demo/profile-search.yaml"
"$K" delete bp -n shop checkout --timeout=120s
"$K" -n shop rollout status deploy/checkout --timeout=5m
# Steady allocation-heavy requests (about 256 KiB of small objects each) instead of bursts:
# what the Go GC's settings change is the CPU each request costs.
python3 scripts/demo/load.py "$ip" --burst 4 --period 0.01 --path "/alloc?kb=256" &
load=$!
cat scripts/demo/profile-search.yaml
"$K" apply -f scripts/demo/profile-search.yaml
last="" search="" deadline=$((SECONDS + 900))
while ((SECONDS < deadline)); do
  line=$("$K" -n shop get bp checkout -o jsonpath='search {.status.search.phase}, trial {.status.search.trials[-1:].number} ({.status.search.trials[-1:].knob} = {.status.search.trials[-1:].value}) {.status.search.trials[-1:].result}; rollout {.status.phase} step={.status.currentStep} {.status.lastTransition.reason}' 2>/dev/null || true)
  search=$("$K" -n shop get bp checkout -o jsonpath='{.status.search.phase}' 2>/dev/null || true)
  if [[ $line != "$last" ]]; then
    printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$line"
    last=$line
  fi
  [[ $search == Done ]] && break
  sleep 2
done
kill $load 2>/dev/null || true
echo
build/operator/plugin/kubectl-booster explain checkout -n shop | sed -n '/^Search:/,/^$/p;/^TRIAL/,/^$/p'
act3_kept=$("$K" -n shop get bp checkout -o jsonpath='{.status.search.trials[?(@.result=="Kept")].number}' || true)
act3="$search, kept trial(s): ${act3_kept:-none}"
echo "the target's template now carries the best found:"
"$K" -n shop get deploy checkout -o jsonpath='{range .spec.template.spec.containers[?(@.name=="web")].env[?(@.name=="GOGC")]}  {.name}={.value}{"\n"}{end}'

if ((BENCH)); then
  stage "runtime library benchmark: baseline vs libbooster.so"
  mkdir -p bench/results
  out="bench/results/runtime-$(date -u +%Y%m%dT%H%M%SZ).md"
  python3 bench/runtime/run.py --build build --markdown "$out"
  echo "tables written to $out"
fi

if ((DOWN)); then
  stage "cluster down"
  tests/e2e/cluster/down
else
  echo
  echo "The cluster is still up: export KUBECONFIG=$KUBECONFIG; $K get bp -A"
  echo "Remove it with tests/e2e/cluster/down."
fi
echo "demo: act 1 $act1, act 2 $act2 ($act2_reason), act 3 $act3 in $(((SECONDS - start) / 60)) min $(((SECONDS - start) % 60)) s"
[[ $act1 == Promoted && $act2 == RolledBack && $act2_reason == AnalysisFailed && $search == Done && -n $act3_kept ]]
