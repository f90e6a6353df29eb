#!/usr/bin/env python3
# SPDX-License-Identifier: BSL-1.0
"""memkit-bench serve mode while it warms up: liveness at once, readiness when warm (docs/SERVE.md,
"Liveness and readiness").

  readiness_test.py liveness MEMKIT_BENCH   at --scale 1 (over 10 s of warm-up): /healthz
                                            answers ok within 1 s of the spawn; meanwhile /readyz
                                            and /run answer 503 (/run with Retry-After), /metrics
                                            200 with the warm-up gauges, stderr shows the progress;
                                            then SIGTERM during the warm-up: exit 0
  readiness_test.py readiness MEMKIT_BENCH  at --scale 0.01: /readyz polled from the start goes
                                            from 503 to 200 and its progress only grows; /run
                                            before it 503, after it 200; then --warmup 0 is
                                            ready at once
  readiness_test.py times MEMKIT_BENCH [SERVE_OPTION...]
                                            by hand, not a ctest: the time from the spawn to
                                            /healthz ok and to /readyz 200 of `memkit-bench serve
                                            --port 0 SERVE_OPTION...` (the default --scale 1
                                            unless they say otherwise), and the longest case

The 1 s bound of the liveness mode is measured from the spawn (the issue's "start-up"), so it
holds the process's own start as well as the wait for the listener; the spawn-to-listening and
listening-to-ok parts are printed apart. Every other wait is generous (minutes) for a loaded
machine and the sanitizer builds. Each mode exits non-zero on the first check that fails.
"""
import json
import re
import select
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error

from serve_test import OPENER, SERVERS, fail

LIVENESS_BOUND_S = 1.0
SLOW_S = 240  # any wait that only a broken server would exceed


class Starting:
    """`memkit-bench ARGS serve --port 0 OPTIONS` just spawned: its port once it prints it, its
    stderr in a file."""

    def __init__(self, bench, args):
        self.stderr = tempfile.TemporaryFile(mode="w+")
        self.spawned = time.monotonic()
        self.proc = subprocess.Popen([bench] + args, stdout=subprocess.PIPE,
                                     stderr=self.stderr, text=True)
        SERVERS.append(self.proc)
        line = ""
        deadline = self.spawned + SLOW_S
        while not line and time.monotonic() < deadline:
            if select.select([self.proc.stdout], [], [], 0.01)[0]:
                line = self.proc.stdout.readline()
            if not line and self.proc.poll() is not None:
                fail("the server exited with status %d before listening" % self.proc.returncode)
        self.listening = time.monotonic()
        match = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
        if not match:
            fail("no 'listening on' line from the server: %r" % line)
        self.port = int(match.group(1))

    def get(self, target, timeout=SLOW_S):
        """\\returns (status, headers, body)."""
        try:
            with OPENER.open("http://127.0.0.1:%d%s" % (self.port, target), timeout=timeout) as r:
                return r.status, r.headers, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.headers, e.read().decode()

    def readyz(self):
        """\\returns (status, body as JSON), checking the body's fields."""
        status, _, body = self.get("/readyz")
        r = json.loads(body)
        if status not in (200, 503) or r["ready"] != (status == 200) or not (
                0 <= r["cases_warm"] <= r["cases_total"]):
            fail("/readyz answered %d %s" % (status, body))
        return status, r

    def gauges(self):
        """\\returns the warm-up gauges of /metrics: {name: value}."""
        status, _, text = self.get("/metrics")
        if status != 200:
            fail("/metrics answered %d" % status)
        found = dict(re.findall(r"^(memkit_bench_(?:warmup_cases_warm|warmup_cases|ready)) (\S+)$",
                                text, re.M))
        return {k: int(float(v)) for k, v in found.items()}

    def sigterm(self, during):
        self.proc.send_signal(signal.SIGTERM)
        sent = time.monotonic()
        try:
            code = self.proc.wait(SLOW_S)
        except subprocess.TimeoutExpired:
            fail("the server did not exit within %d s of SIGTERM %s" % (SLOW_S, during))
        if code != 0:
            fail("the server exited with status %d after SIGTERM %s" % (code, during))
        print("readiness_test: SIGTERM %s: exit 0 after %.2f s" % (during, time.monotonic() - sent))

    def stderr_text(self):
        self.stderr.seek(0)
        return self.stderr.read()


