#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
# Observe mode: installs what is missing, builds memkit-bench (Release), serves its workloads
# (observe.py waits until the server's /readyz answers 200: every case warm), lets a real Prometheus
# server (Debian's `prometheus`) scrape them on loopback while
# `memkit-bench load` drives them, then reads p50 and p99 per variant over time back through
# PromQL and writes report/observe/observe.png and report/observe/index.html (docs/SERVE.md).
# Arguments go to apps/memkit-bench/serve/observe.py, e.g. --seconds 10 --iters 1,100 --out DIR;
# serve options after --, e.g. -- --workers 2.
set -euo pipefail
cd "$(dirname "$0")/.."
bench=$(scripts/build-memkit-bench.sh)

# exec: observe.py itself takes SIGINT, SIGTERM and SIGHUP and, on them as on an error or the
# end, stops the server, Prometheus and the load client it started and removes its temporary
# directory.
exec /usr/bin/python3 apps/memkit-bench/serve/observe.py "$bench" "$@"
