#!/usr/bin/env bash
# The README's main job: the local demo. On this machine it
#   1. installs what it needs and builds the operator, the agent and libbooster.so;
#   2. builds (once, cached) and starts a real single-node Kubernetes cluster
#      (tests/e2e/cluster), unless one is already up;
#   3. deploys a Go service (4 replicas) under light load, builds the operator and agent
#      images and installs Booster with its Helm chart, watching that namespace;
#   4. applies a BoosterProfile and follows the canary 25% -> 50% -> 100% -> Promoted,
#      printing every transition with the replica split, then the events and the tuning
#      the target's template ends up with;
#   5. runs the runtime-library benchmark (baseline vs libbooster.so, as ratios).
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
cmake -S . -B build -G Ninja >/dev/null
cmake --build build -j"${BOOSTER_JOBS:-2}" --target booster-operator booster-agent \
  booster_preload booster_bench_pingpong booster_bench_alloc

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
# Light, steady load through the Service (about 50 requests/s) so both arms have requests.
(while :; do curl -s -o /dev/null --max-time 2 "http://$ip/work" || true; sleep 0.02; done) &
load=$!
trap 'kill $load 2>/dev/null || true' EXIT

stage "Booster: operator image and the Helm chart (watching namespace shop)"
tests/e2e/cluster/image booster.local/operator:demo build/operator/booster-operator
"$HELM" upgrade --install booster charts/booster --namespace booster-system \
  --create-namespace \
  --set operator.image.repository=booster.local/operator --set operator.image.tag=demo \
  --set operator.image.pullPolicy=Never --set agent.image.repository=booster.local/agent \
  --set agent.image.tag=e2e --set agent.image.pullPolicy=Never \
  --set operator.logFormat=text --set operator.watchNamespace=shop --wait --timeout 5m 2>&1 | { grep -v 'symbolic link' || true; }
"$K" -n booster-system get pods -o wide

stage "the profile: kubectl apply -f scripts/demo/profile.yaml"
cat scripts/demo/profile.yaml
"$K" apply -f scripts/demo/profile.yaml
last="" deadline=$((SECONDS + 600)) phase=""
while ((SECONDS < deadline)); do
  line=$("$K" -n shop get bp checkout -o jsonpath='{.status.phase} step={.status.currentStep} weight={.status.canaryWeight}% target={.status.stableReplicas} canary={.status.canaryReplicas} {.status.lastTransition.reason}' 2>/dev/null || true)
  phase=${line%% *}
  if [[ $line != "$last" ]]; then
    printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$line"
    last=$line
  fi
  [[ $phase == Promoted || $phase == RolledBack || $phase == Failed ]] && break
  sleep 1
done
kill $load 2>/dev/null || true

stage "result"
"$K" -n shop get bp checkout
echo
"$K" -n shop get events --field-selector involvedObject.kind=BoosterProfile \
  --sort-by=.lastTimestamp -o custom-columns=TIME:.lastTimestamp,TYPE:.type,REASON:.reason,MESSAGE:.message
echo
echo "the target's template now carries the tuning:"
"$K" -n shop get deploy checkout -o jsonpath='{range .spec.template.spec.containers[?(@.name=="web")].env[*]}  {.name}={.value}{"\n"}{end}'
"$K" -n shop get deploy checkout -o jsonpath='  sysctls: {.spec.template.spec.securityContext.sysctls}{"\n"}'
"$K" -n shop get deploy,rs,pods -L booster.dev/arm

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
echo "demo: $phase in $(((SECONDS - start) / 60)) min $(((SECONDS - start) % 60)) s"
[[ $phase == Promoted ]]
