#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
# memkit-bench, the main job: installs what is missing, builds memkit-bench (Release) and runs every
# published and threaded workload against every memkit strategy and every peer (std::pmr,
# Boost.Pool, foonathan, oneTBB, and mimalloc, jemalloc, tcmalloc and oneTBB's malloc proxy preloaded
# in their own processes), every variant in five processes, each a fresh layout draw. Prints one
# table per workload, each ratio with its 95 % interval and a verdict only where the interval is
# clear (docs/method.md), and writes report/index.html with the charts, report/results.json,
# report/results.csv and report/results.md (the run's summary, docs/results/README.md). Extra arguments go to memkit-bench, e.g. --workloads json-tree,pairs
# --processes 10 (see --help).
set -euo pipefail
cd "$(dirname "$0")/.."
bench=$(scripts/build-memkit-bench.sh)

mkdir -p report
"$bench" --report report --csv report/results.csv --markdown report/results.md "$@" |
  tee report/results.txt
