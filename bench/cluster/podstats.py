#!/usr/bin/env python3
"""Per-pod counters the cluster benchmark reads from the host (bench/cluster/run.sh).

For every Running, not terminating pod of NAMESPACE matching SELECTOR, the container
CONTAINER's cgroup (cgroup v1, under the kubelet's cgroupRoot /booster-e2e):
cpu.stat (nr_periods, nr_throttled, throttled_time ns) and cpuacct.usage (ns); and, from
its first process: GOMAXPROCS / GOGC / GOMEMLIMIT / LD_PRELOAD / BOOSTER_LISTEN_BACKLOG in its environment,
the GOMAXPROCS the Go runtime chose if the app reports it (usersapi_gomaxprocs on
http://POD_IP:PORT/metrics; the environment says nothing when the runtime picked it),
the pod network namespace's TcpExt ListenOverflows and ListenDrops (/proc/PID/net/netstat
is the netstat of that process's network namespace) and the listen backlog of PORT's
socket (ss -ltn in that namespace, via nsenter). Prints one JSON object keyed by pod name.

  podstats.py NAMESPACE SELECTOR CONTAINER [PORT]
"""
import json
import os
import re
import subprocess
import sys
import urllib.request

ROOT = "booster-e2e"
KUBECTL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../tests/e2e/cluster/kubectl")


def cgroup_dir(hierarchy, uid, cid):
    base = f"/sys/fs/cgroup/{hierarchy}/{ROOT}/kubepods"
    for qos in ("", "burstable/", "besteffort/"):
        d = f"{base}/{qos}pod{uid}/{cid}"
        if os.path.isdir(d):
            return d
    return None


def kv(path):
    out = {}
    with open(path) as f:
        for line in f:
            k, v = line.split()
            out[k] = int(v)
    return out


def netstat(pid):
    lines = open(f"/proc/{pid}/net/netstat").read().splitlines()
    for head, vals in zip(lines[::2], lines[1::2]):
        if head.startswith("TcpExt:"):
            return dict(zip(head.split()[1:], map(int, vals.split()[1:])))
    return {}


def environ(pid):
    raw = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
    return dict(e.decode(errors="replace").split("=", 1) for e in raw if b"=" in e)


def backlog(pid, port):
    out = subprocess.run(["nsenter", "-t", str(pid), "-n", "ss", "-Hltn", f"sport = :{port}"],
                         capture_output=True, text=True).stdout.split()
    return int(out[2]) if len(out) > 2 else None  # State Recv-Q Send-Q(=backlog) ...


def runtime_gomaxprocs(ip, port):
    try:
        with urllib.request.urlopen(f"http://{ip}:{port}/metrics", timeout=2) as r:
            m = re.search(rb"^usersapi_gomaxprocs (\d+)$", r.read(), re.M)
            return int(m[1]) if m else None
    except (OSError, ValueError):
        return None


def main():
    ns, selector, container = sys.argv[1:4]
    port = sys.argv[4] if len(sys.argv) > 4 else None
    pods = json.loads(subprocess.run([KUBECTL, "-n", ns, "get", "pods", "-l", selector, "-o", "json"],
                                     check=True, capture_output=True, text=True).stdout)["items"]
    out = {}
    for p in pods:
        if p["status"].get("phase") != "Running" or p["metadata"].get("deletionTimestamp"):
            continue
        st = [c for c in p["status"].get("containerStatuses", []) if c["name"] == container]
        if not st or "containerID" not in st[0]:
            continue
        cid = st[0]["containerID"].split("://", 1)[1]
        uid = p["metadata"]["uid"]
        cpu, acct = cgroup_dir("cpu", uid, cid), cgroup_dir("cpuacct", uid, cid)
        if not cpu:
            continue
        rec = {"pod_ip": p["status"].get("podIP"),
               "arm": p["metadata"].get("labels", {}).get("booster.dev/arm", ""),
               "cpu_stat": kv(f"{cpu}/cpu.stat"),
               "cpu_usage_ns": int(open(f"{acct}/cpuacct.usage").read()) if acct else None,
               "cfs_quota_us": int(open(f"{cpu}/cpu.cfs_quota_us").read()),
               "cfs_period_us": int(open(f"{cpu}/cpu.cfs_period_us").read())}
        pids = open(f"{cpu}/cgroup.procs").read().split()
        if pids:
            pid = int(pids[0])
            env = environ(pid)
            rec["env"] = {k: env[k] for k in ("GOMAXPROCS", "GOGC", "GOMEMLIMIT", "LD_PRELOAD",
                                              "BOOSTER_LISTEN_BACKLOG") if k in env}
            tcp = netstat(pid)
            rec["listen_overflows"] = tcp.get("ListenOverflows")
            rec["listen_drops"] = tcp.get("ListenDrops")
            if port:
                rec["listen_backlog"] = backlog(pid, port)
                if selector == "app=usersapi":
                    rec["runtime_gomaxprocs"] = runtime_gomaxprocs(rec["pod_ip"], port)
        out[p["metadata"]["name"]] = rec
    json.dump(out, sys.stdout)
    print()


if __name__ == "__main__":
    main()
