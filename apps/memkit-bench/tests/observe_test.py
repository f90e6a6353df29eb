#!/usr/bin/env python3
# SPDX-License-Identifier: BSL-1.0
"""memkit-bench serve mode observed from outside: by a real Prometheus server, and through its
JSON request log.

  observe_test.py prometheus MEMKIT_BENCH   Prometheus (started as scripts/observe.sh starts it,
                                            through observe.py) scrapes the server every second
                                            during a load run; the p99 it computes from the
                                            latency histogram must lie in the same bucket as the
                                            exact p99 of the durations the request log recorded
  observe_test.py request-log MEMKIT_BENCH  the log's lines for known requests, field by field

Each mode starts its own server and exits non-zero on the first check that fails. Prometheus
must be installed (scripts/install-deps.sh test installs it): without it the test fails.
"""
import json
import math
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "serve"))
import observe  # noqa: E402  (apps/memkit-bench/serve/observe.py)
from serve_test import Server, fail  # noqa: E402

VARIANTS = ("memkit-arena", "std")
LOAD_SECONDS = 8
ITERS = 5
FIELDS = ["time", "method", "path", "workload", "variant", "iterations", "status", "duration_s"]


def read_log(path):
    lines = []
    with open(path) as f:
        for text in f:
            line = json.loads(text)
            if list(line) != FIELDS:
                fail("request log line with fields %s, wanted %s" % (list(line), FIELDS))
            lines.append(line)
    return lines


def nearest_rank(values, q):
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def bucket_of(value, bounds):
    """\\returns (lower, upper] of the histogram bucket holding `value` (le semantics)."""
    lower = 0.0
    for upper in bounds:
        if value <= upper:
            return lower, upper
        lower = upper
    return lower, math.inf


def prometheus_test(bench):
    workdir = tempfile.mkdtemp(prefix="memkit-observe-test-")
    log_path = os.path.join(workdir, "requests.jsonl")
    s = Server(bench, ["--log-requests=" + log_path])
    try:
        prom = observe.Prometheus(["127.0.0.1:%d" % s.port], workdir, scrape_interval=1)
    except observe.ObserveError as e:
        fail(str(e))
    try:
        prom.wait_for_target()
        print("observe_test: prometheus on %s scrapes the server" % prom.url)
        load_started = time.time()
        out = subprocess.run(
            [bench, "load", "--port", str(s.port), "--connections", "4", "--seconds",
             str(LOAD_SECONDS), "--variants", ",".join(VARIANTS), "--iters", str(ITERS)],
            stdout=subprocess.PIPE, text=True, timeout=LOAD_SECONDS + 60)
        report = json.loads(out.stdout)
        if out.returncode != 0 or report["failures"] != 0:
            fail("the load run failed: %s" % report["failure_samples"])
        load_ended = time.time()

        durations = {v: [] for v in VARIANTS}
        for line in read_log(log_path):
            if line["path"] == "/run" and line["status"] == 200:
                if line["iterations"] != ITERS:
                    fail("a /run line with iterations %s: %s" % (line["iterations"], line))
                durations[line["variant"]].append(line["duration_s"])
        # Wait for a scrape that has every request the log has.
        count_expr = 'sum by (variant) (%s_count{workload="json-tree"})' % observe.HISTOGRAM
        deadline = time.monotonic() + 20
        while True:
            counts = {m["variant"]: int(v) for m, v in prom.query(count_expr)}
            if all(counts.get(v) == len(durations[v]) for v in VARIANTS):
                break
            if time.monotonic() > deadline:
                fail("prometheus counts %s, the request log %s" % (
                    counts, {v: len(d) for v, d in durations.items()}))
            time.sleep(0.5)
        bounds = sorted(float(m["le"]) for m, _ in prom.query(
            'count by (le) (%s_bucket{workload="json-tree"})' % observe.HISTOGRAM)
            if m["le"] != "+Inf")
        # Over every request: the buckets' counts as they are, no rate() extrapolation.
        p99_expr = ('histogram_quantile(0.99, sum by (le, variant) (%s_bucket{workload='
                    '"json-tree"}))' % observe.HISTOGRAM)
        computed = {m["variant"]: v for m, v in prom.query(p99_expr)}
        for v in VARIANTS:
            exact = nearest_rank(durations[v], 0.99)
            lower, upper = bucket_of(exact, bounds)
            print("observe_test: %s: %d requests; p99 from the request log %.1f us, from "
                  "prometheus %.1f us, bucket (%.0f, %.0f] us; the load client's p99 %.1f us" % (
                      v, len(durations[v]), 1e6 * exact, 1e6 * computed.get(v, math.nan),
                      1e6 * lower, 1e6 * upper, report["variants"][v]["p99_us"]))
            if not lower <= computed.get(v, math.nan) <= upper:
                fail("%s: prometheus' p99 is not in the bucket of the logged p99" % v)

        # The query observe mode plots: a point a second for every variant, p50 <= p99.
        window = 4
        series = {q: observe.quantile_series(prom, q, "json-tree", window, load_started + window,
                                              load_ended, 1) for q in (0.5, 0.99)}
        for v in VARIANTS:
            p50, p99 = dict(series[0.5].get(v, [])), dict(series[0.99].get(v, []))
            if len(p99) < LOAD_SECONDS - window - 1:
                fail("%s: %d p99 points over rate[%ds] in %d s of load" % (
                    v, len(p99), window, LOAD_SECONDS))
            if any(p50[t] > p99[t] for t in p99 if t in p50):
                fail("%s: a p50 above its p99" % v)
        print("observe_test: observe mode's query_range gives %s p99 points" % {
            v: len(series[0.99][v]) for v in VARIANTS})
    finally:
        prom.stop()
    s.stop()
    shutil.rmtree(workdir)


