#!/usr/bin/env python3
"""The demo's load: bursts of fresh connections through the Service, so both arms serve
requests and an accept queue too small for bursts shows up (listen overflows).

Every `--period` seconds, `--burst` clients each open a new connection, send
GET `--path` (default /work?ms=1: 1 ms of CPU in the app) and read the answer: a burst of
simultaneous connection attempts, about burst/period requests a second in all.

  scripts/demo/load.py 10.96.12.34 [--port 80] [--burst 24] [--period 0.05] [--path /alloc?kb=256]
"""
import argparse
import socket
import threading
import time


def client(host, port, period, epoch, stop, path):
    request = f"GET {path} HTTP/1.0\r\nHost: checkout\r\n\r\n".encode()
    while not stop.is_set():
        try:
            with socket.create_connection((host, port), timeout=3) as s:
                s.sendall(request)
                while s.recv(4096):
                    pass
        except OSError:
            pass
        # The next common tick: every client connects at the same moments.
        ticks = int((time.monotonic() - epoch) / period) + 1
        stop.wait(max(0.0, epoch + ticks * period - time.monotonic()))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("host")
    p.add_argument("--port", type=int, default=80)
    p.add_argument("--burst", type=int, default=24)
    p.add_argument("--period", type=float, default=0.05)
    p.add_argument("--path", default="/work?ms=1")
    a = p.parse_args()
    stop = threading.Event()
    epoch = time.monotonic()
    threads = [threading.Thread(target=client,
                                args=(a.host, a.port, a.period, epoch, stop, a.path),
                                daemon=True) for _ in range(a.burst)]
    for t in threads:
        t.start()
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        stop.set()


if __name__ == "__main__":
    main()
