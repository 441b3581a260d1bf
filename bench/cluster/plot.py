#!/usr/bin/env python3
"""Draws bench/cluster/run.sh's results as an SVG (no plotting library needed).

One panel per keep-alive case (the Go JSON API, the CPU-only handler if measured):
promoted / baseline per round (dots) and the median (bar) for p50, p99, requests/s and
throttled time, with the goal lines (p99 <= 0.4x, requests/s >= 0.95x). Last: the
short-connection burst, client p99 per round as deployed and promoted
(log scale), with the listen overflows of each window.

  plot.py RESULTS.json OUT.svg
"""
import json
import math
import statistics
import sys

W, H = 900, 400
FONT = 'font-family="DejaVu Sans, Arial, sans-serif"'
BASE_C, PROM_C = "#9a9a9a", "#2b7bb9"


def text(x, y, s, size=12, anchor="middle", extra=""):
    s = s.replace("&", "&amp;").replace("<", "&lt;")
    return f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" {FONT} {extra}>{s}</text>'


def ratio_panel(case, x0, y0, w, h, title):
    out = []
    metrics = [("p50", "p50"), ("p99", "p99"), ("rps", "requests/s"), ("throttled_s", "throttled time")]
    rs = case["ratios"]
    top = 2.5  # a ratio above it is drawn at the top edge with its value
    sy = lambda v: y0 + h - v / top * h
    out.append(f'<rect x="{x0}" y="{y0}" width="{w}" height="{h}" fill="none" stroke="#444"/>')
    t = 0.0
    while t <= top + 1e-9:
        out.append(f'<line x1="{x0 - 4}" x2="{x0}" y1="{sy(t):.1f}" y2="{sy(t):.1f}" stroke="#444"/>')
        out.append(text(x0 - 7, sy(t) + 4, f"{t:.1f}x", 11, "end"))
        t += 0.5
    out.append(f'<line x1="{x0}" x2="{x0 + w}" y1="{sy(1):.1f}" y2="{sy(1):.1f}" stroke="#444" stroke-dasharray="4 3"/>')
    bw = w / len(metrics)
    for i, (m, label) in enumerate(metrics):
        cx = x0 + bw * (i + 0.5)
        vals = [v for v in rs[m] if v is not None]
        med = statistics.median(vals)
        out.append(f'<rect x="{cx - bw * 0.25:.1f}" y="{sy(min(med, top)):.1f}" width="{bw * 0.5:.1f}" '
                   f'height="{sy(0) - sy(min(med, top)):.1f}" fill="{PROM_C}" fill-opacity="0.35" stroke="{PROM_C}"/>')
        clipped = []
        for j, v in enumerate(vals):
            dx = (j - (len(vals) - 1) / 2) * 7
            if v > top:
                clipped.append(v)
                out.append(f'<path d="M{cx + dx - 3.5:.1f},{sy(top) + 6:.1f} l3.5,-6 l3.5,6 z" fill="{PROM_C}"/>')
            else:
                out.append(f'<circle cx="{cx + dx:.1f}" cy="{sy(v):.1f}" r="3.2" fill="{PROM_C}"/>')
        if clipped:
            out.append(text(cx, sy(top) + 18, ", ".join(f"{v:.1f}x" for v in sorted(clipped)), 9,
                            extra='fill="#555"'))
        out.append(text(cx, y0 + h + 16, label, 12))
        out.append(text(cx, y0 + h + 31, f"{med:.2f}x", 12, extra='font-weight="bold"'))
        goal = {"p99": (0.4, "goal <= 0.4x", -4), "rps": (0.95, "goal >= 0.95x", 13)}.get(m)
        if goal:
            gy = sy(goal[0])
            out.append(f'<line x1="{cx - bw * 0.45:.1f}" x2="{cx + bw * 0.45:.1f}" y1="{gy:.1f}" '
                       f'y2="{gy:.1f}" stroke="#d62728" stroke-width="1.5"/>')
            out.append(text(cx + bw * 0.45, gy + goal[2], goal[1], 10, "end", 'fill="#d62728"'))
    out.append(text(x0 + w / 2, y0 - 26, title, 14, extra='font-weight="bold"'))
    out.append(text(x0 + w / 2, y0 - 10, f"bar and figure: median of {case['rounds']} rounds; "
                    "dots: each round", 11))
    return out


