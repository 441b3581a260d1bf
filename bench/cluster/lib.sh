# bench/cluster/lib.sh: what the cluster benchmarks share (run.sh, search.sh), sourced.
# Expects ROOT, HERE, NS, WORK and BUILD set; sets K, IMAGE, OPERATOR, AGENT, LIB, LOAD.
export KUBECONFIG=${KUBECONFIG:-/var/lib/booster-e2e/admin.kubeconfig}
K=$ROOT/tests/e2e/cluster/kubectl
IMAGE=$ROOT/tests/e2e/cluster/image
OPERATOR=${BOOSTER_OPERATOR_BIN:-$BUILD/operator/booster-operator}
AGENT=${BOOSTER_AGENT_BIN:-$BUILD/sidecar/booster-agent}
LIB=${BOOSTER_PRELOAD_LIB:-$BUILD/runtime/libbooster.so}
LOAD=$WORK/load
CONTAINERD_SOCK=/run/booster-e2e/containerd.sock
log() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# preflight: the cluster up, the product's binaries built, $WORK empty.
preflight() {
  "$K" get --raw /readyz >/dev/null 2>&1 ||
    die "the e2e cluster is not up (tests/e2e/cluster/build && tests/e2e/cluster/up)"
  local f
  for f in "$OPERATOR" "$AGENT" "$LIB"; do
    [[ -f $f ]] || die "no $f (cmake --build $BUILD --target booster-operator booster-agent booster_preload)"
  done
  rm -rf "$WORK" && mkdir -p "$WORK"
}

# Images are tagged by their inputs' hash: rebuilt only when they change.
tag_of() { cat "$@" | sha256sum | cut -c1-12; }
have_image() { ctr -a "$CONTAINERD_SOCK" -n k8s.io images ls -q | grep -qx "$1"; }
ensure_image() {  # ensure_image NAME:TAG BINARY [EXTRA]...
  if have_image "$1"; then log "image $1 present"; else "$IMAGE" "$@" >&2; fi
}

# build_usersapi_and_load: the Go JSON API and the load generator into $WORK, the usersapi
# and agent images into the cluster; sets USERS_IMAGE and AGENT_IMAGE.
build_usersapi_and_load() {
  (cd "$HERE/usersapi" && CGO_ENABLED=0 GOTOOLCHAIN=local go build -trimpath -ldflags "-s -w" -o "$WORK/usersapi" .)
  (cd "$HERE/load" && CGO_ENABLED=0 GOTOOLCHAIN=local go build -trimpath -ldflags "-s -w" -o "$WORK/load" .)
  USERS_IMAGE=booster.local/bench-usersapi:$(tag_of "$HERE/usersapi/main.go" "$HERE/usersapi/go.mod")
  AGENT_IMAGE=booster.local/agent:bench-$(tag_of "$AGENT" "$LIB")
  ensure_image "$USERS_IMAGE" "$WORK/usersapi"
  ensure_image "$AGENT_IMAGE" "$AGENT" "$LIB:/libbooster.so"
}

# start_operator: the CRD installed, an operator (pid OP_PID) watching only $NS.
start_operator() {
  "$K" get crd boosterprofiles.booster.dev >/dev/null 2>&1 ||
    "$K" apply -f "$ROOT/crds/boosterprofile.yaml" >/dev/null
  "$K" wait --for=condition=Established crd/boosterprofiles.booster.dev --timeout=60s >/dev/null
  local health
  health=127.0.0.1:$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  "$OPERATOR" --kubeconfig="$KUBECONFIG" --namespace="$NS" --leader-elect=false \
    --agent-image="$AGENT_IMAGE" --agent-image-pull-policy=Never \
    --metrics-bind-address=127.0.0.1:0 --health-probe-bind-address="$health" \
    --log-format=json >"$WORK/operator.log" 2>&1 &
  OP_PID=$!
  for _ in $(seq 300); do
    kill -0 "$OP_PID" 2>/dev/null || { tail -20 "$WORK/operator.log" >&2; die "the operator exited"; }
    [[ $(curl -s -o /dev/null -w '%{http_code}' "http://$health/readyz") == 200 ]] && break
    sleep 0.2
  done
  log "booster-operator (pid $OP_PID) watching $NS, agent image $AGENT_IMAGE"
}

# start_operator_chart: the operator installed from the Helm chart (release $RELEASE in
# namespace $RELEASE, watching only $NS), as a user runs it: the agents stream their windows
# to its feedback server, which the metrics judge needs. The local cluster has no DNS, so
# the feedback Service gets the fixed address FEEDBACK_IP (default 10.96.0.61).
start_operator_chart() {
  RELEASE=${RELEASE:-booster-bench}
  local feedback_ip=${FEEDBACK_IP:-10.96.0.61}
  OPERATOR_IMAGE=booster.local/operator:bench-$(tag_of "$OPERATOR")
  ensure_image "$OPERATOR_IMAGE" "$OPERATOR"
  "$ROOT/charts/helm" upgrade --install "$RELEASE" "$ROOT/charts/booster" --namespace "$RELEASE" \
    --create-namespace \
    --set operator.image.repository="${OPERATOR_IMAGE%%:*}" --set operator.image.tag="${OPERATOR_IMAGE##*:}" \
    --set operator.image.pullPolicy=Never --set agent.image.repository="${AGENT_IMAGE%%:*}" \
    --set agent.image.tag="${AGENT_IMAGE##*:}" --set agent.image.pullPolicy=Never \
    --set feedback.clusterIP="$feedback_ip" --set feedback.agentAddress="$feedback_ip:9443" \
    --set operator.watchNamespace="$NS" --wait --timeout 5m 2>&1 | grep -v 'symbolic link' >&2 || true
  "$K" -n "$RELEASE" rollout status deploy --timeout=300s >/dev/null ||
    die "the operator of release $RELEASE did not come up"
  log "booster-operator from the chart (release $RELEASE) watching $NS, agent image $AGENT_IMAGE"
}

