"""A tiny instrumented HTTP application for the agent's tests (standard library only).

Serves, on 127.0.0.1:<port> (argv[1], 0 = any free port):
  GET /         200 "ok"
  GET /fail     500
  GET /metrics  Prometheus text: the histogram http_request_duration_seconds{code} and the
                counter http_requests_total{code}, as client libraries name them
  GET /metrics-chunked  the same text in chunks of 100 bytes (Transfer-Encoding: chunked,
                the way Go's net/http answers an HTTP/1.1 client a body longer than its
                buffer); 505 to an HTTP/1.0 request, which cannot read chunks
  GET /echo...  200 "<method> <path> <version>" of the request itself
and a second listener on a free port that answers 404 to everything (a port that is not
the metrics endpoint, for port discovery). Prints "ports <app> <other>" once both listen.
Exits by itself after argv[2] seconds (default 300) so a crashed test leaves nothing.
"""
import http.server
import sys
import threading
import time

BOUNDS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0)
lock = threading.Lock()
series = {}  # code -> [bucket counts..., +Inf count, sum]


def observe(code, seconds):
    with lock:
        s = series.setdefault(code, [0] * (len(BOUNDS) + 1) + [0.0])
        for i, b in enumerate(BOUNDS):
            if seconds <= b:
                s[i] += 1
        s[len(BOUNDS)] += 1
        s[-1] += seconds


def exposition():
    out = ["# HELP http_request_duration_seconds Time to serve a request.",
           "# TYPE http_request_duration_seconds histogram"]
    with lock:
        for code, s in sorted(series.items()):
            for i, b in enumerate(BOUNDS):
                out.append('http_request_duration_seconds_bucket{code="%d",le="%g"} %d'
                           % (code, b, s[i]))
            out.append('http_request_duration_seconds_bucket{code="%d",le="+Inf"} %d'
                       % (code, s[len(BOUNDS)]))
            out.append('http_request_duration_seconds_sum{code="%d"} %.9f' % (code, s[-1]))
            out.append('http_request_duration_seconds_count{code="%d"} %d'
                       % (code, s[len(BOUNDS)]))
        out += ["# HELP http_requests_total Requests served.",
                "# TYPE http_requests_total counter"]
        for code, s in sorted(series.items()):
            out.append('http_requests_total{code="%d"} %d' % (code, s[len(BOUNDS)]))
    return ("\n".join(out) + "\n").encode()


class App(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.path == "/metrics":
            body = exposition()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        if self.path == "/metrics-chunked":
            self.send_chunked(exposition())
            return
        if self.path.startswith("/echo"):
            body = ("%s %s %s\n" % (self.command, self.path, self.request_version)).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        start = time.perf_counter()
        code = 500 if self.path == "/fail" else 200
        body = b"ok\n" if code == 200 else b"boom\n"
        # Counted before the answer goes out: a client that scrapes /metrics right after
        # its request was answered always finds it there.
        observe(code, time.perf_counter() - start)
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def send_chunked(self, body):
        if self.request_version != "HTTP/1.1":
            self.send_error(505)
            return
        self.protocol_version = "HTTP/1.1"  # this response only; the connection then closes
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "close")
        self.end_headers()
        for i in range(0, len(body), 100):  # one write per chunk: separate chunks on the wire
            chunk = body[i:i + 100]
            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        self.wfile.write(b"0\r\n\r\n")
        self.close_connection = True


class NotMetrics(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        self.send_error(404)


def main():
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    lifetime = float(sys.argv[2]) if len(sys.argv) > 2 else 300.0
    app = http.server.ThreadingHTTPServer(("127.0.0.1", port), App)
    other = http.server.ThreadingHTTPServer(("127.0.0.1", 0), NotMetrics)
    for s in (app, other):
        threading.Thread(target=s.serve_forever, daemon=True).start()
    print("ports %d %d" % (app.server_address[1], other.server_address[1]), flush=True)
    time.sleep(lifetime)


if __name__ == "__main__":
    main()
