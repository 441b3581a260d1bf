#!/usr/bin/env python3
"""Tables, goals and plot of bench/cluster/search.sh (no plotting library needed).

Reads WORK/points.jsonl (one open-loop window a line), WORK/profile-done.json (the
profile once its search was Done) and WORK/events.txt; writes OUT (JSON) and OUT.svg and
prints markdown tables.

  searchreport.py WORK OUT --meta JSON
"""
import json
import math
import statistics
import sys


def load(work):
    points = [json.loads(l) for l in open(f"{work}/points.jsonl") if l.strip()]
    profile = json.load(open(f"{work}/profile-done.json"))
    events = open(f"{work}/events.txt").read().splitlines()
    return points, profile, events


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def summary(points, meta, search):
    r70 = [p for p in points if p["kind"] == "r70"]
    arms = {}
    for config in ("baseline", "found"):
        ws = [p for p in r70 if p["config"] == config]
        arms[config] = {
            "windows": len(ws),
            "rate": ws[0]["rate"] if ws else None,
            "cpu_ms_per_request": med([w["cpu_ms_per_request"] for w in ws]),
            "cpu_ms_per_request_all": [round(w["cpu_ms_per_request"], 4) for w in ws],
            "p99_ms": med([w["p99_ms"] for w in ws]),
            "p99_ms_all": [round(w["p99_ms"], 2) for w in ws],
            "p50_ms": med([w["p50_ms"] for w in ws]),
            "errors": sum(w["errors"] for w in ws),
            "env": ws[0]["env"] if ws else {},
            "runtime_gomaxprocs": ws[0]["runtime_gomaxprocs"] if ws else None,
        }
    cap_b, cap_f = float(meta["capacity_baseline"]), float(meta["capacity_found"])
    trials = search.get("trials", [])
    out = {
        "r70": arms,
        "cpu_per_request_ratio": arms["found"]["cpu_ms_per_request"] / arms["baseline"]["cpu_ms_per_request"],
        "p99_ratio_at_r70": arms["found"]["p99_ms"] / arms["baseline"]["p99_ms"],
        "capacity": {"baseline": cap_b, "found": cap_f, "ratio": cap_f / cap_b if cap_b else None},
        "trials": len(trials),
        "search_seconds": int(meta["search_seconds"]),
    }
    out["goals"] = {
        "cpu_per_request_at_most_0.8x": out["cpu_per_request_ratio"] <= 0.8,
        "capacity_at_least_1.25x": (out["capacity"]["ratio"] or 0) >= 1.25,
        "at_most_8_trials": len(trials) <= 8,
        "search_at_most_30_min": out["search_seconds"] <= 1800,
    }
    return out


def fmt_value(v):
    return v if isinstance(v, str) else json.dumps(v)


