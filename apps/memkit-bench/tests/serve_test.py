#!/usr/bin/env python3
# SPDX-License-Identifier: BSL-1.0
"""memkit-bench serve mode under test (docs/SERVE.md), driven from outside as a client would.

  serve_test.py load MEMKIT_BENCH    the load test: `memkit-bench load` in a second process, bad
                                     requests mixed in, /metrics counts against what was sent,
                                     resident memory, then SIGTERM with a request in flight
  serve_test.py errors MEMKIT_BENCH  every 400 and 404 with its exact JSON body

Each mode starts its own server on a free loopback port (--port 0; the server prints the port it
bound) and exits non-zero on the first check that fails.
"""
import json
import os
import re
import select
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

# Resident memory may grow this much between the end of the first load phase and the end of the
# second: by then every worker's malloc arena and every per-request policy size have been seen,
# so steady growth beyond it is a leak (a leak of one json-tree, 84 nodes of several KiB, per
# request would add over 100 MiB in the second phase of a Release build, over 10 MiB under ASan).
RSS_GROWTH_BOUND_KIB = 4 * 1024
LOAD_CONNECTIONS = 4  # as many as the server's workers: each keep-alive connection holds one
PHASE_SECONDS = (3, 6)
BAD_EVERY = 7  # one request in seven is a 400 or a 404

OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: no proxy


SERVERS = []  # started and not yet stopped: killed on failure, so none outlives the test


def fail(message):
    print("serve_test: FAILED: " + message, file=sys.stderr)
    for proc in SERVERS:
        if proc.poll() is None:
            proc.kill()
    sys.exit(1)


class Server:
    def __init__(self, bench, serve_options=()):
        env = dict(os.environ)
        # AddressSanitizer keeps 256 MiB of freed memory in quarantine by default, which would
        # read as growth; a smaller quarantine still catches a use of recently freed memory.
        # (Ignored by a binary built without it.)
        asan = env.get("ASAN_OPTIONS", "")
        env["ASAN_OPTIONS"] = (asan + ":" if asan else "") + "quarantine_size_mb=8"
        self.proc = subprocess.Popen(
            [bench, "--scale", "0.01", "serve", "--port", "0", "--workers",
             str(LOAD_CONNECTIONS), "--warmup", "1", *serve_options],
            stdout=subprocess.PIPE, text=True, env=env)
        SERVERS.append(self.proc)
        deadline = time.monotonic() + 120  # for the listening line and the warm-up
        line = ""
        while not line and time.monotonic() < deadline:
            ready, _, _ = select.select([self.proc.stdout], [], [], 1)
            if ready:
                line = self.proc.stdout.readline()
            if self.proc.poll() is not None:
                fail("the server exited with status %d before listening" % self.proc.returncode)
        match = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
        if not match:
            self.proc.kill()
            fail("no 'listening on' line from the server: %r" % line)
        self.port = int(match.group(1))
        print("serve_test: server pid %d on port %d" % (self.proc.pid, self.port))
        self.sent = {}  # (path label, code) -> requests this script made
        self.paths = ["/readyz", "/info"]  # until /info lists them all
        # It listens at once and warms up beside the listener: /run answers 503 until /readyz
        # answers 200.
        polls = 0
        while self.get("/readyz")[0] != 200:
            polls += 1
            if time.monotonic() > deadline:
                fail("/readyz not 200 within 120 s")
            time.sleep(0.05)
        print("serve_test: /readyz 200 after %d polls that answered 503" % polls)
        # The served paths, as /info lists them: the server counts every other path as "other".
        self.paths = json.loads(self.get("/info")[1])["paths"]

    def get(self, target):
        """\\returns (status, body) and counts the request as the server does."""
        try:
            with OPENER.open("http://127.0.0.1:%d%s" % (self.port, target), timeout=120) as r:
                status, body = r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            status, body = e.code, e.read().decode()
        path = target.split("?")[0]
        label = path if path in self.paths else "other"
        self.sent[(label, str(status))] = self.sent.get((label, str(status)), 0) + 1
        return status, body

    def metrics(self):
        """\\returns the request counters by (path, code) and the resident memory in KiB."""
        status, text = self.get("/metrics")
        if status != 200:
            fail("/metrics answered %d" % status)
        counts = {}
        rss = None
        for line in text.splitlines():
            m = re.match(r'memkit_bench_http_requests_total\{code="(\d+)",path="([^"]+)"\} (\S+)',
                         line)
            if m:
                counts[(m.group(2), m.group(1))] = int(float(m.group(3)))
            m = re.match(r"process_resident_memory_bytes (\S+)", line)
            if m:
                rss = int(float(m.group(1))) // 1024
        if rss is None:
            fail("/metrics has no process_resident_memory_bytes")
        # This scrape is counted once its answer is written, after its own text was made.
        counts[("/metrics", "200")] = counts.get(("/metrics", "200"), 0) + 1
        return counts, rss

    def stop(self, in_flight=None):
        """SIGTERM, optionally while `in_flight` (a path) is being served: it must still get 200."""
        answer = {}
        worker = None
        if in_flight:
            worker = threading.Thread(target=lambda: answer.update(r=self.get(in_flight)))
            worker.start()
            time.sleep(0.2)
        self.proc.send_signal(signal.SIGTERM)
        if worker:
            worker.join(60)
            status, body = answer.get("r", (0, ""))
            if status != 200 or not json.loads(body).get("hash_ok"):
                fail("the request in flight at SIGTERM got %d %s" % (status, body[:200]))
            print("serve_test: the request in flight at SIGTERM finished with 200")
        try:
            code = self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            fail("the server did not exit within 60 s of SIGTERM")
        if code != 0:
            fail("the server exited with status %d after SIGTERM" % code)
        print("serve_test: the server exited 0 after SIGTERM")


