#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
# The micro benchmarks: installs what is missing, builds memkit_micro_bench (Release), runs every
# memkit strategy against its peers five times and prints, per pattern, the variants ranked by
# median time with their speed-ups. Extra arguments go to the benchmark, e.g.
# --benchmark_filter=AllocFree. Raw results: build/bench/micro.json.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh bench

# Concurrent runs would write the same results file and slow each other down: take turns.
mkdir -p build
exec 9>build/bench.lock
flock 9

cmake -S . -B build/bench -DCMAKE_BUILD_TYPE=Release -DMEMKIT_BUILD_TESTS=OFF \
  -DMEMKIT_BUILD_EXAMPLES=OFF >/dev/null
cmake --build build/bench --target memkit_micro_bench -j "$(nproc)"

# 0.2 s per repetition keeps the whole run within a few minutes on two cores. Repetitions run in
# random order, so a burst of load from other processes hits every variant alike instead of
# skewing one ratio; the medians of five then vary by a few percent between runs.
build/bench/bench/memkit_micro_bench --benchmark_min_time=0.2 --benchmark_repetitions=5 \
  --benchmark_enable_random_interleaving=true \
  --benchmark_report_aggregates_only=true --benchmark_out=build/bench/micro.json \
  --benchmark_out_format=json "$@"
python3 bench/compare.py build/bench/micro.json
