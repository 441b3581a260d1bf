#!/usr/bin/env bash
# bench/feedback: the operator's feedback server under N agents' streams, and the agent's
# own cost while it streams (docs/benchmarks.md, "Feedback stream").
#
# Part 1, simulated agents. One Deployment of max(NS) pods on a kwok node under a
# BoosterProfile held at step 1 of [50, 100] (a long stepDuration), so half the pods are the
# enrolled target (arm baseline) and half the canary, all enrolled and authorized. Every pod
# gets a real token bound to it (TokenRequest, audience booster-operator). For each N in NS
# a fresh booster-operator (host process, --namespace of the run, --leader-elect=false,
# feedback server on TLS with a CA and certificate made here by openssl) is started, and
# feedback_bench runs N FeedbackClients, one per pod with its own token, reporting one
# window per second: it measures the operator's CPU and RSS idle (no stream) and then with
# all N streams open, and run.sh saves the operator's and the API server's /metrics at the
# phase edges, from which come the streams and windows the operator counted and the
# TokenReviews it made (apiserver_request_total{resource="tokenreviews"}).
#
# Part 2, the agent in a real pod (AGENT_POD=1), streaming against not streaming. Twice a
# Deployment of 2 pods on the real node under a profile at step 1 of [50, 100], in two
# namespaces, each with its own fresh operator (host process): one injects the real agent
# (booster.local/agent:e2e) pointed at its feedback server on the node address (10.244.0.1,
# --agent-feedback-address/-ca-file), the other gives the agents no address (JSON lines, the
# baseline). A light HTTP load runs against all four pods. Once the streaming agents stream,
# the four agent containers' CPU (cgroup cpuacct.usage and the process's utime+stime) and
# memory (cgroup memory.stat rss and cache, the process's VmRSS, RssAnon, RssFile) are read
# every second for AGENT_SECONDS, the same seconds for both modes.
#
#   flock /tmp/booster-cluster.lock bench/feedback/run.sh [BUILD_DIR]   # e2e cluster up
#   NS="100 1000" SECONDS_STEADY=60 BASELINE=20 AGENT_POD=1 AGENT_SECONDS=60 \
#     AGENT_INTERVAL=1s bench/feedback/run.sh build
#
# NS="" skips part 1, AGENT_POD=0 part 2.
# Needs booster.local/agent:e2e in the cluster (tests/e2e/rollout/images BUILD_DIR) for part 2.
# Prints a JSON summary (also $OUT, default /tmp/feedback-bench.json); logs, metrics
# snapshots and the driver's output stay in $WORK (default /tmp/feedback-bench).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$ROOT/build}
NS_LIST=${NS-"100 1000"}
SECONDS_STEADY=${SECONDS_STEADY:-60}
BASELINE=${BASELINE:-20}
AGENT_POD=${AGENT_POD:-1}
AGENT_SECONDS=${AGENT_SECONDS:-60}
AGENT_INTERVAL=${AGENT_INTERVAL:-1s}
OUT=${OUT:-/tmp/feedback-bench.json}
WORK=${WORK:-/tmp/feedback-bench}
NODE_IP=${NODE_IP:-10.244.0.1}
RUN_ID=$(date +%s)
NAMESPACE=bench-feedback-$RUN_ID
POD_NAMESPACE=bench-feedback-pod-$RUN_ID
LOCAL_NAMESPACE=bench-feedback-local-$RUN_ID
NODE=bench-feedback-kwok-$RUN_ID
export KUBECONFIG=${KUBECONFIG:-/var/lib/booster-e2e/admin.kubeconfig}
KUBECTL=$ROOT/tests/e2e/cluster/kubectl
OPERATOR=${BOOSTER_OPERATOR_BIN:-$BUILD/operator/booster-operator}
DRIVER=$BUILD/bench/feedback/feedback_bench
MAXN=0
# shellcheck disable=SC2086
for n in $NS_LIST; do ((n > MAXN)) && MAXN=$n; done

