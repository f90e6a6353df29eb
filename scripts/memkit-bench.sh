#!/usr/bin/env bash
# memkit-bench, the main job: installs what is missing, builds memkit-bench (Release) and runs every
# seed workload against every memkit strategy and every peer (std::pmr, Boost.Pool, foonathan,
# mimalloc, jemalloc and tcmalloc preloaded in their own processes). Prints one table per workload
# and writes report/index.html with the charts, report/results.json and report/results.csv.
# Extra arguments go to memkit-bench, e.g. --workloads json-tree,pairs --repeat 3 (see --help).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh bench

cmake -S . -B build/memkit-bench -DCMAKE_BUILD_TYPE=Release -DMEMKIT_BUILD_APPS=ON \
  -DMEMKIT_BUILD_TESTS=OFF -DMEMKIT_BUILD_BENCHMARKS=OFF -DMEMKIT_BUILD_EXAMPLES=OFF >/dev/null
cmake --build build/memkit-bench --target memkit-bench -j "$(nproc)"

mkdir -p report
build/memkit-bench/apps/memkit-bench/memkit-bench --report report --csv report/results.csv "$@" |
  tee report/results.txt
