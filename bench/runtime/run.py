#!/usr/bin/env python3
"""Baseline vs libbooster.so on real programs, in one invocation, reported as ratios.

Scenarios (each arm is run ROUNDS times, alternating baseline and boosted, and the
median of the rounds is reported):
  backlog   Python's http.server (listen backlog 5) under a burst of short connections
            from wrk (Connection: close), inside a network namespace of its own so that
            /proc/net/netstat ListenOverflows counts only this test;
            boosted: BOOSTER_LISTEN_BACKLOG=4096.
  nodelay   a request/response exchange written as two writes per message, which stalls
            on Nagle + delayed ACK; boosted: BOOSTER_TCP_NODELAY=1 on both peers.
  alloc     an allocation-heavy multi-threaded program with glibc malloc vs jemalloc,
            mimalloc and tcmalloc chained in front of libbooster.so.

Usage: bench/runtime/run.py --build build [--rounds 3] [--only backlog,nodelay,alloc]
       [--markdown out.md]
Must run as root (network namespaces). Traffic stays inside the namespace's loopback.
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, text=True, capture_output=True, **kw).stdout


class Netns:
    """A network namespace with only loopback up, removed on exit."""

    def __init__(self):
        self.name = f"booster-bench-{os.getpid()}"

    def __enter__(self):
        subprocess.run(["ip", "netns", "del", self.name], capture_output=True)
        sh(["ip", "netns", "add", self.name])
        sh(["ip", "-n", self.name, "link", "set", "lo", "up"])
        return self

    def __exit__(self, *exc):
        subprocess.run(["ip", "netns", "del", self.name], capture_output=True)

    def prefix(self):
        return ["ip", "netns", "exec", self.name]

    def netstat(self, key):
        out = sh(self.prefix() + ["cat", "/proc/net/netstat"]).splitlines()
        for names, values in zip(out[::2], out[1::2]):
            if names.startswith("TcpExt:"):
                row = dict(zip(names.split()[1:], values.split()[1:]))
                return int(row[key])
        raise RuntimeError("TcpExt not found in /proc/net/netstat")


def parse_duration_us(text):
    m = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text.strip())
    if not m:
        raise ValueError(f"unparsable wrk duration {text!r}")
    scale = {"us": 1, "ms": 1e3, "s": 1e6, "m": 60e6}[m.group(2)]
    return float(m.group(1)) * scale


def parse_wrk(out):
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    lat = dict(re.findall(r"^\s+(50|90|99)%\s+(\S+)", out, re.M))
    errors = 0
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    if m:
        errors = sum(int(g) for g in m.groups())
    return {"rps": rps, "p50_us": parse_duration_us(lat["50"]),
            "p99_us": parse_duration_us(lat["99"]), "socket_errors": errors}


def wait_port(ns, port, timeout=10):
    deadline = time.time() + timeout
    while time.time() < deadline:
        r = subprocess.run(ns.prefix() + ["ss", "-Hltn", f"sport = :{port}"],
                           capture_output=True, text=True)
        if r.stdout.strip():
            return r.stdout.strip()
        time.sleep(0.05)
    raise RuntimeError(f"nothing listening on port {port} in {ns.name}")


def preload_env(lib, env):
    e = dict(os.environ)
    for k in list(e):
        if k.startswith("BOOSTER_") or k == "LD_PRELOAD":
            del e[k]
    if lib:
        e["LD_PRELOAD"] = lib
    e.update(env)
    return e


def backlog_round(ns, lib, boosted, args):
    env = {"BOOSTER_LISTEN_BACKLOG": "4096"} if boosted else {}
    port = 8000
    with tempfile.TemporaryDirectory() as docroot:
        with open(os.path.join(docroot, "index.html"), "w") as f:
            f.write("<html><body>" + "booster " * 64 + "</body></html>\n")
        server = subprocess.Popen(
            ns.prefix() + [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", str(port)],
            cwd=docroot, env=preload_env(lib if boosted else None, env),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            ss_line = wait_port(ns, port)
            backlog_seen = int(ss_line.split()[2])  # Send-Q of a listener = its backlog
            before = ns.netstat("ListenOverflows")
            out = sh(ns.prefix() + ["wrk", f"-t{args.wrk_threads}", f"-c{args.connections}",
                                    f"-d{args.seconds}s", "-H", "Connection: close", "--latency",
                                    f"http://127.0.0.1:{port}/"])
            after = ns.netstat("ListenOverflows")
        finally:
            server.terminate()
            server.wait()
    r = parse_wrk(out)
    r["listen_overflows"] = after - before
    r["backlog"] = backlog_seen
    return r


def nodelay_round(ns, lib, boosted, args):
    exe = os.path.join(args.build, "bench", "runtime", "booster_bench_pingpong")
    env = preload_env(lib if boosted else None, {"BOOSTER_TCP_NODELAY": "1"} if boosted else {})
    with tempfile.TemporaryDirectory() as tmp:
        port_file = os.path.join(tmp, "port")
        server = subprocess.Popen(ns.prefix() + [exe, "server", port_file], env=env)
        try:
            deadline = time.time() + 10
            while not (os.path.exists(port_file) and open(port_file).read().strip()):
                if time.time() > deadline:
                    raise RuntimeError("pingpong server did not start")
                time.sleep(0.02)
            port = open(port_file).read().strip()
            out = sh(ns.prefix() + [exe, "client", port, "4", str(args.nodelay_seconds)], env=env)
        finally:
            server.terminate()
            server.wait()
    kv = dict(x.split("=") for x in out.split())
    return {"rps": float(kv["rps"]), "p50_us": float(kv["p50_us"]), "p99_us": float(kv["p99_us"])}


ALLOCATORS = {
    "jemalloc": "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2",
    "mimalloc": "/usr/lib/x86_64-linux-gnu/libmimalloc.so.2",
    "tcmalloc": "/usr/lib/x86_64-linux-gnu/libtcmalloc.so.4",
}


def compose_preload(args, allocator):
    """The LD_PRELOAD value, from the project's own helper when it is built."""
    helper = os.path.join(args.build, "runtime", "booster-preload")
    if os.path.exists(helper):
        return sh([helper, "--allocator", allocator, "--lib", args.lib]).strip()
    return f"{ALLOCATORS[allocator]}:{args.lib}"


