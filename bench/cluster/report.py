#!/usr/bin/env python3
"""Turns bench/cluster/run.sh's per-window records into ratios promoted/baseline.

Per round, ratio = promoted window / baseline window of that round (the two measured
minutes apart on the same pods' Deployment); reported as the median over rounds with the
range (min-max). Prints markdown tables and writes every window and ratio as JSON.

  report.py WORK_DIR OUT.json [--meta JSON]
"""
import argparse
import glob
import json
import os
import statistics


def ratio(a, b):
    if b == 0:
        return None  # no baseline to compare with (e.g. no throttling in either window)
    return a / b


def fmt_ratio(xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return "-"
    if len(xs) == 1:
        return f"{xs[0]:.2f}x"
    return f"**{statistics.median(xs):.2f}x** ({min(xs):.2f}-{max(xs):.2f})"


def split(r):
    c = r["load"].get("conns_per_pod")
    return "/".join(str(v) for v in sorted(c.values(), reverse=True)) if c else "-"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("work")
    ap.add_argument("out")
    ap.add_argument("--meta", default="{}")
    a = ap.parse_args()
    recs = [json.load(open(f)) for f in sorted(glob.glob(os.path.join(a.work, "*-*-*.json")))]
    out = {"meta": json.loads(a.meta), "windows": recs, "cases": {}}
    for case in ("users", "work", "burst"):
        rs = [r for r in recs if r["case"] == case]
        if not rs:
            continue
        rounds = sorted({r["round"] for r in rs})
        by = {(r["arm"], r["round"]): r for r in rs}
        pairs = [(by[("baseline", n)], by[("promoted", n)]) for n in rounds
                 if ("baseline", n) in by and ("promoted", n) in by]
        metrics = {
            "p50": lambda r: r["load"]["p50_ms"],
            "p99": lambda r: r["load"]["p99_ms"],
            "rps": lambda r: r["load"]["rps"],
            "throttled_s": lambda r: r["throttled_s"],
            "throttled_periods": lambda r: r["nr_throttled"] / r["nr_periods"] if r["nr_periods"] else 0,
            "cpu_per_request_ms": lambda r: 1e3 * r["cpu_s"] / max(1, r["load"]["requests"]),
            "errors": lambda r: r["load"]["errors"],
            "listen_overflows": lambda r: r["listen_overflows"],
        }
        ratios = {m: [ratio(f(p), f(b)) for b, p in pairs] for m, f in metrics.items()}
        promote_s = []
        for n in rounds:
            f = os.path.join(a.work, f"{case}-promote-{n}.seconds")
            if os.path.exists(f):
                promote_s.append(int(open(f).read().split()[-1]))
        out["cases"][case] = {"rounds": len(pairs), "ratios": ratios, "promote_seconds": promote_s}
        title = {"users": "Go JSON API, GOMAXPROCS auto (keep-alive, closed loop)",
                 "work": "Go CPU-only handler (/work), GOMAXPROCS auto (keep-alive, closed loop)",
                 "burst": "Short-connection bursts, somaxconn + listenBacklog"}[case]
        print(f"\n### {title}: every window\n")
        print("| round | arm | req/s | p50 ms | p99 ms | errors | throttled s | throttled periods | "
              "CPU ms/req | overflows | GOMAXPROCS / backlog | connections per pod | load average |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for b, p in pairs:
            for r in (b, p):
                env = sorted({str(x["env"].get("GOMAXPROCS", "default")) +
                              (f" (runtime: {x['runtime_gomaxprocs']})" if x.get("runtime_gomaxprocs") else "")
                              if case != "burst"
                              else str(x["listen_backlog"]) for x in r["pods"].values()})
                print(f"| {r['round']} | {r['arm']} | {r['load']['rps']:.0f} | "
                      f"{r['load']['p50_ms']:.2f} | {r['load']['p99_ms']:.2f} | {r['load']['errors']} | "
                      f"{r['throttled_s']:.2f} | {r['nr_throttled']}/{r['nr_periods']} | "
                      f"{metrics['cpu_per_request_ms'](r):.3f} | {r['listen_overflows']} | "
                      f"{', '.join(env)} | {split(r)} | {r['loadavg_before'].split()[0]} |")
        print(f"\n### {title}: promoted / baseline, median over {len(pairs)} rounds (range)\n")
        print("| p50 | p99 | requests/s | throttled time | throttled periods | CPU per request | listen overflows (baseline -> promoted) |")
        print("|---|---|---|---|---|---|---|")
        ov = ", ".join(f"{b['listen_overflows']} -> {p['listen_overflows']}" for b, p in pairs)
        print(f"| {fmt_ratio(ratios['p50'])} | {fmt_ratio(ratios['p99'])} | {fmt_ratio(ratios['rps'])} | "
              f"{fmt_ratio(ratios['throttled_s'])} | {fmt_ratio(ratios['throttled_periods'])} | "
              f"{fmt_ratio(ratios['cpu_per_request_ms'])} | {ov} |")
        print(f"\nProfile applied -> Promoted with only promoted pods serving: {promote_s} s")
    json.dump(out, open(a.out, "w"), indent=1)


if __name__ == "__main__":
    main()
