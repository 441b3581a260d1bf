# Shared settings of build / up / down / image. Sourced, not executed.
# shellcheck shell=bash
CLUSTER_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
E2E_DIR=$(dirname "$CLUSTER_DIR")
# shellcheck source=versions.env
source "$CLUSTER_DIR/versions.env"

BOOSTER_CACHE=${BOOSTER_CACHE:-/var/cache/booster}
KEY="k8s-$K8S_VERSION-etcd-$ETCD_VERSION-kwok-$KWOK_VERSION-metrics-server-$METRICS_SERVER_VERSION"
BIN_DIR=$BOOSTER_CACHE/$KEY/bin
IMAGE_DIR=$BOOSTER_CACHE/images      # OCI archives imported into containerd by `up`
export GOMODCACHE=$BOOSTER_CACHE/gomod
export GOCACHE=$BOOSTER_CACHE/go-build
export GOFLAGS=-mod=mod
export GOTOOLCHAIN=local
export CGO_ENABLED=0

STATE=${BOOSTER_E2E_STATE:-/var/lib/booster-e2e}
RUN_DIR=/run/booster-e2e              # sockets and pid files (tmpfs: gone after a reboot)
LOG_DIR=$STATE/logs
CONTAINERD_SOCK=$RUN_DIR/containerd.sock

# Fixed loopback ports, chosen away from the defaults of other software (6443, 2379,
# 10250 ...) so a developer's own cluster or etcd is never hit by mistake. docs/testing.md.
ETCD_CLIENT_PORT=23790
ETCD_PEER_PORT=23800
APISERVER_PORT=16443
KCM_PORT=16257
SCHED_PORT=16259
KUBELET_PORT=16250
KUBELET_HEALTHZ_PORT=16248
KWOK_PORT=16280
METRICS_SERVER_PORT=16444  # on $NODE_IP, the address of its Endpoints (the API server dials it)

POD_CIDR=10.244.0.0/24
SERVICE_CIDR=10.96.0.0/16
CLUSTER_DNS=10.96.0.10
CNI_BRIDGE=booster0
NODE_NAME=booster-node

log() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

NODE_IP=10.244.0.1                    # the pod bridge's address: node InternalIP, pod gateway
KWOK_CIDR=10.246.0.0/16
KUBE_PROXY_METRICS_PORT=16249
KUBE_PROXY_HEALTHZ_PORT=16256
CGROUP_NAME=booster-e2e               # every process of the cluster lives under this cgroup
# v1 hierarchies, plus the cgroup2 `unified` one of a hybrid host (runc mirrors there).
CGROUP_SUBSYSTEMS=(cpu cpuacct cpuset memory devices freezer blkio pids systemd unified)
CNI_NETWORK=booster-e2e

# cgroup directories of one v1 hierarchy that exist on this machine.
cgroup_dirs() {  # cgroup_dirs <relative path>
  local s
  for s in "${CGROUP_SUBSYSTEMS[@]}"; do
    [[ -d /sys/fs/cgroup/$s ]] && echo "/sys/fs/cgroup/$s/$1"
  done
}