def check_not_ready_run(s):
    """/run before readiness: 503 with Retry-After and the progress, whatever it asks for."""
    for target in ("/run?workload=json-tree&variant=std&iters=1", "/run?workload=no-such"):
        status, headers, body = s.get(target)
        retry = headers.get("Retry-After", "")
        answer = json.loads(body)
        if status != 503 or not retry.isdigit() or int(retry) < 1 or \
                "not ready" not in answer["error"] or answer["readiness"]["ready"]:
            fail("%s before readiness: %d, Retry-After %r, %s" % (target, status, retry, body))
    print("readiness_test: /run before readiness: 503, Retry-After %s" % retry)


def wait_for_healthz(s, bound):
    """Polls /healthz every 10 ms. \\returns seconds from the spawn to its first ok."""
    while True:
        try:
            status, _, body = s.get("/healthz", timeout=bound)
            if (status, body) == (200, "ok\n"):
                return time.monotonic() - s.spawned
            fail("/healthz answered %d %r" % (status, body))
        except OSError:  # refused: not listening yet
            if time.monotonic() - s.spawned > SLOW_S:
                fail("/healthz never answered")
            time.sleep(0.01)


def liveness_test(bench):
    s = Starting(bench, ["--scale", "1", "serve", "--port", "0"])
    live = wait_for_healthz(s, LIVENESS_BOUND_S)
    print("readiness_test: --scale 1: listening %.3f s after the spawn, /healthz ok %.3f s after "
          "it (bound %.1f s)" % (s.listening - s.spawned, live, LIVENESS_BOUND_S))
    if live > LIVENESS_BOUND_S:
        fail("/healthz answered ok %.3f s after the spawn" % live)
    status, r = s.readyz()
    if status != 503 or r["state"] != "warming" or r["cases_warm"] >= r["cases_total"] or \
            "workload" not in r.get("warming", {}):
        fail("/readyz during the warm-up: %d %s" % (status, r))
    print("readiness_test: /readyz during the warm-up: 503, %d of %d cases warm" % (
        r["cases_warm"], r["cases_total"]))
    check_not_ready_run(s)
    g = s.gauges()
    warm = g.get("memkit_bench_warmup_cases_warm", -1)
    if g.get("memkit_bench_ready") != 0 or g.get("memkit_bench_warmup_cases") != r["cases_total"] \
            or not r["cases_warm"] <= warm < r["cases_total"]:
        fail("/metrics' warm-up gauges during the warm-up: %s" % g)
    print("readiness_test: /metrics during the warm-up: %s" % g)
    health, _, body = s.get("/healthz")
    if (health, body) != (200, "ok\n"):
        fail("/healthz later in the warm-up: %d %r" % (health, body))
    # The progress line below is printed once the first case is warm: wait for it (a loaded
    # machine can take longer than the checks above), then stop the server in the warm-up.
    status, r = s.readyz()
    deadline = time.monotonic() + 60
    while r["cases_warm"] == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
        status, r = s.readyz()
    if status != 503 or not 0 < r["cases_warm"] < r["cases_total"]:
        fail("/readyz before the SIGTERM: %d %s (one case warm, not all)" % (status, r))
    s.sigterm("during the warm-up")
    err = s.stderr_text()
    # Batch mode's progress format with the case's time, and the warm-up's end.
    first = r"^warm-up \[   1/%d\] \S+ +\S+ +2 iterations  p50 [0-9.]+ us  in [0-9.]+ s$" % (
        r["cases_total"])
    if not re.search(first, err, re.M) or "memkit-bench: warm-up cancelled after" not in err:
        fail("no warm-up progress or cancellation on stderr: %s" % err[-2000:])


