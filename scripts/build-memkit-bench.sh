#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
# Installs what memkit-bench's runs need (scripts/install-deps.sh bench) and builds memkit-bench
# alone, Release, in build/memkit-bench; prints the binary's path on stdout. Used by
# scripts/memkit-bench.sh and scripts/observe.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh bench >&2

cmake -S . -B build/memkit-bench -DCMAKE_BUILD_TYPE=Release -DMEMKIT_BUILD_APPS=ON \
  -DMEMKIT_BUILD_TESTS=OFF -DMEMKIT_BUILD_BENCHMARKS=OFF -DMEMKIT_BUILD_EXAMPLES=OFF >/dev/null
cmake --build build/memkit-bench --target memkit-bench -j "$(nproc)" >&2
echo "$PWD/build/memkit-bench/apps/memkit-bench/memkit-bench"
