# Shared settings of build / up / down / image. Sourced, not executed.
# shellcheck shell=bash
CLUSTER_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
E2E_DIR=$(dirname "$CLUSTER_DIR")
# shellcheck source=versions.env
source "$CLUSTER_DIR/versions.env"

BOOSTER_CACHE=${BOOSTER_CACHE:-/var/cache/booster}
KEY="k8s-$K8S_VERSION-etcd-$ETCD_VERSION-kwok-$KWOK_VERSION"
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
CGROUP_SUBSYSTEMS=(cpu cpuacct cpuset memory devices freezer blkio pids systemd)
CNI_NETWORK=booster-e2e

# cgroup directories of one v1 hierarchy that exist on this machine.
cgroup_dirs() {  # cgroup_dirs <relative path>
  local s
  for s in "${CGROUP_SUBSYSTEMS[@]}"; do
    [[ -d /sys/fs/cgroup/$s ]] && echo "/sys/fs/cgroup/$s/$1"
  done
}