def request_log_test(bench):
    workdir = tempfile.mkdtemp(prefix="memkit-request-log-test-")
    log_path = os.path.join(workdir, "requests.jsonl")
    s = Server(bench, ["--log-requests=" + log_path])
    sent = [("/healthz", 200), ("/run?workload=json-tree&variant=memkit-arena&iters=3", 200),
            ("/run?workload=json-tree&variant=std&iters=0", 400), ("/no-such-path", 404)]
    for target, status in sent:
        got, _ = s.get(target)
        if got != status:
            fail("%s answered %d" % (target, got))
    # A request line the server cannot parse: answered 400 before routing, still logged (with
    # what cpp-httplib parsed of it, and no duration).
    with socket.create_connection(("127.0.0.1", s.port), timeout=10) as c:
        c.sendall(b"NONSENSE\r\n\r\n")
        c.recv(4096)
    s.stop()
    lines = read_log(log_path)
    shutil.rmtree(workdir)
    # Server polls /readyz until the warm-up is done (503s, then a 200), then reads the served
    # paths from /info.
    polls = 0
    while polls < len(lines) and lines[polls]["path"] == "/readyz":
        polls += 1
    statuses = [line["status"] for line in lines[:polls]]
    if polls == 0 or statuses != [503] * (polls - 1) + [200]:
        fail("the log's first lines are /readyz %s, wanted 503s then a 200" % statuses)
    lines = lines[polls:]
    want = [
        {"method": "GET", "path": "/info", "workload": None, "variant": None,
         "iterations": None, "status": 200},
        {"method": "GET", "path": "/healthz", "workload": None, "variant": None,
         "iterations": None, "status": 200},
        {"method": "GET", "path": "/run", "workload": "json-tree", "variant": "memkit-arena",
         "iterations": 3, "status": 200},
        {"method": "GET", "path": "/run", "workload": "json-tree", "variant": "std",
         "iterations": None, "status": 400},
        {"method": "GET", "path": "/no-such-path", "workload": None, "variant": None,
         "iterations": None, "status": 404},
        {"method": "NONSENSE", "path": "", "workload": None, "variant": None, "iterations": None,
         "status": 400},
    ]
    if len(lines) != len(want):
        fail("%d log lines for %d requests: %s" % (len(lines), len(want), lines))
    for line, expected in zip(lines, want):
        if {k: line[k] for k in expected} != expected:
            fail("log line %s, wanted %s" % (line, expected))
        if not line["time"].endswith("Z") or len(line["time"]) != len("2024-01-01T00:00:00.000000Z"):
            fail("log line time %r is not RFC 3339 UTC with microseconds" % line["time"])
        routed = bool(line["path"])
        if routed != (isinstance(line["duration_s"], float) and 0 < line["duration_s"] < 60):
            fail("log line duration %r for %s" % (line["duration_s"], line["path"] or "no path"))
    print("observe_test: %d request log lines, each as wanted" % len(lines))


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("prometheus", "request-log"):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    (prometheus_test if sys.argv[1] == "prometheus" else request_log_test)(sys.argv[2])