def tables(points, meta, search, s, events):
    lines = []
    obj = meta["p99_objective_ms"]
    lines.append(f"Run {meta['run']}: usersapi (n={meta['users_n']}), 1 pod, CPU limit "
                 f"{meta['cpu_limit']}, memory {meta['memory_limit']}; open loop, {meta['conns']} "
                 f"connections, {meta['seconds']} s windows after {meta['warmup']} s; "
                 f"{meta['nproc']} CPUs, kernel {meta['kernel']}, {meta['go']}.\n")
    lines.append(f"At 70% of the as-deployed capacity ({meta['r70']} requests/s), median of "
                 f"{s['r70']['baseline']['windows']} windows each:\n")
    lines.append("| | as deployed | found by the search | ratio |")
    lines.append("|---|---|---|---|")
    b, f = s["r70"]["baseline"], s["r70"]["found"]
    lines.append(f"| CPU per request (ms) | {b['cpu_ms_per_request']:.4f} {b['cpu_ms_per_request_all']} "
                 f"| {f['cpu_ms_per_request']:.4f} {f['cpu_ms_per_request_all']} "
                 f"| **{s['cpu_per_request_ratio']:.2f}x** |")
    lines.append(f"| p99 (ms) | {b['p99_ms']:.2f} {b['p99_ms_all']} | {f['p99_ms']:.2f} {f['p99_ms_all']} "
                 f"| {s['p99_ratio_at_r70']:.2f}x |")
    lines.append(f"| p50 (ms) | {b['p50_ms']:.2f} | {f['p50_ms']:.2f} | |")
    lines.append(f"| errors | {b['errors']} | {f['errors']} | |")
    lines.append(f"| Go environment | {b['env'] or '-'} | {f['env'] or '-'} | |")
    c = s["capacity"]
    ratio = f"**{c['ratio']:.2f}x**" if c["ratio"] else "-"
    lines.append(f"| capacity at p99 <= {obj} ms (requests/s) | {c['baseline']:.0f} | {c['found']:.0f} | {ratio} |")
    lines.append("")
    lines.append(f"The search: {s['trials']} trials in {s['search_seconds'] // 60} min "
                 f"{s['search_seconds'] % 60} s, under the R70 load; best found "
                 f"`{json.dumps(search.get('best', {}).get('runtime', {}))}`.\n")
    lines.append("| trial | change | result | reason | objective (CPU per request) better by |")
    lines.append("|---|---|---|---|---|")
    for t in search.get("trials", []):
        imp = t.get("objectiveImprovementPercent")
        lines.append(f"| {t.get('number')} | `{t.get('knob')}` = {fmt_value(t.get('value'))} | "
                     f"{t.get('result', '-')} | {t.get('reason', '-')} | "
                     f"{'-' if imp is None else f'{imp:+.1f}%'} |")
    for k in search.get("skipped", []):
        lines.append(f"| - | `{k.get('knob')}` = {fmt_value(k.get('value'))} | skipped | {k.get('reason')} | - |")
    lines.append("")
    sweep = {}
    for p in points:
        if p["kind"].startswith("sweep-"):
            sweep.setdefault(int(p["kind"][6:]), {})[p["config"]] = p
    if sweep:
        lines.append("GOMAXPROCS 1 against Go's default (2 at this limit), open loop, by share of "
                     "the as-deployed capacity:\n")
        lines.append("| load | requests/s | p99 default (ms) | p99 GOMAXPROCS=1 (ms) | ratio | CPU/request default (ms) | CPU/request 1 (ms) | throttled periods default / 1 |")
        lines.append("|---|---|---|---|---|---|---|---|")
        for pct in sorted(sweep):
            d, o = sweep[pct].get("gomaxprocs-default"), sweep[pct].get("gomaxprocs-1")
            if not d or not o:
                continue
            lines.append(f"| {pct}% | {d['rate']:.0f} | {d['p99_ms']:.2f} | {o['p99_ms']:.2f} | "
                         f"{o['p99_ms'] / d['p99_ms']:.2f}x | {d['cpu_ms_per_request']:.4f} | "
                         f"{o['cpu_ms_per_request']:.4f} | {d['nr_throttled']}/{d['nr_periods']} / "
                         f"{o['nr_throttled']}/{o['nr_periods']} |")
        lines.append("")
    lines.append("Goals: " + ", ".join(f"{k} {'met' if v else 'NOT met'}" for k, v in s["goals"].items()))
    return "\n".join(lines)


