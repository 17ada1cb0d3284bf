#!/usr/bin/env python3
"""A collector stand-in for benchmarks: accepts OTLP/HTTP exports (POST /v1/traces, /v1/logs),
answers 200 at once, and prints how many exports and bytes each path got when stopped.

    bench/otlp-sink.py PORT

A tool that server.sh's export settings send to, not a benchmark: it has no goal of its own.
"""
import signal
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

got = {}


class Sink(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        exports, size = got.get(self.path, (0, 0))
        got[self.path] = (exports + 1, size + len(body))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def report(*_):
    for path, (exports, size) in sorted(got.items()):
        print(f"{path}: {exports} exports, {size} bytes", flush=True)
    sys.exit(0)


signal.signal(signal.SIGTERM, report)
ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Sink).serve_forever()
