#!/usr/bin/env python3
"""A busy workload for the booster-agent overhead benchmark.

One thread spins counting loop iterations, 32 threads sleep (so the agent has many
threads to sample), and a small HTTP server serves a Prometheus /metrics text (a real
scrape of a Go program, from sidecar/testdata) for the agent's app scraper.
Prints iterations per second when done.

usage: workload.py SECONDS METRICS_FILE PORT_FILE
"""
import http.server
import sys
import threading
import time

seconds = float(sys.argv[1])
metrics = open(sys.argv[2], "rb").read()
port_file = sys.argv[3]


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(metrics)))
        self.end_headers()
        self.wfile.write(metrics)

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
threading.Thread(target=server.serve_forever, daemon=True).start()
with open(port_file + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
import os
os.rename(port_file + ".tmp", port_file)

for _ in range(32):
    threading.Thread(target=time.sleep, args=(seconds + 60,), daemon=True).start()

n = 0
end = time.monotonic() + seconds
while True:
    for _ in range(10000):
        n += 1
    if time.monotonic() >= end:
        break
print(f"{n / seconds:.0f}")