def load_test(bench):
    s = Server(bench)
    status, body = s.get("/info")
    if status != 200:
        fail("/info answered %d" % status)
    warm_rss = json.loads(body)["rss_after_warmup_kib"]
    client_counts = {}
    rss = []
    for i, seconds in enumerate(PHASE_SECONDS):
        started = time.monotonic()
        out = subprocess.run(
            [bench, "load", "--port", str(s.port), "--connections", str(LOAD_CONNECTIONS),
             "--seconds", str(seconds), "--bad-every", str(BAD_EVERY)],
            stdout=subprocess.PIPE, text=True, timeout=seconds + 120)
        report = json.loads(out.stdout)
        print("serve_test: phase %d: %d requests in %.1f s (%.0f/s), %d failed" % (
            i + 1, report["requests"], time.monotonic() - started, report["requests_per_s"],
            report["failures"]))
        if out.returncode != 0 or report["failures"] != 0:
            fail("the load client saw failures: %s" % report["failure_samples"])
        for path, codes in report["by_path_code"].items():
            for code, n in codes.items():
                client_counts[(path, code)] = client_counts.get((path, code), 0) + n
        counted, kib = s.metrics()
        rss.append(kib)
    expected = dict(client_counts)
    for key, n in s.sent.items():
        expected[key] = expected.get(key, 0) + n
    if counted != expected:
        fail("/metrics counts %s, but %s were sent" % (sorted(counted.items()),
                                                        sorted(expected.items())))
    print("serve_test: /metrics counts match the %d requests sent: %s" % (
        sum(expected.values()), sorted(expected.items())))
    print("serve_test: RSS after warm-up %d KiB, after phase 1 %d KiB, after phase 2 %d KiB "
          "(bound: phase 2 within %d KiB of phase 1)" % (warm_rss, rss[0], rss[1],
                                                          RSS_GROWTH_BOUND_KIB))
    if rss[1] - rss[0] > RSS_GROWTH_BOUND_KIB:
        fail("resident memory grew %d KiB under load" % (rss[1] - rss[0]))
    s.stop(in_flight="/run?workload=json-tree&variant=std&iters=10000")


