#!/usr/bin/env bash
# bench/informer: operator/kube's Pod informer vs a client-go typed Pod informer (same
# managedFields-dropping transform, same 20 qps / 30 burst client) over N pods on a kwok
# node, in one run on one cluster. For each N: time to sync, resident memory per cached
# pod, and update events handled per second while a driver patches every pod R times.
#
#   bench/informer/run.sh [BUILD_DIR]        # needs the e2e cluster up (tests/e2e/cluster/up)
#   NS="1000 10000" ROUNDS=3 bench/informer/run.sh build
#
# Prints one JSON line per measurement and a summary table; results also go to
# $OUT (default /tmp/informer-bench.jsonl).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$ROOT/build}
SIZES=${NS:-"1000 10000"}
ROUNDS=${ROUNDS:-3}
OUT=${OUT:-/tmp/informer-bench.jsonl}
NAMESPACE=bench-informer
NODE=bench-kwok
export KUBECONFIG=${KUBECONFIG:-/var/lib/booster-e2e/admin.kubeconfig}
KUBECTL=$ROOT/tests/e2e/cluster/kubectl

if ! "$KUBECTL" get --raw /readyz >/dev/null 2>&1; then
  echo "bench/informer: the e2e cluster is not up (run tests/e2e/cluster/build && up)" >&2
  exit 1
fi

cmake --build "$BUILD" --target kube_informer_bench >/dev/null
CPP=$BUILD/bench/informer/kube_informer_bench
GOBIN=$BUILD/bench/informer/informer-bench-go
(cd "$ROOT/bench/informer/go" && go build -o "$GOBIN" .)

max=0
for n in $SIZES; do ((n > max)) && max=$n; done
"$ROOT/tests/e2e/cluster/kwok-node" "$NODE" --pods $((max + 100)) --cpu 10000 --memory 10000Gi >/dev/null
"$KUBECTL" create namespace "$NAMESPACE" --dry-run=client -o yaml | "$KUBECTL" apply -f - >/dev/null
cleanup() {
  "$KUBECTL" delete namespace "$NAMESPACE" --wait=false >/dev/null 2>&1 || true
  "$ROOT/tests/e2e/cluster/kwok-node" --delete "$NODE" >/dev/null 2>&1 || true
}
trap cleanup EXIT

: >"$OUT"
# Runs one watcher ($1: cpp|go) for $2 pods: start it, wait for its sync line, churn, wait.
measure() {
  local impl=$1 pods=$2 log err pid
  log=$(mktemp) err=$(mktemp)
  if [[ $impl == cpp ]]; then
    "$CPP" watch --namespace "$NAMESPACE" --selector app=informer-bench --pods "$pods" \
      --rounds "$ROUNDS" >"$log" 2>"$err" &
  else
    "$GOBIN" -namespace "$NAMESPACE" -selector app=informer-bench -pods "$pods" \
      -rounds "$ROUNDS" >"$log" 2>"$err" &
  fi
  pid=$!
  until grep -q READY "$err"; do
    kill -0 $pid 2>/dev/null || { cat "$err" >&2; return 1; }
    sleep 0.2
  done
  "$CPP" churn --namespace "$NAMESPACE" --selector app=informer-bench --rounds "$ROUNDS" \
    --threads 8 | sed "s/^/{\"n\":$pods,\"for\":\"$impl\",\"x\":/; s/\$/}/" >>"$OUT"
  wait $pid
  sed "s/^{/{\"n\":$pods,/" "$log" | tee -a "$OUT"
  rm -f "$log" "$err"
}

for n in $SIZES; do
  echo "== N=$n: creating pods" >&2
  "$CPP" create --namespace "$NAMESPACE" --pods "$n" --node "$NODE" --threads 8
  # kwok reports the pods Running (it sets no Ready condition on them); wait for that.
  until [[ $("$KUBECTL" -n "$NAMESPACE" get pods -l app=informer-bench \
      --field-selector=status.phase=Running -o name | wc -l) -ge $n ]]; do sleep 2; done
  # Alternate the order so neither side always runs on a warmer API server.
  if ((n % 2000 == 0)); then order="go cpp"; else order="cpp go"; fi
  for impl in $order; do measure "$impl" "$n"; done
done

python3 - "$OUT" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
by = {}
for r in rows:
    if "impl" in r and r["impl"] in ("cpp", "client-go"):
        by.setdefault((r["n"], r["impl"]), {}).update(r if r["phase"] == "synced" else
                                                      {"events_per_s": r["events_per_s"]})
print(f'{"N":>6} {"impl":>10} {"sync s":>8} {"KiB/pod":>8} {"RSS MiB":>8} {"events/s":>9}')
for (n, impl), r in sorted(by.items()):
    print(f'{n:>6} {impl:>10} {r["sync_s"]:>8.2f} {r["rss_per_pod_kb"]:>8.2f} '
          f'{r["rss_kb"]/1024:>8.1f} {r.get("events_per_s", 0):>9.0f}')
for n in sorted({k[0] for k in by}):
    c, g = by.get((n, "cpp")), by.get((n, "client-go"))
    if c and g:
        print(f'N={n}: memory/pod cpp/client-go = {c["rss_per_pod_kb"]/g["rss_per_pod_kb"]:.2f}, '
              f'sync time ratio = {c["sync_s"]/g["sync_s"]:.2f}, '
              f'events/s ratio = {c.get("events_per_s",0)/max(g.get("events_per_s",1),1e-9):.2f}')
PY
