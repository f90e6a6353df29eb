#!/usr/bin/env python3
# SPDX-License-Identifier: BSL-1.0
"""memkit-bench serve mode while slow clients hold connections open.

  idle_connections_test.py MEMKIT_BENCH [SERVE_OPTION...]

Starts the server as serve_test.py does (4 workers), opens 300 connections that each send half a
request (a request line and one header, never the blank line that ends the headers) and then
wait; whenever the server closes one, it is opened again at once, so 300 stay pending for the whole
test. Meanwhile /healthz must answer within 1 s every quarter of a second and a `memkit-bench load`
run (4 connections, 5 s) must finish with zero failures. Prints the /healthz latencies, the load
run's figures and how long the server let a half request hold its connection. SERVE_OPTIONs are
added to the server's command line (to measure other limits by hand).
"""
import errno
import json
import selectors
import socket
import subprocess
import sys
import threading
import time

from serve_test import OPENER, Server, fail

SLOW_CLIENTS = 300
HALF_REQUEST = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n"
HEALTHZ_BOUND_S = 1.0
HEALTHZ_EVERY_S = 0.25
LOAD_SECONDS = 5


class SlowClients:
    """SLOW_CLIENTS connections that each sent HALF_REQUEST, reopened whenever the server closes
    one, from a thread of their own until stop()."""

    def __init__(self, port):
        self.port = port
        self.selector = selectors.DefaultSelector()
        self.opened_at = {}  # socket -> when its half request was sent
        self.held_s = []  # how long the server kept each closed one
        self.connect_failures = 0
        self.done = threading.Event()
        for _ in range(SLOW_CLIENTS):
            self.open()
        self.thread = threading.Thread(target=self.run)
        self.thread.start()

    def open(self):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.settimeout(5)
        try:
            sock.connect(("127.0.0.1", self.port))
            sock.sendall(HALF_REQUEST)
        except OSError:
            self.connect_failures += 1
            sock.close()
            return
        sock.setblocking(False)
        self.opened_at[sock] = time.monotonic()
        self.selector.register(sock, selectors.EVENT_READ)

    def run(self):
        while not self.done.is_set():
            for key, _ in self.selector.select(timeout=0.1):
                sock = key.fileobj
                try:
                    data = sock.recv(4096)
                except OSError as e:
                    data = b"" if e.errno != errno.EAGAIN else None
                if data is None:
                    continue
                # An answer (a 400 or 408) or a close: either way the server let go of it.
                self.held_s.append(time.monotonic() - self.opened_at.pop(sock))
                self.selector.unregister(sock)
                sock.close()
                if not self.done.is_set():
                    self.open()

    def stop(self):
        self.done.set()
        self.thread.join()
        for sock in list(self.opened_at):
            sock.close()


def healthz_probe(port, until, latencies):
    while time.monotonic() < until:
        started = time.monotonic()
        try:
            with OPENER.open("http://127.0.0.1:%d/healthz" % port, timeout=10) as r:
                ok = r.status == 200 and r.read() == b"ok\n"
        except OSError:
            ok = False
        latencies.append((time.monotonic() - started, ok))
        time.sleep(HEALTHZ_EVERY_S)


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))] if ordered else 0.0


def main(bench, serve_options):
    s = Server(bench, serve_options)
    slow = SlowClients(s.port)
    print("idle_connections_test: %d half requests pending (%d connects failed)" % (
        len(slow.opened_at), slow.connect_failures))
    latencies = []
    probe = threading.Thread(target=healthz_probe,
                             args=(s.port, time.monotonic() + LOAD_SECONDS + 1, latencies))
    probe.start()
    try:
        out = subprocess.run(
            [bench, "load", "--port", str(s.port), "--connections", "4", "--seconds",
             str(LOAD_SECONDS), "--variants", "memkit-arena,std"],
            stdout=subprocess.PIPE, text=True, timeout=LOAD_SECONDS + 25)
        load_status, report = out.returncode, json.loads(out.stdout or "{}")
    except subprocess.TimeoutExpired:
        load_status, report = None, {}
    probe.join()
    slow.stop()
    held = slow.held_s
    print("idle_connections_test: the server let go of %d half requests, held for %.2f s median, "
          "%.2f s at most" % (len(held), percentile(held, 50), max(held, default=0)))
    times = [t for t, _ in latencies]
    print("idle_connections_test: /healthz %d probes, %d answered ok, latency p50 %.1f ms, "
          "max %.1f ms (bound %.0f ms)" % (
              len(latencies), sum(ok for _, ok in latencies), 1e3 * percentile(times, 50),
              1e3 * max(times, default=0), 1e3 * HEALTHZ_BOUND_S))
    if load_status is None:
        print("idle_connections_test: the load run did not finish within %d s" % (
            LOAD_SECONDS + 25))
    else:
        print("idle_connections_test: load: %d requests (%.0f/s), %d failed: %s" % (
            report.get("requests", 0), report.get("requests_per_s", 0),
            report.get("failures", 0), report.get("failure_samples", [])[:2]))
    if not latencies or not all(ok and t < HEALTHZ_BOUND_S for t, ok in latencies):
        fail("/healthz did not always answer ok within %.0f ms" % (1e3 * HEALTHZ_BOUND_S))
    if load_status != 0 or report.get("failures", 1) != 0:
        fail("the load run under slow clients did not finish without failures")
    s.stop()


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    main(sys.argv[1], sys.argv[2:])
