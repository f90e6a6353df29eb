#!/usr/bin/env python3
# SPDX-License-Identifier: BSL-1.0
"""Observe mode: memkit-bench serve scraped by a real Prometheus server, its latency histogram
read back through PromQL as p50 and p99 per variant over time (docs/SERVE.md).

  observe.py MEMKIT_BENCH [--seconds S] [--iters N,M] [--connections C] [--workload W]
             [--variants V1,V2] [--scrape-interval S] [--window S] [--out DIR]
             [-- SERVE_OPTION...]

Starts `memkit-bench serve` on a free loopback port, a Prometheus server (Debian's `prometheus`)
as the current user with its own storage in a temporary directory and a scrape job for the
server, drives one `memkit-bench load` phase of S seconds per iters value, then queries
Prometheus' HTTP API (/api/v1/query_range) for

  histogram_quantile(Q, sum by (le, variant) (rate(memkit_bench_run_request_seconds_bucket[...])))

with Q = 0.5 and 0.99, and writes DIR/observe.png, DIR/index.html and DIR/observe.json. Every
process it started is stopped when it ends, by error or signal too.

As a module, Prometheus (start, wait for the target, query, query_range, stop) is what
tests/observe_test.py starts the server with.
"""
import argparse
import html
import json
import math
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: no proxy
JOB = "memkit-bench"
HISTOGRAM = "memkit_bench_run_request_seconds"


class ObserveError(RuntimeError):
    pass


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get_json(url, timeout=10):
    with OPENER.open(url, timeout=timeout) as r:
        return json.loads(r.read().decode())


