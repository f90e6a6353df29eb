#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
# Installs the Debian packages memkit's build, tests and benchmarks need, skipping those present.
# Usage: scripts/install-deps.sh [test|bench|all]
set -euo pipefail

common=(cmake g++ make libgtest-dev libgmock-dev libbenchmark-dev libboost-dev libfoonathan-memory-dev
  libcli11-dev nlohmann-json3-dev libcpp-httplib-dev prometheus-cpp-dev pkg-config libzstd-dev)
# libzstd-dev: the allocation trace's compression (include/memkit/trace.hpp).
# prometheus: the server observe mode (scripts/observe.sh) and its ctest scrape memkit-bench with.
# python3, sqlite3, git: the real programs run under the preloaded malloc (tests/replacement/).
test_only=(clang libclang-rt-14-dev clang-format valgrind python3 prometheus libtbb-dev sqlite3 git)
bench_only=(libmimalloc-dev libjemalloc-dev libgoogle-perftools-dev libtbb-dev python3 python3-matplotlib
  prometheus)

case "${1:-all}" in
  test) wanted=("${common[@]}" "${test_only[@]}") ;;
  bench) wanted=("${common[@]}" "${bench_only[@]}") ;;
  all) wanted=("${common[@]}" "${test_only[@]}" "${bench_only[@]}") ;;
  *) echo "usage: $0 [test|bench|all]" >&2; exit 2 ;;
esac

missing=()
for pkg in "${wanted[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "memkit: installing ${missing[*]}" >&2
sudo=()
[ "$(id -u)" -eq 0 ] || sudo=(sudo)
"${sudo[@]}" apt-get update -q
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
