#!/usr/bin/env python3
"""Prints a verdict's evidence (status.lastDecision, JSON on stdin) as a table: per metric,
each arm's windows and median, the change, the p-value and the metric's verdict.

  kubectl get bp checkout -o jsonpath='{.status.lastDecision}' | scripts/demo/evidence.py
"""
import json
import re
import sys


def arm(text):
    m = re.match(r"n=(\d+) median=(\S+)", text or "")
    return (m.group(1), m.group(2)) if m else ("-", "-")


def main():
    d = json.load(sys.stdin)
    ev = d.get("evidence", {})
    print(f"step {d.get('step')}: {d.get('verdict')} ({d.get('reason')}): {d.get('message')}")
    metrics = sorted({k.split(".")[0] for k in ev if "." in k})
    if not metrics:
        return
    rows = [("metric", "baseline n", "baseline median", "canary n", "canary median",
             "change %", "p-value", "verdict")]
    for m in metrics:
        bn, bm = arm(ev.get(m + ".baseline"))
        cn, cm = arm(ev.get(m + ".canary"))
        rows.append((m, bn, bm, cn, cm, ev.get(m + ".changePercent", "-"),
                     ev.get(m + ".pValue", "-"), ev.get(m + ".verdict", "-")))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  " + "  ".join(c.ljust(w) for c, w in zip(r, widths)))


if __name__ == "__main__":
    main()