def burst_panel(windows, x0, y0, w, h):
    out = []
    rounds = sorted({r["round"] for r in windows})
    by = {(r["arm"], r["round"]): r for r in windows}
    vals = [r["load"]["p99_ms"] for r in windows]
    lo = 10 ** (math.floor(math.log10(min(vals))) - 1)
    hi = 10 ** math.ceil(math.log10(max(vals) * 3))  # room for the labels above the bars
    sy = lambda v: y0 + h - (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo)) * h
    out.append(f'<rect x="{x0}" y="{y0}" width="{w}" height="{h}" fill="none" stroke="#444"/>')
    d = lo
    while d <= hi * 1.0001:
        out.append(f'<line x1="{x0 - 4}" x2="{x0 + w}" y1="{sy(d):.1f}" y2="{sy(d):.1f}" stroke="#ddd"/>')
        out.append(text(x0 - 7, sy(d) + 4, f"{d:g} ms", 11, "end"))
        d *= 10
    gw = w / len(rounds)
    for i, n in enumerate(rounds):
        gx = x0 + gw * i
        for k, (arm, colour) in enumerate((("baseline", BASE_C), ("promoted", PROM_C))):
            r = by.get((arm, n))
            if not r:
                continue
            bx = gx + gw * (0.15 + 0.36 * k)
            v = r["load"]["p99_ms"]
            out.append(f'<rect x="{bx:.1f}" y="{sy(v):.1f}" width="{gw * 0.34:.1f}" '
                       f'height="{sy(lo) - sy(v):.1f}" fill="{colour}"/>')
            out.append(text(bx + gw * 0.17, sy(v) - 18, f"{v:,.0f} ms", 11))
            out.append(text(bx + gw * 0.17, sy(v) - 5, f"{r['listen_overflows']:,} ovf", 10,
                            extra='fill="#555"'))
        out.append(text(gx + gw / 2, y0 + h + 16, f"round {n}", 12))
    out.append(text(x0 + w / 2, y0 - 26, "Short-connection bursts: client p99", 14,
                    extra='font-weight="bold"'))
    out.append(text(x0 + w / 2, y0 - 10, "grey: as deployed, blue: promoted; "
                    "ovf: listen overflows", 11))
    return out


def main():
    res = json.load(open(sys.argv[1]))
    meta = res.get("meta", {})
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}">',
             f'<rect width="{W}" height="{H}" fill="white"/>']
    x = 60
    titles = {"users": "Go JSON API (/api/v1/users): promoted / baseline",
              "work": "Go CPU-only handler (/work): promoted / baseline"}
    for case in ("users", "work"):
        if case in res["cases"]:
            parts += ratio_panel(res["cases"][case], x, 70, 360, 240, titles[case])
            x += 460
    burst = [r for r in res["windows"] if r["case"] == "burst"]
    if burst:
        parts += burst_panel(burst, x + 10, 70, 330, 240)
        x += 430
    parts[0] = parts[0].replace(f'width="{W}"', f'width="{x}"').replace(f"0 0 {W} {H}", f"0 0 {x} {H}")
    parts[1] = parts[1].replace(f'width="{W}"', f'width="{x}"')
    parts.append(text(x / 2, H - 12, f"bench/cluster/run.sh, run {meta.get('run', '?')}: e2e cluster, "
                      f"{meta.get('replicas', '?')} pods per service, CPU limit {meta.get('cpu_limit', '?')}, "
                      f"{meta.get('nproc', '?')}-vCPU machine", 11, extra='fill="#555"'))
    parts.append("</svg>")
    open(sys.argv[2], "w").write("\n".join(parts) + "\n")


if __name__ == "__main__":
    main()