# ---- process helpers shared by up and cpu-manager ----------------------------------------
T0=${T0:-$(date +%s)}
start() {  # start <name> <command...>: in /booster-e2e/system, log to $LOG_DIR/<name>.log
  local name=$1
  shift
  (
    for d in $(cgroup_dirs "$CGROUP_NAME/system"); do echo "$BASHPID" >"$d/cgroup.procs"; done
    exec setsid "$@" </dev/null >>"$LOG_DIR/$name.log" 2>&1
  ) &
  echo $! >"$RUN_DIR/$name.pid"
}
wait_for() {  # wait_for <what> <timeout s> <command...>
  local what=$1 timeout=$2 deadline
  shift 2
  deadline=$(( $(date +%s) + timeout ))
  until "$@" >/dev/null 2>&1; do
    if (( $(date +%s) >= deadline )); then
      log "timed out after ${timeout}s waiting for $what; last lines of the logs:"
      tail -n 5 "$LOG_DIR"/*.log >&2 || true
      exit 1
    fi
    sleep 0.5
  done
  log "$what ready ($(( $(date +%s) - T0 ))s)"
}
alive() { kill -0 "$(cat "$RUN_DIR/$1.pid")" 2>/dev/null; }

start_apiserver() {  # also used by ./restart to bring it back after a chaos test stopped it
  local PKI=$STATE/pki
  log "kube-apiserver on https://127.0.0.1:$APISERVER_PORT"
  # The requestheader/proxy-client flags turn on the aggregation layer (metrics-server's
  # metrics.k8s.io): the API server proxies to it with the front-proxy client certificate
  # and the user in X-Remote-* headers; aggregator routing dials the Endpoints address
  # itself instead of going through kube-proxy's Service rules.
  start kube-apiserver kube-apiserver \
    --etcd-servers "https://127.0.0.1:$ETCD_CLIENT_PORT" --etcd-cafile "$PKI/ca.crt" \
    --etcd-certfile "$PKI/apiserver-etcd-client.crt" --etcd-keyfile "$PKI/apiserver-etcd-client.key" \
    --bind-address 127.0.0.1 --secure-port "$APISERVER_PORT" --advertise-address "$NODE_IP" \
    --tls-cert-file "$PKI/apiserver.crt" --tls-private-key-file "$PKI/apiserver.key" \
    --client-ca-file "$PKI/ca.crt" \
    --requestheader-client-ca-file "$PKI/front-proxy-ca.crt" \
    --requestheader-allowed-names front-proxy-client \
    --requestheader-username-headers X-Remote-User --requestheader-group-headers X-Remote-Group \
    --requestheader-extra-headers-prefix X-Remote-Extra- \
    --proxy-client-cert-file "$PKI/front-proxy-client.crt" \
    --proxy-client-key-file "$PKI/front-proxy-client.key" --enable-aggregator-routing=true \
    --kubelet-client-certificate "$PKI/apiserver-kubelet-client.crt" \
    --kubelet-client-key "$PKI/apiserver-kubelet-client.key" \
    --kubelet-certificate-authority "$PKI/ca.crt" --kubelet-preferred-address-types InternalIP \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-account-key-file "$PKI/sa.pub" --service-account-signing-key-file "$PKI/sa.key" \
    --service-cluster-ip-range "$SERVICE_CIDR" \
    --authorization-mode Node,RBAC \
    --enable-admission-plugins NodeRestriction,ServiceAccount \
    --allow-privileged=true --feature-gates SidecarContainers=true \
    --profiling=false --v 1
}

# Whether the aggregation layer serves metrics.k8s.io: the API server proxies the discovery
# request to metrics-server (503 while the APIService is unavailable).
metrics_api_serves() {
  kubectl --kubeconfig "$STATE/admin.kubeconfig" get --raw /apis/metrics.k8s.io/v1beta1
}

start_kubelet() {  # start_kubelet none|static
  local CPU_MANAGER_POLICY=$1 reserved="" PKI=$STATE/pki
  log "kubelet on https://$NODE_IP:$KUBELET_PORT (CPU manager policy: $CPU_MANAGER_POLICY)"
  if [[ $CPU_MANAGER_POLICY == static ]]; then
    # 100m for the system: the static policy then keeps CPU 0 (ceil(100m) = one whole CPU)
    # in the shared pool and never hands it out, while 1900m stays allocatable, so a
    # Guaranteed pod with cpu 1 plus small sidecars fits and gets CPU 1 exclusively.
    reserved='systemReserved: {cpu: 100m}'
  fi
  cat >"$STATE/kubelet/config.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $NODE_IP
port: $KUBELET_PORT
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $KUBELET_HEALTHZ_PORT
tlsCertFile: $PKI/kubelet.crt
tlsPrivateKeyFile: $PKI/kubelet.key
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $PKI/ca.crt}
authorization: {mode: Webhook}
containerRuntimeEndpoint: unix://$CONTAINERD_SOCK
cgroupDriver: cgroupfs
cgroupRoot: /$CGROUP_NAME
cgroupsPerQOS: true
failSwapOn: false
allowedUnsafeSysctls: ["net.*"]
cpuManagerPolicy: $CPU_MANAGER_POLICY
$reserved
featureGates: {SidecarContainers: true}
# Images cannot be pulled again, so never garbage-collect them; never evict for the
# small disk and memory of a CI machine either.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "50Mi", nodefs.available: "1%", imagefs.available: "1%"}
serializeImagePulls: false
maxPods: 110
YAML
  start kubelet kubelet --config "$STATE/kubelet/config.yaml" \
    --kubeconfig "$STATE/kubelet.kubeconfig" --root-dir "$STATE/kubelet" \
    --hostname-override "$NODE_NAME" --node-ip "$NODE_IP" \
    --pod-infra-container-image booster.local/pause:3.9 --v 1
}