# Every bad request and its exact answer.
ERRORS = [
    ("/run?workload=no-such&variant=std&iters=1", 400,
     {"error": "unknown workload 'no-such' (GET /info lists them)", "parameter": "workload",
      "value": "no-such"}),
    ("/run?workload=false-sharing&variant=std", 400,
     {"error": "workload 'false-sharing' is not served: it starts its own threads in every "
      "iteration and measures cache-line placement between them, not request handling",
      "parameter": "workload", "value": "false-sharing"}),
    ("/run?workload=json-tree&variant=no-such", 400,
     {"error": "unknown variant 'no-such' (GET /info lists them)", "parameter": "variant",
      "value": "no-such"}),
    ("/run?workload=json-tree&variant=memkit-pool", 400,
     {"error": "variant 'memkit-pool' does not run workload 'json-tree' (GET /info lists the "
      "variants of each)", "parameter": "variant", "value": "memkit-pool"}),
    ("/run?workload=json-tree&variant=mimalloc", 400,
     {"error": "variant 'mimalloc' is not served: a global malloc replacement runs only in batch "
      "mode, in its own process under LD_PRELOAD", "parameter": "variant", "value": "mimalloc"}),
    ("/run?workload=json-tree&variant=boost-pool", 400,
     {"error": "variant 'boost-pool' is not served: its container allocators draw from Boost's "
      "process-wide singleton pools, which are shared by every thread and keep their memory "
      "after the request", "parameter": "variant", "value": "boost-pool"}),
    ("/run?workload=json-tree&variant=std&iters=0", 400,
     {"error": "iters must be an integer from 1 to 10000", "parameter": "iters", "value": "0"}),
    ("/run?workload=json-tree&variant=std&iters=10001", 400,
     {"error": "iters must be an integer from 1 to 10000", "parameter": "iters",
      "value": "10001"}),
    ("/run?workload=json-tree&variant=std&iters=-5", 400,
     {"error": "iters must be an integer from 1 to 10000", "parameter": "iters", "value": "-5"}),
    ("/run?workload=json-tree&variant=std&iters=ten", 400,
     {"error": "iters must be an integer from 1 to 10000", "parameter": "iters", "value": "ten"}),
    ("/run?workload=json-tree&variant=std&iters=99999999999999999999999", 400,
     {"error": "iters must be an integer from 1 to 10000", "parameter": "iters",
      "value": "99999999999999999999999"}),
    ("/run?workload=json-tree&variant=std&iters=", 400,
     {"error": "iters must be an integer from 1 to 10000", "parameter": "iters", "value": ""}),
    ("/run?variant=std", 400,
     {"error": "missing parameter 'workload'", "parameter": "workload", "value": ""}),
    ("/run?workload=json-tree", 400,
     {"error": "missing parameter 'variant'", "parameter": "variant", "value": ""}),
    ("/run?workload=json-tree&variant=std&bogus=1", 400,
     {"error": "unknown parameter 'bogus' (/run takes workload, variant and iters)",
      "parameter": "bogus", "value": "1"}),
    ("/no-such-path", 404,
     {"error": "no such path (GET /info lists the endpoints)", "path": "/no-such-path"}),
    ("/run/extra", 404,
     {"error": "no such path (GET /info lists the endpoints)", "path": "/run/extra"}),
]


def errors_test(bench):
    s = Server(bench)
    for target, want_status, want_body in ERRORS:
        status, body = s.get(target)
        if status != want_status or json.loads(body) != want_body:
            fail("%s: got %d %s, wanted %d %s" % (target, status, body, want_status,
                                                 json.dumps(want_body)))
    print("serve_test: %d bad requests answered exactly" % len(ERRORS))
    status, body = s.get("/healthz")
    if (status, body) != (200, "ok\n"):
        fail("/healthz after the bad requests: %d %r" % (status, body))
    status, body = s.get("/run?workload=json-tree&variant=memkit-arena&iters=3")
    record = json.loads(body)
    if status != 200 or record["iterations"] != 3 or not record["hash_ok"]:
        fail("a good /run after the bad requests: %d %s" % (status, body[:200]))
    s.stop()


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("load", "errors"):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    (load_test if sys.argv[1] == "load" else errors_test)(sys.argv[2])