if ! "$KUBECTL" get --raw /readyz >/dev/null 2>&1; then
  echo "bench/feedback: the e2e cluster is not up" >&2
  exit 1
fi
for bin in "$OPERATOR" "$DRIVER"; do
  [[ -x $bin ]] || { echo "bench/feedback: no $bin (ninja -C $BUILD $(basename "$bin"))" >&2; exit 1; }
done
rm -rf "$WORK" && mkdir -p "$WORK/tokens"

# A throwaway PKI: the server certificate names the node address (agents in pods) and
# 127.0.0.1.
(
  cd "$WORK"
  openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 1 \
    -subj /CN=bench-feedback-ca 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr \
    -subj /CN=booster-operator 2>/dev/null
  printf 'subjectAltName=IP:%s,IP:127.0.0.1,DNS:booster-operator\n' "$NODE_IP" >san.ext
  openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem \
    -days 1 -extfile san.ext 2>/dev/null
)
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

OP_PID=""
LOCAL_PID=""
LOAD_PID=""
cleanup() {
  [[ -n $LOAD_PID ]] && kill "$LOAD_PID" 2>/dev/null || true
  [[ -n $OP_PID ]] && kill -KILL "$OP_PID" 2>/dev/null || true
  [[ -n $LOCAL_PID ]] && kill -KILL "$LOCAL_PID" 2>/dev/null || true
  for ns in "$NAMESPACE" "$POD_NAMESPACE" "$LOCAL_NAMESPACE"; do
    # No operator left to remove the finalizers: strip them so the namespace can go.
    for bp in $("$KUBECTL" -n "$ns" get boosterprofiles -o name 2>/dev/null); do
      "$KUBECTL" -n "$ns" patch "$bp" --type=merge -p '{"metadata":{"finalizers":null}}' \
        >/dev/null 2>&1 || true
    done
    "$KUBECTL" delete namespace "$ns" --wait=false >/dev/null 2>&1 || true
  done
  "$ROOT/tests/e2e/cluster/kwok-node" --delete "$NODE" >/dev/null 2>&1 || true
}
trap cleanup EXIT