def alloc_round(allocator, args):
    exe = os.path.join(args.build, "bench", "runtime", "booster_bench_alloc")
    lib = compose_preload(args, allocator) if allocator != "glibc" else None
    out = sh([exe, str(args.alloc_threads), str(args.alloc_seconds)], env=preload_env(lib, {}))
    kv = dict(x.split("=") for x in out.split())
    return {"ops_per_s": float(kv["ops_per_s"]), "max_rss_kb": float(kv["max_rss_kb"]),
            "preload": lib or ""}


def median_of(rounds, key):
    return statistics.median(r[key] for r in rounds)


def ratio(b, x):
    """boosted / baseline; small ratios keep three significant digits."""
    if not b:
        return "n/a"
    r = x / b
    return f"{r:.2f}x" if r >= 0.1 else f"{r:.3g}x"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--lib", default=None, help="libbooster.so (default <build>/runtime/libbooster.so)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--only", default="backlog,nodelay,alloc")
    p.add_argument("--seconds", type=int, default=8, help="wrk duration per round")
    p.add_argument("--connections", type=int, default=100)
    p.add_argument("--wrk-threads", type=int, default=2)
    p.add_argument("--nodelay-seconds", type=float, default=3)
    p.add_argument("--alloc-threads", type=int, default=4)
    p.add_argument("--alloc-seconds", type=float, default=3)
    p.add_argument("--markdown", help="also write the tables to this file")
    args = p.parse_args()
    args.build = os.path.abspath(args.build)
    args.lib = os.path.abspath(args.lib or os.path.join(args.build, "runtime", "libbooster.so"))
    if not os.path.exists(args.lib):
        sys.exit(f"run.py: {args.lib} not found: build the project first (cmake --build build)")
    for tool in ("wrk", "ip", "ss"):
        if not shutil.which(tool):
            sys.exit(f"run.py: {tool} not found: run scripts/bootstrap.sh")
    only = set(args.only.split(","))
    lines = [f"Machine: {os.cpu_count()} CPUs, kernel {os.uname().release}; "
             f"{args.rounds} rounds per arm, alternating, median reported.", ""]

    def emit(text=""):
        print(text, flush=True)
        lines.append(text)

    with Netns() as ns:
        if "backlog" in only:
            base, boost = [], []
            for i in range(args.rounds):
                base.append(backlog_round(ns, args.lib, False, args))
                boost.append(backlog_round(ns, args.lib, True, args))
                print(f"  backlog round {i + 1}: baseline {base[-1]} boosted {boost[-1]}",
                      file=sys.stderr, flush=True)
            emit(f"### Listen backlog: python3 -m http.server, wrk -t{args.wrk_threads} "
                 f"-c{args.connections} -d{args.seconds}s, Connection: close")
            emit("")
            emit("| metric | baseline | BOOSTER_LISTEN_BACKLOG=4096 | ratio |")
            emit("|---|---|---|---|")
            emit(f"| listen backlog (ss Send-Q) | {median_of(base, 'backlog'):.0f} | "
                 f"{median_of(boost, 'backlog'):.0f} | |")
            for key, label in (("rps", "requests/s"), ("p50_us", "p50 latency (ms)"),
                               ("p99_us", "p99 latency (ms)")):
                b, x = median_of(base, key), median_of(boost, key)
                scale = 1e3 if key.endswith("_us") else 1
                emit(f"| {label} | {b / scale:,.1f} | {x / scale:,.1f} | {ratio(b, x)} |")
            emit(f"| ListenOverflows | {median_of(base, 'listen_overflows'):,.0f} | "
                 f"{median_of(boost, 'listen_overflows'):,.0f} | |")
            emit(f"| wrk socket errors | {median_of(base, 'socket_errors'):,.0f} | "
                 f"{median_of(boost, 'socket_errors'):,.0f} | |")
            emit("")
        if "nodelay" in only:
            base, boost = [], []
            for _ in range(args.rounds):
                base.append(nodelay_round(ns, args.lib, False, args))
                boost.append(nodelay_round(ns, args.lib, True, args))
            emit(f"### Nagle + delayed ACK: two-write request/response, 4 connections, "
                 f"{args.nodelay_seconds:g}s")
            emit("")
            emit("| metric | baseline | BOOSTER_TCP_NODELAY=1 | ratio |")
            emit("|---|---|---|---|")
            for key, label in (("rps", "requests/s"), ("p50_us", "p50 latency (us)"),
                               ("p99_us", "p99 latency (us)")):
                b, x = median_of(base, key), median_of(boost, key)
                emit(f"| {label} | {b:,.0f} | {x:,.0f} | {ratio(b, x)} |")
            emit("")
    if "alloc" in only:
        results = {name: [] for name in ["glibc", *ALLOCATORS]}
        for _ in range(args.rounds):
            for name in results:
                results[name].append(alloc_round(name, args))
        emit(f"### Allocator: alloc_churn, {args.alloc_threads} threads, {args.alloc_seconds:g}s "
             f"(cross-thread frees)")
        emit("")
        emit("| allocator | ops/s | ratio | max RSS (MiB) | ratio | LD_PRELOAD |")
        emit("|---|---|---|---|---|---|")
        b_ops = median_of(results["glibc"], "ops_per_s")
        b_rss = median_of(results["glibc"], "max_rss_kb")
        for name, rounds in results.items():
            ops, rss = median_of(rounds, "ops_per_s"), median_of(rounds, "max_rss_kb")
            emit(f"| {name} | {ops:,.0f} | {ratio(b_ops, ops)} | {rss / 1024:.1f} | "
                 f"{ratio(b_rss, rss)} | `{rounds[0]['preload'] or '(none)'}` |")
        emit("")
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