class Prometheus:
    """A Prometheus server scraping `targets` (host:port) every `scrape_interval` seconds, on a
    free loopback port, its configuration, storage and log under `workdir`."""

    def __init__(self, targets, workdir, scrape_interval=1):
        binary = shutil.which("prometheus") or "/usr/bin/prometheus"
        if not os.access(binary, os.X_OK):
            raise ObserveError("no prometheus server: scripts/install-deps.sh installs Debian's "
                               "'prometheus' package")
        self.workdir = workdir
        config = os.path.join(workdir, "prometheus.yml")
        with open(config, "w") as f:
            f.write("global:\n"
                    "  scrape_interval: %ds\n"
                    "  scrape_timeout: %ds\n"
                    "scrape_configs:\n"
                    "  - job_name: %s\n"
                    "    static_configs:\n"
                    "      - targets: [%s]\n" % (
                        scrape_interval, scrape_interval, JOB,
                        ", ".join('"%s"' % t for t in targets)))
        self.log_path = os.path.join(workdir, "prometheus.log")
        self.proc = None
        # A free port can be taken between the probe and Prometheus' bind: try another.
        for _ in range(5):
            self.port = free_port()
            with open(self.log_path, "w") as log:
                self.proc = subprocess.Popen(
                    [binary, "--config.file=" + config,
                     "--storage.tsdb.path=" + os.path.join(workdir, "data"),
                     "--web.listen-address=127.0.0.1:%d" % self.port, "--log.level=warn"],
                    stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
            if self.wait_ready():
                return
            self.stop()
            if "address already in use" not in self.log():
                break
        raise ObserveError("prometheus did not start: " + self.log()[-2000:])

    def log(self):
        with open(self.log_path) as f:
            return f.read()

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.port

    def wait_ready(self, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                with OPENER.open(self.url + "/-/ready", timeout=2) as r:
                    if r.status == 200:
                        return True
            except OSError:
                pass
            time.sleep(0.1)
        return False

    def query(self, expr, at=None):
        """\\returns the instant vector of `expr` as a list of (labels, value)."""
        args = {"query": expr}
        if at is not None:
            args["time"] = "%.3f" % at
        data = self._api("query", args)
        return [(r["metric"], float(r["value"][1])) for r in data["result"]]

    def query_range(self, expr, start, end, step):
        """\\returns the range vector of `expr` as a list of (labels, [(time, value)])."""
        data = self._api("query_range", {"query": expr, "start": "%.3f" % start,
                                         "end": "%.3f" % end, "step": "%gs" % step})
        return [(r["metric"], [(float(t), float(v)) for t, v in r["values"]])
                for r in data["result"]]

    def _api(self, endpoint, args):
        url = "%s/api/v1/%s?%s" % (self.url, endpoint, urllib.parse.urlencode(args))
        try:
            answer = get_json(url)
        except urllib.error.HTTPError as e:
            answer = json.loads(e.read().decode() or "{}")
        if answer.get("status") != "success":
            raise ObserveError("%s: %s" % (args["query"], answer.get("error", answer)))
        return answer["data"]

    def wait_for_target(self, timeout=30):
        """Waits until the last scrape of the job succeeded."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(v == 1 for _, v in self.query('up{job="%s"}' % JOB)):
                return
            time.sleep(0.2)
        raise ObserveError("prometheus never scraped the server: " + self.log()[-2000:])

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def quantile_expr(q, workload, window):
    return ('histogram_quantile(%g, sum by (le, variant) (rate(%s_bucket{workload="%s"}[%ds])))'
            % (q, HISTOGRAM, workload, window))


def quantile_series(prom, q, workload, window, start, end, step):
    """\\returns {variant: [(time, seconds)]} of the q-quantile over `window` seconds, every
    `step` seconds from `start` to `end` (points where no request fell in the window left out)."""
    series = {}
    for labels, values in prom.query_range(quantile_expr(q, workload, window), start, end, step):
        points = [(t, v) for t, v in values if math.isfinite(v)]
        if points:
            series[labels.get("variant", "")] = points
    return series


def ready(port):
    """\\returns whether the server on `port` answers /readyz with 200 (every case warm)."""
    try:
        with OPENER.open("http://127.0.0.1:%d/readyz" % port, timeout=10) as r:
            return r.status == 200
    except urllib.error.HTTPError as e:
        if e.code != 503:  # 503: still warming up
            raise ObserveError("/readyz answered %d" % e.code)
        return False


def start_serve(bench, args):
    """\\returns (process, port) of `memkit-bench ARGS serve --port 0` once /readyz is 200."""
    proc = subprocess.Popen([bench] + args, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL,
                            text=True)
    deadline = time.monotonic() + 300  # warm-up at --scale 1: 16-19 s on two cores (docs/SERVE.md)
    port = None
    while time.monotonic() < deadline and proc.poll() is None:
        if port is None:
            if select.select([proc.stdout], [], [], 1)[0]:
                match = re.search(r"listening on http://[^:]+:(\d+)", proc.stdout.readline())
                port = int(match.group(1)) if match else None
        elif ready(port):
            return proc, port
        else:
            time.sleep(0.2)
    proc.kill()
    proc.wait()
    raise ObserveError("memkit-bench serve did not start listening" if port is None else
                       "memkit-bench serve was not ready (/readyz 200) within 300 s")


def write_report(out, p50, p99, meta):
    """DIR/observe.png (p50 and p99 per variant over time), DIR/index.html and DIR/observe.json."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    t0 = meta["load_started"]
    variants = sorted(set(p50) | set(p99))
    fig, axes = plt.subplots(2, 1, figsize=(11, 8), sharex=True)
    for ax, q, series in ((axes[0], "p50", p50), (axes[1], "p99", p99)):
        for v in variants:
            points = series.get(v, [])
            ax.plot([t - t0 for t, _ in points], [1e6 * s for _, s in points], label=v,
                    marker=".", linewidth=1)
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda y, _: "%g" % y))
        ax.yaxis.set_minor_formatter(matplotlib.ticker.FuncFormatter(
            lambda y, _: "%g" % y if str(round(y / 10 ** math.floor(math.log10(y))))[0] in "25"
            else ""))
        ax.set_ylabel("%s /run handler time (us)" % q)
        ax.grid(True, which="both", alpha=0.3)
        for phase in meta["phases"]:
            ax.axvline(phase["started"] - t0, color="grey", linestyle=":", linewidth=1)
            ax.text(phase["started"] - t0, 1, " iters=%d" % phase["iters"], color="grey",
                    transform=ax.get_xaxis_transform(), va="top", fontsize=8)
    axes[0].set_title("memkit-bench serve, %s: Prometheus histogram_quantile over rate[%ds], "
                      "scraped every %ds" % (meta["workload"], meta["window"],
                                            meta["scrape_interval"]))
    axes[0].legend(fontsize=8, ncol=2)
    axes[1].set_xlabel("seconds since the load started")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "observe.png"), dpi=100)
    plt.close(fig)

    def median(points, phase):
        # The windows that lie wholly inside the phase.
        begin, end = phase["started"] + meta["window"], phase["started"] + phase["report"].get(
            "seconds", 0)
        values = sorted(s for t, s in points if begin <= t <= end)
        return 1e6 * values[len(values) // 2] if values else float("nan")

    head = "".join("<th>iters=%d: p50</th><th>p99</th><th>client p50</th><th>client p99</th>"
                   % p["iters"] for p in meta["phases"])
    rows = []
    for v in variants:
        cells = ""
        for p in meta["phases"]:
            client = p["report"].get("variants", {}).get(v, {})
            cells += "<td>%.0f</td><td>%.0f</td><td>%.0f</td><td>%.0f</td>" % (
                median(p50.get(v, []), p), median(p99.get(v, []), p),
                client.get("p50_us", math.nan), client.get("p99_us", math.nan))
        rows.append("<tr><td>%s</td>%s</tr>" % (html.escape(v), cells))
    phases = "".join(
        "<li>iters=%d: %d requests in %.0f s (%.0f/s), %d failed</li>" % (
            p["iters"], p["report"].get("requests", 0), p["report"].get("seconds", 0),
            p["report"].get("requests_per_s", 0), p["report"].get("failures", 0))
        for p in meta["phases"])
    page = """<!doctype html>
<html><head><meta charset="utf-8"><title>memkit-bench observe mode</title>
<style>body{font-family:sans-serif;max-width:1100px;margin:1em auto}
td,th{padding:2px 10px;text-align:right}td:first-child{text-align:left}</style></head>
<body><h1>memkit-bench serve, observed by Prometheus</h1>
<p>Workload <b>%s</b>, %d load connections, server <code>%s</code>, scraped every %d s by
Prometheus %s; quantiles over <code>rate(...[%ds])</code>.</p>
<ul>%s</ul>
<img src="observe.png" alt="p50 and p99 per variant over time" width="1100">
<h2>Per phase, in us</h2>
<p>p50 and p99: the median over the phase of Prometheus' quantiles (windows wholly inside the
phase); client: the load client's own percentiles over the phase.</p>
<table><tr><th>variant</th>%s</tr>
%s</table>
<p>Prometheus' quantiles are of the server's <code>/run</code> handler time (the
<code>%s</code> histogram, interpolated within its buckets); the load client's include the
network and the wait for a worker.</p>
<h2>Queries</h2><pre>%s
%s</pre></body></html>
""" % (html.escape(meta["workload"]), meta["connections"], html.escape(" ".join(meta["serve"])),
       meta["scrape_interval"], html.escape(meta["prometheus_version"]), meta["window"], phases,
       head, "\n".join(rows), HISTOGRAM, html.escape(quantile_expr(0.5, meta["workload"], meta["window"])),
       html.escape(quantile_expr(0.99, meta["workload"], meta["window"])))
    with open(os.path.join(out, "index.html"), "w") as f:
        f.write(page)
    with open(os.path.join(out, "observe.json"), "w") as f:
        json.dump({"meta": meta, "p50": p50, "p99": p99}, f, indent=1)


def observe(a):
    os.makedirs(a.out, exist_ok=True)
    serve_args = ["--scale", "0.01", "serve", "--port", "0"] + a.serve_options
    procs = []
    workdir = tempfile.mkdtemp(prefix="memkit-observe-")
    prom = None
    try:
        serve, port = start_serve(a.bench, serve_args)
        procs.append(serve)
        print("observe: memkit-bench serve on 127.0.0.1:%d" % port, file=sys.stderr)
        prom = Prometheus(["127.0.0.1:%d" % port], workdir, a.scrape_interval)
        prom.wait_for_target()
        version = subprocess.run([prom.proc.args[0], "--version"], stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True).stdout.split("\n")[0]
        print("observe: %s on %s" % (version, prom.url), file=sys.stderr)
        meta = {"workload": a.workload, "connections": a.connections, "serve": serve_args,
                "scrape_interval": a.scrape_interval, "window": a.window,
                "prometheus_version": version, "load_started": time.time(), "phases": []}
        for iters in a.iters:
            command = [a.bench, "load", "--port", str(port), "--connections", str(a.connections),
                       "--seconds", str(a.seconds), "--workload", a.workload,
                       "--iters", str(iters)] + (["--variants", a.variants] if a.variants else [])
            print("observe: " + " ".join(command), file=sys.stderr)
            started = time.time()
            load = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
            procs.append(load)
            out, _ = load.communicate()
            report = json.loads(out or "{}")
            meta["phases"].append({"iters": iters, "started": started, "report": report})
            if load.returncode != 0:
                raise ObserveError("the load run failed: %s" % report.get("failure_samples"))
        # Windows end from the start of the load to its end (a later window would hold a part
        # of the load only); the last one needs the scrape after the end.
        end = time.time()
        time.sleep(2 * a.scrape_interval)
        start = meta["load_started"]
        p50 = quantile_series(prom, 0.5, a.workload, a.window, start, end, a.scrape_interval)
        p99 = quantile_series(prom, 0.99, a.workload, a.window, start, end, a.scrape_interval)
        if not p99:
            raise ObserveError("prometheus has no %s samples for %s" % (HISTOGRAM, a.workload))
        write_report(a.out, p50, p99, meta)
        print("observe: wrote %s/observe.png, index.html and observe.json" % a.out,
              file=sys.stderr)
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
                p.wait()
        if prom:
            prom.stop()
        shutil.rmtree(workdir, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("bench", help="the memkit-bench binary")
    parser.add_argument("--seconds", type=float, default=30, help="seconds per load phase")
    parser.add_argument("--iters", default="1,20",
                        help="one load phase per value, the iters of its /run requests")
    parser.add_argument("--connections", type=int, default=4)
    parser.add_argument("--workload", default="json-tree")
    parser.add_argument("--variants", default="", help="default: every served variant")
    parser.add_argument("--scrape-interval", type=int, default=1, help="seconds")
    parser.add_argument("--window", type=int, default=10, help="rate() window, seconds")
    parser.add_argument("--out", default="report/observe")
    parser.add_argument("serve_options", nargs="*", help="after --: more serve options")
    a = parser.parse_args()
    a.iters = [int(i) for i in a.iters.split(",")]

    def stop(signum, _frame):
        raise SystemExit(128 + signum)

    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, stop)
    try:
        observe(a)
    except ObserveError as e:
        print("observe: ERROR: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