# start_operator LOG NAMESPACE FEEDBACK_ADDRESS [FLAG...]: a fresh operator; sets OP_PID
# and METRICS once it is ready.
start_operator() {
  local log=$1 ns=$2 feedback=$3
  shift 3
  "$OPERATOR" --kubeconfig="$KUBECONFIG" --namespace="$ns" --leader-elect=false \
    --agent-image=booster.local/agent:e2e --metrics-bind-address=127.0.0.1:0 \
    --health-probe-bind-address=127.0.0.1:0 --feedback-bind-address="$feedback" \
    --feedback-cert-file="$WORK/server.pem" --feedback-key-file="$WORK/server.key" \
    --log-format=json "$@" >"$log" 2>&1 &
  OP_PID=$!
  METRICS=""
  local health=""
  for _ in $(seq 600); do
    kill -0 "$OP_PID" 2>/dev/null || { cat "$log" >&2; exit 1; }
    METRICS=$(addr "$log" metrics) health=$(addr "$log" health)
    [[ -n $METRICS && -n $health ]] &&
      [[ $(curl -s -o /dev/null -w '%{http_code}' "http://$health/readyz") == 200 ]] &&
      [[ -n $(addr "$log" feedback) ]] && return 0
    sleep 0.1
  done
  echo "operator never became ready" >&2
  exit 1
}
stop_operator() {  # SIGTERM; prints the exit code
  kill -TERM "$OP_PID"
  local code=0
  wait "$OP_PID" || code=$?
  OP_PID=""
  echo "$code"
}
addr() {  # the bound address the operator logged in $1 for endpoint $2
  python3 - "$1" "$2" <<'PY'
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
# wait_for SECONDS COMMAND...: retries COMMAND every 2 s.
wait_for() {
  local deadline=$((SECONDS + $1))
  shift
  until "$@"; do
    ((SECONDS < deadline)) || return 1
    sleep 2
  done
}

# ---- Part 1: N simulated agents over kwok pods (skipped with NS="").
SETUP_S=0
if [[ -n ${NS_LIST// /} ]]; then  # (not indented: the block holds heredocs)
"$ROOT/tests/e2e/cluster/kwok-node" "$NODE" --pods $((MAXN + 200)) --cpu 100000 \
  --memory 100000Gi >/dev/null
"$KUBECTL" create namespace "$NAMESPACE" >/dev/null
cat >"$WORK/app.yaml" <<YAML
apiVersion: apps/v1
kind: Deployment
metadata: {name: app, namespace: $NAMESPACE}
spec:
  replicas: $MAXN
  selector: {matchLabels: {app: app}}
  template:
    metadata: {labels: {app: app}}
    spec:
      nodeSelector: {kubernetes.io/hostname: $NODE, type: kwok}
      tolerations: [{key: kwok.x-k8s.io/node, operator: Exists, effect: NoSchedule}]
      containers:
      - name: web
        image: booster.local/httpserver:e2e
        resources: {limits: {cpu: 500m, memory: 64Mi}}
---
apiVersion: booster.dev/v1alpha1
kind: BoosterProfile
metadata: {name: app, namespace: $NAMESPACE}
spec:
  targetRef: {kind: Deployment, name: app}
  tuning:
    runtime: {preload: {listenBacklog: 4096}}
  rollout: {steps: [50, 100], stepDuration: 24h, progressDeadline: 1h, analysis: {mode: Time, interval: 1s}}
YAML
FEEDBACK_PORT=$(free_port)
FEEDBACK=127.0.0.1:$FEEDBACK_PORT
echo "== $MAXN pods on $NODE, enrolled by an operator (setup)" >&2
start_operator "$WORK/operator-setup.log" "$NAMESPACE" "$FEEDBACK"
T_SETUP=$SECONDS
"$KUBECTL" apply -f "$WORK/app.yaml" >/dev/null
# Step 1 reached and settled: target and canary rolled out (every replica updated and
# ready), every pod Running with its arm label and template hash, the same pods on two
# checks in a row.
settled() {
  "$KUBECTL" -n "$NAMESPACE" get pods -o json >"$WORK/pods.json" 2>/dev/null || return 1
  "$KUBECTL" -n "$NAMESPACE" get bp app -o json >"$WORK/bp.json" 2>/dev/null || return 1
  "$KUBECTL" -n "$NAMESPACE" get deployments -o json >"$WORK/deps.json" 2>/dev/null || return 1
  python3 - "$WORK/pods.json" "$WORK/bp.json" "$WORK/deps.json" "$MAXN" "$WORK/settled.prev" \
    <<'PY'
import collections, json, os, sys
pods = json.load(open(sys.argv[1]))["items"]
bp = json.load(open(sys.argv[2])).get("status", {})
deps = json.load(open(sys.argv[3]))["items"]
n, prev = int(sys.argv[4]), sys.argv[5]
arms = collections.Counter()
for p in pods:
    m = p["metadata"]
    if (p.get("status", {}).get("phase") == "Running" and "deletionTimestamp" not in m and
            m.get("annotations", {}).get("booster.dev/template-hash")):
        arms[m.get("labels", {}).get("booster.dev/arm", "")] += 1
def rolled_out(d):
    st, want = d.get("status", {}), d["spec"].get("replicas", 0)
    return (st.get("observedGeneration") == d["metadata"]["generation"] and
            st.get("replicas", 0) == want and st.get("updatedReplicas", 0) == want and
            st.get("readyReplicas", 0) == want)
print(f'phase={bp.get("phase")} step={bp.get("currentStep")} running={dict(arms)} '
      f'pods={len(pods)} rolled_out={[d["metadata"]["name"] for d in deps if rolled_out(d)]}',
      file=sys.stderr)
ok = (bp.get("phase") == "Progressing" and bp.get("currentStep") == 1 and
      arms["baseline"] + arms["canary"] == n and len(pods) == n and arms["canary"] > 0 and
      len(deps) == 2 and all(rolled_out(d) for d in deps))
uids = " ".join(sorted(p["metadata"]["uid"] for p in pods))
same = os.path.exists(prev) and open(prev).read() == uids
open(prev, "w").write(uids if ok else "")
sys.exit(0 if ok and same else 1)
PY
}
wait_for 1200 settled || { echo "the profile did not settle at step 1" >&2; exit 1; }
SETUP_S=$((SECONDS - T_SETUP))
stop_operator >"$WORK/setup-sigterm_exit"
echo "== settled after ${SETUP_S}s" >&2

# A token bound to every pod (TokenRequest of the pod's service account, audience
# booster-operator), and the pod list for the driver with the arms interleaved, so that
# the first N pods hold both arms.
python3 - "$WORK/pods.json" "$WORK/tokens" "$WORK/pods.tsv" "$KUBECONFIG" <<'PY'
import base64, http.client, json, os, re, ssl, sys, tempfile
pods_json, token_dir, tsv, kubeconfig = sys.argv[1:5]
cfg = open(kubeconfig).read()
def field(name):
    return base64.b64decode(re.search(name + r": (\S+)", cfg)[1])
server = re.search(r"server: https://(\S+)", cfg)[1]
tmp = tempfile.mkdtemp()
for name in ("certificate-authority-data", "client-certificate-data", "client-key-data"):
    open(os.path.join(tmp, name), "wb").write(field(name))
ctx = ssl.create_default_context(cafile=os.path.join(tmp, "certificate-authority-data"))
ctx.load_cert_chain(os.path.join(tmp, "client-certificate-data"),
                    os.path.join(tmp, "client-key-data"))
host, port = server.rsplit(":", 1)
conn = http.client.HTTPSConnection(host, int(port), context=ctx)
by_arm = {"baseline": [], "canary": []}
for p in json.load(open(pods_json))["items"]:
    by_arm[p["metadata"]["labels"]["booster.dev/arm"]].append(p)
order = []
for i in range(max(len(v) for v in by_arm.values())):
    for arm in ("baseline", "canary"):
        if i < len(by_arm[arm]):
            order.append((arm, by_arm[arm][i]))
with open(tsv, "w") as out:
    for arm, p in order:
        m = p["metadata"]
        sa = p["spec"].get("serviceAccountName", "default")
        body = json.dumps({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                           "spec": {"audiences": ["booster-operator"], "expirationSeconds": 7200,
                                    "boundObjectRef": {"apiVersion": "v1", "kind": "Pod",
                                                       "name": m["name"], "uid": m["uid"]}}})
        conn.request("POST", f'/api/v1/namespaces/{m["namespace"]}/serviceaccounts/{sa}/token',
                     body, {"Content-Type": "application/json"})
        r = conn.getresponse()
        data = r.read()
        if r.status != 201:
            sys.exit(f"TokenRequest for {m['name']}: {r.status} {data[:300]!r}")
        path = os.path.join(token_dir, m["name"])
        open(path, "w").write(json.loads(data)["status"]["token"])
        out.write("\t".join([m["namespace"], m["name"], m["uid"], arm,
                             m["annotations"]["booster.dev/template-hash"], path]) + "\n")
PY
echo "== $(wc -l <"$WORK/pods.tsv") pod-bound tokens" >&2

# The snapshot the driver takes at each phase edge: the operator's and the API server's
# /metrics into $SNAP_DIR/<label>.{operator,apiserver}.txt.
cat >"$WORK/snap.sh" <<SH
#!/usr/bin/env bash
curl -s "http://\$SNAP_METRICS/metrics" >"\$SNAP_DIR/\$1.operator.txt"
"$KUBECTL" get --raw /metrics >"\$SNAP_DIR/\$1.apiserver.txt"
date +%s.%N >"\$SNAP_DIR/\$1.time"
ss -tnH state established "( sport = :\$SNAP_PORT )" | wc -l >"\$SNAP_DIR/\$1.conns"
SH
chmod +x "$WORK/snap.sh"

for n in $NS_LIST; do
  dir=$WORK/n$n
  mkdir -p "$dir"
  echo "== N=$n: fresh operator" >&2
  start_operator "$dir/operator.log" "$NAMESPACE" "$FEEDBACK"
  # Synced and the profile reconciled once (which opens step 1 for the feedback server).
  wait_for 120 bash -c "curl -s http://$METRICS/metrics | grep -q '^booster_operator_reconcile_total.* [1-9]'" ||
    { echo "the operator did not reconcile the profile" >&2; exit 1; }
  SNAP_DIR=$dir SNAP_METRICS=$METRICS SNAP_PORT=$FEEDBACK_PORT "$DRIVER" --address "$FEEDBACK" --ca-file "$WORK/ca.pem" \
    --pods "$WORK/pods.tsv" --count "$n" --operator-pid "$OP_PID" --seconds "$SECONDS_STEADY" \
    --baseline-seconds "$BASELINE" --snapshot-command "$WORK/snap.sh" >"$dir/driver.json" \
    2>"$dir/driver.err"
  awk '/^VmHWM/ {print $2}' "/proc/$OP_PID/status" >"$dir/vmhwm_kib"
  stop_operator >"$dir/sigterm_exit"
done
fi

# ---- Part 2: the agent in a real pod, streaming, against the same agent not streaming.
# Two namespaces with the same Deployment and profile, each with its own operator: one
# points the agents at its feedback server (--agent-feedback-address/-ca-file), the other
# gives them no address, so they write JSON lines as before (the baseline).
if [[ $AGENT_POD == 1 ]]; then
  echo "== agent in a real pod: streaming ($POD_NAMESPACE) and not ($LOCAL_NAMESPACE)" >&2
  app_yaml() {  # app_yaml NAMESPACE
    cat <<YAML
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: $1}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: web
        image: booster.local/httpserver:cgo
        imagePullPolicy: IfNotPresent
        ports: [{containerPort: 8080}]
        readinessProbe: {httpGet: {path: /healthz, port: 8080}, periodSeconds: 1}
        resources: {requests: {cpu: 50m, memory: 32Mi}, limits: {cpu: 500m, memory: 64Mi}}
---
apiVersion: booster.dev/v1alpha1
kind: BoosterProfile
metadata: {name: web, namespace: $1}
spec:
  targetRef: {kind: Deployment, name: web}
  tuning:
    runtime: {preload: {listenBacklog: 1024}}
  rollout: {steps: [50, 100], stepDuration: 24h, progressDeadline: 10m,
            analysis: {mode: Time, interval: $AGENT_INTERVAL}}
YAML
  }
  "$KUBECTL" create namespace "$LOCAL_NAMESPACE" >/dev/null
  start_operator "$WORK/operator-local.log" "$LOCAL_NAMESPACE" "127.0.0.1:$(free_port)"
  LOCAL_PID=$OP_PID
  LOCAL_METRICS=$METRICS
  app_yaml "$LOCAL_NAMESPACE" | "$KUBECTL" apply -f - >/dev/null
  "$KUBECTL" create namespace "$POD_NAMESPACE" >/dev/null
  PART2_PORT=$(free_port)
  start_operator "$WORK/operator-pod.log" "$POD_NAMESPACE" "$NODE_IP:$PART2_PORT" \
    --agent-feedback-address="$NODE_IP:$PART2_PORT" --agent-feedback-ca-file="$WORK/ca.pem"
  app_yaml "$POD_NAMESPACE" | "$KUBECTL" apply -f - >/dev/null
  # Every agent up: both arms of both namespaces Running with the agent's /metrics answering,
  # and in the streaming namespace each agent connected with a report acknowledged.
  agents_up() {
    "$KUBECTL" get pods -A -l booster.dev/arm -o json >"$WORK/agent-pods.json" 2>/dev/null ||
      return 1
    python3 - "$WORK/agent-pods.json" "$POD_NAMESPACE" "$LOCAL_NAMESPACE" \
      >"$WORK/agent-pods.tsv" <<'PY' || return 1
import json, sys, urllib.request
streaming_ns, local_ns = sys.argv[2:4]
ok = 0
for p in json.load(open(sys.argv[1]))["items"]:
    m, st = p["metadata"], p.get("status", {})
    if m["namespace"] not in (streaming_ns, local_ns):
        continue
    arm = m.get("labels", {}).get("booster.dev/arm")
    if "deletionTimestamp" in m or st.get("phase") != "Running" or not arm:
        continue
    cid = [c.get("containerID", "") for c in st.get("containerStatuses", [])
           if c["name"] == "booster-agent" and c.get("ready")]
    try:
        text = urllib.request.urlopen(f'http://{st["podIP"]}:9901/metrics', timeout=2).read()
    except Exception:
        continue
    vals = {}
    for line in text.decode().splitlines():
        for name in ("booster_agent_feedback_connected", "booster_agent_feedback_reports_acked_total"):
            if line.startswith(name + "{") or line.startswith(name + " "):
                vals[name] = float(line.rsplit(" ", 1)[1])
    streaming = m["namespace"] == streaming_ns
    if not cid or (streaming and (vals.get("booster_agent_feedback_connected") != 1 or
                                  vals.get("booster_agent_feedback_reports_acked_total", 0) < 1)):
        continue
    ok += 1
    print("\t".join([m["name"], m["uid"], arm, st.get("qosClass", ""),
                     cid[0].removeprefix("containerd://"), st["podIP"],
                     "streaming" if streaming else "local"]))
sys.exit(0 if ok == 4 else 1)
PY
  }
  wait_for 300 agents_up || { echo "the agents did not come up and stream" >&2; exit 1; }
  # Light load on every pod (about 10 requests/s each), so that the agents' windows carry
  # the app's latency and throughput, as under traffic.
  (
    while :; do
      while IFS=$'\t' read -r _ _ _ _ _ ip _; do
        curl -s -o /dev/null "http://$ip:8080/" || true
      done <"$WORK/agent-pods.tsv"
      sleep 0.1
    done
  ) &
  LOAD_PID=$!
  sleep 5
  # One line per agent: name mode arm cpuacct.usage(ns) memory.stat rss, cache (bytes)
  # pid VmRSS RssAnon RssFile (KiB) utime+stime (ticks). cgroup v1 of the container (the
  # kubelet's layout, as ContainerPid in tests/e2e/rollout/rollout_e2e_util.cc reads it).
  sample_agents() {
    while IFS=$'\t' read -r name uid arm qos cid _ mode; do
      local sub=""
      [[ ${qos,,} != guaranteed ]] && sub="${qos,,}/"
      local cpu=/sys/fs/cgroup/cpuacct/booster-e2e/kubepods/${sub}pod$uid/$cid
      local mem=/sys/fs/cgroup/memory/booster-e2e/kubepods/${sub}pod$uid/$cid
      local pid
      pid=$(head -1 "$cpu/cgroup.procs")
      printf '%s %s %s %s %s %s %s %s %s %s %s\n' "$name" "$mode" "$arm" \
        "$(cat "$cpu/cpuacct.usage")" \
        "$(awk '$1 == "rss" {print $2}' "$mem/memory.stat")" \
        "$(awk '$1 == "cache" {print $2}' "$mem/memory.stat")" "$pid" \
        "$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status")" \
        "$(awk '/^RssAnon/ {print $2}' "/proc/$pid/status")" \
        "$(awk '/^RssFile/ {print $2}' "/proc/$pid/status")" \
        "$(awk '{print $14 + $15}' "/proc/$pid/stat")"
    done <"$WORK/agent-pods.tsv"
  }
  curl -s "http://$METRICS/metrics" >"$WORK/agent-start.operator.txt"
  A0=$(date +%s.%N)
  sample_agents >"$WORK/agent-start.txt"
  : >"$WORK/agent-samples.txt"
  for _ in $(seq "$AGENT_SECONDS"); do
    sleep 1
    sample_agents >>"$WORK/agent-samples.txt"
  done
  A1=$(date +%s.%N)
  sample_agents >"$WORK/agent-end.txt"
  curl -s "http://$METRICS/metrics" >"$WORK/agent-end.operator.txt"
  echo "$A0 $A1" >"$WORK/agent-times.txt"
  kill "$LOAD_PID" 2>/dev/null || true
  wait "$LOAD_PID" 2>/dev/null || true
  LOAD_PID=""
  while IFS=$'\t' read -r name _ _ _ _ ip _; do
    curl -s "http://$ip:9901/metrics" >"$WORK/agent-$name.metrics.txt" || true
  done <"$WORK/agent-pods.tsv"
  stop_operator >"$WORK/agent-sigterm_exit"
  OP_PID=$LOCAL_PID
  LOCAL_PID=""
  stop_operator >"$WORK/local-sigterm_exit"
fi

python3 - "$WORK" "$NS_LIST" "$SETUP_S" "$AGENT_POD" "$AGENT_INTERVAL" <<'PY' | tee "$OUT"
import json, os, re, sys
from datetime import datetime, timezone
work, ns_list, setup_s, agent_pod, agent_interval = sys.argv[1:6]

def metrics(path):
    out = []
    for line in open(path):
        m = re.match(r'(\w+)(\{[^}]*\})? ([0-9.eE+-]+)$', line.strip())
        if m:
            out.append((m[1], m[2] or "", float(m[3])))
    return out

def total(path, name, *subs):
    return sum(v for n, l, v in metrics(path) if n == name and all(s in l for s in subs))

def by_label(path, name, label):
    out = {}
    for n, l, v in metrics(path):
        if n == name:
            m = re.search(label + r'="([^"]*)"', l)
            if m and v:
                out[m[1]] = out.get(m[1], 0) + v
    return out

def t(d, label):
    return float(open(f"{d}/{label}.time").read())

result = {"date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
          "setup_seconds": int(setup_s), "streams": []}
for n in ns_list.split():
    d = f"{work}/n{n}"
    drv = json.load(open(f"{d}/driver.json"))
    idle, steady = drv["operator_idle"], drv["operator_steady"]
    op = lambda label: f"{d}/{label}.operator.txt"
    api = lambda label: f"{d}/{label}.apiserver.txt"
    tr = lambda label: total(api(label), "apiserver_request_total", 'resource="tokenreviews"')
    windows = total(op("end"), "booster_operator_agent_windows_total") - \
        total(op("start"), "booster_operator_agent_windows_total")
    snap_s = t(d, "end") - t(d, "start")
    windows_per_s = windows / snap_s
    extra_cores = steady["cpu_cores"] - idle["cpu_cores"]
    idle_tr = tr("idle1") - tr("idle0")
    row = {
        "n": int(n),
        "streams_at_start": total(op("start"), "booster_operator_agent_streams"),
        "streams_at_end": total(op("end"), "booster_operator_agent_streams"),
        "streams_by_arm_at_end": by_label(op("end"), "booster_operator_agent_streams", "arm"),
        "tcp_connections_at_end": int(open(f"{d}/end.conns").read()),
        "connect_seconds": round(drv["connect_seconds"], 1),
        "steady_seconds": round(steady["seconds"], 1),
        "windows_stored_steady": windows,
        "windows_per_s": round(windows_per_s, 1),
        "windows_stored_total": total(op("end"), "booster_operator_agent_windows_total"),
        "windows_dropped": by_label(op("end"), "booster_operator_agent_windows_dropped_total", "reason"),
        "rejected": by_label(op("end"), "booster_operator_agent_rejected_total", "reason"),
        "client_rejects": drv["clients_at_end"]["rejects"],
        "client_reconnects": drv["clients_at_end"]["reconnects"],
        "client_dropped": drv["clients_at_end"]["reports_dropped"],
        "client_last_errors": drv["clients_at_end"]["last_errors"],
        "operator_rss_mib": {"idle": round(idle["rss_kib_to"] / 1024, 1),
                             "streaming_start": round(steady["rss_kib_from"] / 1024, 1),
                             "streaming_end": round(steady["rss_kib_to"] / 1024, 1),
                             "vm_hwm": round(int(open(f"{d}/vmhwm_kib").read()) / 1024, 1)},
        "rss_kib_per_stream": round((steady["rss_kib_to"] - idle["rss_kib_to"]) / int(n), 1),
        "operator_cpu_cores": {"idle": round(idle["cpu_cores"], 4),
                               "connect": round(drv["operator_connect"]["cpu_cores"], 4),
                               "steady": round(steady["cpu_cores"], 4)},
        "cpu_cores_per_1000_windows_s": round(extra_cores / (windows_per_s / 1000), 4)
                                        if windows_per_s else None,
        "connect_cpu_ms_per_stream": round(
            (drv["operator_connect"]["cpu_seconds"] -
             idle["cpu_cores"] * drv["operator_connect"]["seconds"]) * 1000 / int(n), 2),
        "tokenreviews": {"idle_window": idle_tr, "idle_window_s": round(idle["seconds"], 1),
                         "connect_and_steady": tr("end") - tr("idle1")},
        "tokenreviews_per_stream": round((tr("end") - tr("idle1")) / int(n), 3),
        "driver": drv["driver"],
        "sigterm_exit": int(open(f"{d}/sigterm_exit").read()),
    }
    result["streams"].append(row)

if agent_pod == "1":
    a0, a1 = map(float, open(f"{work}/agent-times.txt").read().split())
    secs = a1 - a0
    def rows(path):
        return {l.split()[0]: l.split() for l in open(path) if l.strip()}
    start, end = rows(f"{work}/agent-start.txt"), rows(f"{work}/agent-end.txt")
    samples = [l.split() for l in open(f"{work}/agent-samples.txt") if l.strip()]
    agents = []
    for name, e in sorted(end.items(), key=lambda kv: (kv[1][1], kv[1][2])):
        s = start[name]
        mine = [x for x in samples if x[0] == name]
        mib = lambda i, div: round(max(int(x[i]) for x in mine) / div, 2)
        agents.append({
            "pod": name, "mode": e[1], "arm": e[2], "seconds": round(secs, 1),
            "cgroup_cpu_percent_of_core": round(100 * (int(e[3]) - int(s[3])) / 1e9 / secs, 3),
            "process_cpu_percent_of_core":
                round(100 * (int(e[10]) - int(s[10])) / os.sysconf("SC_CLK_TCK") / secs, 3),
            "max_mib": {"cgroup_rss": mib(4, 2**20), "cgroup_cache": mib(5, 2**20),
                        "vmrss": mib(7, 1024), "rss_anon": mib(8, 1024),
                        "rss_file": mib(9, 1024)},
        })
    s_op, e_op = f"{work}/agent-start.operator.txt", f"{work}/agent-end.operator.txt"
    result["agent_in_pod"] = {
        "interval": agent_interval, "agents": agents,
        "operator_streams": by_label(e_op, "booster_operator_agent_streams", "arm"),
        "operator_windows_during": total(e_op, "booster_operator_agent_windows_total") -
                                   total(s_op, "booster_operator_agent_windows_total"),
        "operator_rejected": by_label(e_op, "booster_operator_agent_rejected_total", "reason"),
        "operator_dropped": by_label(e_op, "booster_operator_agent_windows_dropped_total", "reason"),
        "sigterm_exit": int(open(f"{work}/agent-sigterm_exit").read()),
    }
print(json.dumps(result, indent=1))
PY
