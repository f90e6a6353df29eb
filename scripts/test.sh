#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
# The whole test suite, as CI runs it: installs what is missing, then builds and runs every test
# twice — optimized with GCC, and with AddressSanitizer + UndefinedBehaviorSanitizer with Clang —
# so both compilers build everything warning-free, and every test that starts threads a third
# time, with ThreadSanitizer with Clang (the sources that start none are left out of that build:
# memkit_keep_threaded in CMakeLists.txt). The first two builds also compile every public header
# on its own as C++17 and as C++20, and build and run the examples, the packaging consumers and
# memkit-bench's batch and serve-mode tests (all three run memkit-bench's); the optimized build
# runs the Valgrind checks, the AddressSanitizer build runs every libFuzzer target for 5 seconds
# and replays its corpus. The sanitizer builds keep line tables only as debug information:
# enough for their reports' stack traces, and a fifth quicker to build than full -g.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh test

jobs=$(nproc)
run_suite() { # name, cmake args...
  local name=$1
  shift
  echo "== memkit tests: $name build ==" >&2
  cmake -S . -B "build/test-$name" -DMEMKIT_WERROR=ON -DMEMKIT_BUILD_BENCHMARKS=OFF "$@" >/dev/null
  cmake --build "build/test-$name" -j "$jobs"
  ctest --test-dir "build/test-$name" -j "$jobs" --output-on-failure --timeout 300
}

run_suite release -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=g++
# LeakSanitizer stays on: a test that leaks fails.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
run_suite asan -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -gline-tables-only" \
  -DCMAKE_CXX_COMPILER=clang++ -DMEMKIT_SANITIZE=address,undefined -DMEMKIT_BUILD_FUZZERS=ON \
  -DMEMKIT_FUZZ_SECONDS=5
# ThreadSanitizer: data races fail the test that ran them. The fuzzers and Valgrind checks ran above.
# tests/tsan.supp says why each suppression is a false positive outside memkit.
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tests/tsan.supp
run_suite tsan -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -gline-tables-only" \
  -DCMAKE_CXX_COMPILER=clang++ -DMEMKIT_SANITIZE=thread
echo "memkit tests: release, AddressSanitizer and ThreadSanitizer builds passed" >&2