def readiness_test(bench):
    s = Starting(bench, ["--scale", "0.01", "serve", "--port", "0", "--warmup", "4"])
    status, first = s.readyz()
    if status != 503:
        fail("/readyz right after listening answered %d %s: not warming" % (status, first))
    check_not_ready_run(s)
    seen = [first]
    while status != 200:
        if time.monotonic() - s.spawned > SLOW_S:
            fail("/readyz not 200 within %d s: %s" % (SLOW_S, seen[-1]))
        time.sleep(0.02)
        status, r = s.readyz()
        previous = seen[-1]
        if r["cases_total"] != previous["cases_total"] or r["cases_warm"] < previous["cases_warm"]:
            fail("/readyz progress went from %s to %s" % (previous, r))
        if status == 503 and r["state"] != "warming":
            fail("/readyz 503 in state %s" % r["state"])
        seen.append(r)
    distinct = sorted({r["cases_warm"] for r in seen})
    print("readiness_test: /readyz 503 x %d, then 200 at %.2f s; cases warm went through %d "
          "values, %d to %d" % (len(seen) - 1, time.monotonic() - s.spawned, len(distinct),
                                distinct[0], distinct[-1]))
    if r != {"ready": True, "state": "ready", "cases_warm": r["cases_total"],
             "cases_total": r["cases_total"], "warmup_iterations": 4} or len(distinct) < 2:
        fail("/readyz when ready: %s, after %d values of cases_warm" % (r, len(distinct)))
    if s.readyz()[0] != 200:
        fail("/readyz fell back from 200")
    status, _, body = s.get("/run?workload=json-tree&variant=memkit-arena&iters=3")
    if status != 200 or not json.loads(body)["hash_ok"]:
        fail("/run once ready: %d %s" % (status, body[:200]))
    g = s.gauges()
    if g != {"memkit_bench_ready": 1, "memkit_bench_warmup_cases": r["cases_total"],
             "memkit_bench_warmup_cases_warm": r["cases_total"]}:
        fail("/metrics' warm-up gauges once ready: %s" % g)
    if not isinstance(json.loads(s.get("/info")[2])["rss_after_warmup_kib"], int):
        fail("/info has no rss_after_warmup_kib once ready")
    s.sigterm("once ready")
    if "memkit-bench: warm-up done: %d cases in" % r["cases_total"] not in s.stderr_text():
        fail("no end of the warm-up on stderr")

    s = Starting(bench, ["--scale", "0.01", "serve", "--port", "0", "--warmup", "0"])
    status, r = s.readyz()
    if status != 200 or r["cases_warm"] != 0 or r["state"] != "ready":
        fail("/readyz with --warmup 0 right after listening: %d %s" % (status, r))
    status, _, body = s.get("/run?workload=json-tree&variant=std&iters=2")
    if status != 200 or not json.loads(body)["hash_ok"]:
        fail("/run with --warmup 0: %d %s" % (status, body[:200]))
    print("readiness_test: --warmup 0: /readyz 200 at once, /run 200")
    s.sigterm("with --warmup 0")


def times(bench, serve_options):
    s = Starting(bench, ["serve", "--port", "0"] + serve_options)
    live = wait_for_healthz(s, SLOW_S)
    while s.readyz()[0] != 200:
        time.sleep(0.1)
    ready = time.monotonic() - s.spawned
    print("readiness_test: listening %.3f s, /healthz ok %.3f s, /readyz 200 %.1f s after the "
          "spawn" % (s.listening - s.spawned, live, ready))
    # The longest case bounds how long a SIGTERM during the warm-up waits: the warm-up stops
    # between cases. Each progress line carries the case's time.
    err = s.stderr_text()
    cases = re.findall(r"^warm-up \[ *\d+/\d+\] (\S+) +(\S+) .* in ([0-9.]+) s$", err, re.M)
    if cases:
        longest = max(cases, key=lambda c: float(c[2]))
        print("readiness_test: the longest case to warm up: %s / %s, %s s" % longest)
    shown = [line for line in err.splitlines()
             if line.startswith("memkit-bench: warm") or line.startswith("warm-up [   1/")]
    print("readiness_test: the server's first warm-up lines and its last:\n" + "\n".join(shown))
    s.sigterm("once ready")


if __name__ == "__main__":
    modes = {"liveness": liveness_test, "readiness": readiness_test}
    if len(sys.argv) >= 3 and sys.argv[1] == "times":
        times(sys.argv[2], sys.argv[3:])
    elif len(sys.argv) == 3 and sys.argv[1] in modes:
        modes[sys.argv[1]](sys.argv[2])
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(0)