# stop_operator_and_namespace: the profiles deleted while the operator runs (it restores the
# targets), then the operator (a process, or the chart's release) and the namespace gone.
stop_operator_and_namespace() {
  if [[ -n ${OP_PID:-} ]]; then
    "$K" -n "$NS" delete bp --all --timeout=60s >/dev/null 2>&1 || true
    kill -TERM "$OP_PID" 2>/dev/null || true
    wait "$OP_PID" 2>/dev/null || true
  fi
  if [[ -n ${RELEASE:-} ]]; then
    "$K" -n "$NS" delete bp --all --timeout=120s >/dev/null 2>&1 || true
    "$ROOT/charts/helm" uninstall "$RELEASE" --namespace "$RELEASE" --wait >/dev/null 2>&1 || true
    "$K" delete namespace "$RELEASE" --wait=false >/dev/null 2>&1 || true
  fi
  local bp
  for bp in $("$K" -n "$NS" get bp -o name 2>/dev/null); do
    "$K" -n "$NS" patch "$bp" --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null 2>&1 || true
  done
  "$K" delete namespace "$NS" --wait=false >/dev/null 2>&1 || true
}

# cleanup: the scripts' EXIT trap: the load (LOAD_PID) stopped, then
# stop_operator_and_namespace.
OP_PID=""
LOAD_PID=""
cleanup() {
  [[ -n $LOAD_PID ]] && kill "$LOAD_PID" 2>/dev/null || true
  stop_operator_and_namespace
}

# settled APP N: the Deployment APP rolled out, no canary or fresh baseline Deployment left,
# exactly N pods of the app, all ready, none terminating, and the Service's EndpointSlices
# listing exactly their addresses (otherwise the host still sends some connections to a pod
# that is gone: "no route to host").
settled() {
  "$K" -n "$NS" get deploy,pods,endpointslices -o json 2>/dev/null | python3 -c '
import json, sys
items = json.load(sys.stdin)["items"]
app, n = sys.argv[1], int(sys.argv[2])
deps = [d for d in items if d["kind"] == "Deployment" and
        d["metadata"]["name"] in (app, app + "-booster", app + "-booster-baseline")]
pods = [p for p in items if p["kind"] == "Pod" and p["metadata"].get("labels", {}).get("app") == app]
def done(d):
    s, want = d.get("status", {}), d["spec"].get("replicas", 0)
    return (s.get("observedGeneration") == d["metadata"]["generation"] and
            s.get("replicas", 0) == want == s.get("updatedReplicas", 0) == s.get("readyReplicas", 0))
ready = [p for p in pods if not p["metadata"].get("deletionTimestamp") and
         any(c["type"] == "Ready" and c["status"] == "True" for c in p["status"].get("conditions", []))]
eps = {a for s in items if s["kind"] == "EndpointSlice" and
       s["metadata"].get("labels", {}).get("kubernetes.io/service-name") == app
       for e in s.get("endpoints") or [] if e.get("conditions", {}).get("ready")
       for a in e.get("addresses", [])}
ok = (len(pods) == n and len(ready) == n and
      [d["metadata"]["name"] for d in deps] == [app] and all(done(d) for d in deps) and
      eps == {p["status"].get("podIP") for p in ready})
sys.exit(0 if ok else 1)' "$1" "$2"
}
wait_settled() {  # wait_settled APP N
  local deadline=$((SECONDS + 300))
  until settled "$1" "$2"; do
    ((SECONDS < deadline)) || die "$1 did not settle; see $WORK/operator.log"
    sleep 1
  done
  sleep 5  # the endpoints just changed: give kube-proxy's rules time to follow
}
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }

# usersapi_yaml REPLICAS: the Go JSON API's Deployment and Service in $NS (USERS_IMAGE,
# CPU_REQUEST, CPU_LIMIT, MEMORY_LIMIT (default 256Mi)).
usersapi_yaml() {
  cat <<YAML
apiVersion: apps/v1
kind: Deployment
metadata: {name: usersapi, namespace: $NS}
spec:
  replicas: $1
  selector: {matchLabels: {app: usersapi}}
  template:
    metadata: {labels: {app: usersapi}}
    spec:
      terminationGracePeriodSeconds: 2
      containers:
      - name: api
        image: $USERS_IMAGE
        imagePullPolicy: Never
        ports: [{containerPort: 8080}]
        readinessProbe: {httpGet: {path: /healthz, port: 8080}, periodSeconds: 1}
        resources:
          requests: {cpu: $CPU_REQUEST, memory: 64Mi}
          limits: {cpu: $CPU_LIMIT, memory: ${MEMORY_LIMIT:-256Mi}}
---
apiVersion: v1
kind: Service
metadata: {name: usersapi, namespace: $NS}
spec:
  selector: {app: usersapi}
  ports: [{port: 80, targetPort: 8080}]
YAML
}