def svg(points, meta, path):
    W, H, M = 900, 380, 60
    FONT = 'font-family="DejaVu Sans, Arial, sans-serif"'
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}">',
           f'<rect width="{W}" height="{H}" fill="white"/>']

    def text(x, y, s, size=12, anchor="middle"):
        s = s.replace("&", "&amp;").replace("<", "&lt;")
        return f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" {FONT}>{s}</text>'

    def panel(x0, title, series, xlabel):
        w, h = W / 2 - M - 20, H - 2 * M
        xs = [x for _, pts, _ in series for x, _ in pts]
        ys = [y for _, pts, _ in series for _, y in pts if y > 0]
        if not xs or not ys:
            return
        x_lo, x_hi = 0, max(xs) * 1.05
        y_lo, y_hi = math.log10(min(ys) / 1.5), math.log10(max(ys) * 1.5)
        px = lambda x: x0 + w * (x - x_lo) / (x_hi - x_lo)
        py = lambda y: M + h - h * (math.log10(max(y, 1e-3)) - y_lo) / (y_hi - y_lo)
        out.append(f'<rect x="{x0}" y="{M}" width="{w:.0f}" height="{h:.0f}" fill="none" stroke="#888"/>')
        out.append(text(x0 + w / 2, M - 12, title, 13))
        out.append(text(x0 + w / 2, M + h + 34, xlabel, 11))
        out.append(text(x0 - 40, M + h / 2, "p99 (ms, log)", 11, "middle"))
        for e in range(math.floor(y_lo), math.ceil(y_hi) + 1):
            for m in (1, 2, 5):
                v = m * 10 ** e
                if y_lo <= math.log10(v) <= y_hi:
                    out.append(f'<line x1="{x0}" x2="{x0 + w:.0f}" y1="{py(v):.1f}" y2="{py(v):.1f}" stroke="#eee"/>')
                    out.append(text(x0 - 4, py(v) + 4, f"{v:g}", 10, "end"))
        for k in range(6):
            v = x_hi * k / 5
            out.append(text(px(v), M + h + 16, f"{v:.0f}", 10))
        obj = float(meta["p99_objective_ms"])
        if y_lo <= math.log10(obj) <= y_hi:
            out.append(f'<line x1="{x0}" x2="{x0 + w:.0f}" y1="{py(obj):.1f}" y2="{py(obj):.1f}" stroke="#c33" stroke-dasharray="4 3"/>')
            out.append(text(x0 + w - 4, py(obj) - 4, f"objective {obj:g} ms", 10, "end"))
        for i, (label, pts, color) in enumerate(series):
            pts = sorted(pts)
            out.append('<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>' % (
                color, " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in pts)))
            for x, y in pts:
                out.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" fill="{color}"/>')
            out.append(f'<rect x="{x0 + 10}" y="{M + 10 + 16 * i}" width="12" height="4" fill="{color}"/>')
            out.append(text(x0 + 28, M + 16 + 16 * i, label, 11, "start"))

    cap = lambda c: [(p["rate"], p["p99_ms"]) for p in points if p["config"] == c and p["kind"] == "capacity"]
    panel(M + 10, "Capacity sweep: p99 by arrival rate", [
        ("as deployed", cap("baseline"), "#9a9a9a"), ("found by the search", cap("found"), "#2b7bb9")],
        "arrival rate (requests/s)")
    sw = lambda c: [(int(p["kind"][6:]), p["p99_ms"]) for p in points if p["config"] == c and p["kind"].startswith("sweep-")]
    panel(W / 2 + M, f"GOMAXPROCS at {meta['cpu_limit']}: p99 by load", [
        ("Go's default (2)", sw("gomaxprocs-default"), "#9a9a9a"), ("GOMAXPROCS=1", sw("gomaxprocs-1"), "#d9822b")],
        "% of the as-deployed capacity")
    out.append("</svg>")
    open(path, "w").write("\n".join(out) + "\n")


def main():
    work, out_path = sys.argv[1], sys.argv[2]
    meta = json.loads(sys.argv[sys.argv.index("--meta") + 1]) if "--meta" in sys.argv else {}
    points, profile, events = load(work)
    search = profile.get("status", {}).get("search", {})
    s = summary(points, meta, search)
    report = {"meta": meta, "summary": s, "search": search, "events": events, "points": points}
    json.dump(report, open(out_path, "w"), indent=1)
    svg(points, meta, out_path + ".svg")
    print(tables(points, meta, search, s, events))


if __name__ == "__main__":
    main()
