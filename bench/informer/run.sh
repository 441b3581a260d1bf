#!/usr/bin/env bash
# bench/informer: operator/kube's Pod informer vs a client-go typed Pod informer (same
# managedFields-dropping transform, same 20 qps / 30 burst client) over N pods on a kwok
# node, in one run on one cluster. For each N: time to sync, resident memory per cached
# pod, and update events handled per second while a driver patches every pod R times.
# Sync time and memory are measured 1 + SYNCS times per side (extra sync-only runs,
# alternating sides) and the summary shows medians; churn runs once per side.
#
#   bench/informer/run.sh [BUILD_DIR]        # needs the e2e cluster up (tests/e2e/cluster/up)
#   NS="1000 10000" ROUNDS=3 SYNCS=2 bench/informer/run.sh build
#
# Prints one JSON line per measurement and a summary table; results also go to
# $OUT (default /tmp/informer-bench.jsonl).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$(realpath "${1:-$ROOT/build}")
SIZES=${NS:-"1000 10000"}
ROUNDS=${ROUNDS:-3}
SYNCS=${SYNCS:-2}
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
# A previous run's namespace may still be terminating (its pods go first).
"$KUBECTL" wait --for=delete "namespace/$NAMESPACE" --timeout=900s >/dev/null 2>&1 || true
"$KUBECTL" create namespace "$NAMESPACE" --dry-run=client -o yaml | "$KUBECTL" apply -f - >/dev/null
cleanup() {
  "$KUBECTL" delete namespace "$NAMESPACE" --wait=false >/dev/null 2>&1 || true
  "$ROOT/tests/e2e/cluster/kwok-node" --delete "$NODE" >/dev/null 2>&1 || true
}
trap cleanup EXIT

: >"$OUT"
# Runs one watcher ($1: cpp|go) for $2 pods: start it, wait for its sync line, churn $3
# rounds (0: sync only), wait.
measure() {
  local impl=$1 pods=$2 rounds=$3 log err pid
  log=$(mktemp) err=$(mktemp)
  if [[ $impl == cpp ]]; then
    "$CPP" watch --namespace "$NAMESPACE" --selector app=informer-bench --pods "$pods" \
      --rounds "$rounds" >"$log" 2>"$err" &
  else
    "$GOBIN" -namespace "$NAMESPACE" -selector app=informer-bench -pods "$pods" \
      -rounds "$rounds" >"$log" 2>"$err" &
  fi
  pid=$!
  until grep -q READY "$err"; do
    kill -0 $pid 2>/dev/null || { cat "$err" >&2; return 1; }
    sleep 0.2
  done
  ((rounds == 0)) || "$CPP" churn --namespace "$NAMESPACE" --selector app=informer-bench \
    --rounds "$rounds" --threads 8 --tag "$impl-$pods" | sed "s/^/{\"n\":$pods,\"for\":\"$impl\",\"x\":/; s/\$/}/" >>"$OUT"
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
  for impl in $order; do measure "$impl" "$n" "$ROUNDS"; done
  for ((i = 0; i < SYNCS; i++)); do
    for impl in $order; do measure "$impl" "$n" 0; done
  done
done

python3 - "$OUT" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
syncs, churn, driver = {}, {}, {}
for r in rows:
    if "x" in r:  # the churn driver's line: writes per second during that side's churn
        driver[(r["n"], {"go": "client-go"}.get(r["for"], r["for"]))] = r["x"]["writes_per_s"]
        continue
    if r.get("impl") not in ("cpp", "client-go"):
        continue
    k = (r["n"], r["impl"])
    if r["phase"] == "synced":
        syncs.setdefault(k, []).append(r)
    else:
        churn[k] = r["events_per_s"]
med = lambda rs, f: statistics.median(x[f] for x in rs)
# events/s is bounded by what the driver (and the API server) can write: "writes/s" is
# the driver's rate during that side's churn, "kept up" the ratio of the two.
print(f'{"N":>6} {"impl":>10} {"runs":>4} {"sync s":>8} {"KiB/pod":>8} {"RSS MiB":>8} '
      f'{"events/s":>9} {"writes/s":>9} {"kept up":>8}')
for (n, impl), rs in sorted(syncs.items()):
    ev, wr = churn.get((n, impl), 0), driver.get((n, impl), 0)
    print(f'{n:>6} {impl:>10} {len(rs):>4} {med(rs, "sync_s"):>8.2f} {med(rs, "rss_per_pod_kb"):>8.2f} '
          f'{med(rs, "rss_kb")/1024:>8.1f} {ev:>9.0f} {wr:>9.0f} {ev/wr if wr else 0:>8.2f}')
for n in sorted({k[0] for k in syncs}):
    c, g = syncs.get((n, "cpp")), syncs.get((n, "client-go"))
    if c and g:
        ce, ge = churn.get((n, "cpp"), 0), churn.get((n, "client-go"), 0)
        print(f'N={n}: memory/pod cpp/client-go = {med(c, "rss_per_pod_kb")/med(g, "rss_per_pod_kb"):.2f}, '
              f'sync time ratio = {med(c, "sync_s")/med(g, "sync_s"):.2f}, '
              f'events/s ratio = {ce/ge if ge else float("nan"):.2f}')
# The slope between the smallest and largest N: memory per cached pod without any
# fixed cost of the process.
ns = sorted({k[0] for k in syncs})
if len(ns) >= 2:
    lo, hi = ns[0], ns[-1]
    for impl in ("cpp", "client-go"):
        if (lo, impl) in syncs and (hi, impl) in syncs:
            d = med(syncs[(hi, impl)], "rss_kb") - med(syncs[(lo, impl)], "rss_kb")
            print(f'{impl}: marginal RSS per pod from N={lo} to N={hi} = {d/(hi-lo):.2f} KiB')
PY
