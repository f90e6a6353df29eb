#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
# Instructions per call of memkit's hot paths, counted by callgrind (exact and repeatable where wall
# time on a shared machine is not):
#   - per allocate/deallocate pair of every strategy (bench/pair_loop.cpp, 200 000 pairs of 32 B);
#   - per malloc and per free of the global replacement (bench/malloc_loop.c, 1 M of each, 16-512 B,
#     one thread), and of every other malloc given as an argument, measured the same way, with the
#     L1 and last-level data misses of a fixed simulated cache (callgrind --cache-sim).
# Usage: bench/instructions.sh BUILD_DIR [LIBRARY.so ...]
#   BUILD_DIR: a Release build with memkit_pair_loop and memkit-preload built.
set -euo pipefail
build=${1:?usage: bench/instructions.sh BUILD_DIR [LIBRARY.so ...]}
shift
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

pairs=200000
loops=$("$build/bench/memkit_pair_loop" 2>&1 | sed -n 's/.*loops://p') || true
printf '%-30s %s\n' "strategy" "instructions per pair"
for loop in $loops; do
  valgrind --tool=callgrind --callgrind-out-file="$out/pair.$loop" --toggle-collect="loop_$loop()" \
    "$build/bench/memkit_pair_loop" "$loop" >/dev/null 2>&1
  ir=$(sed -n 's/^summary: //p' "$out/pair.$loop")
  awk -v n="$loop" -v ir="$ir" -v p=$pairs 'BEGIN { printf "%-30s %.1f\n", n, ir / p }'
done

cc -O2 -o "$out/malloc_loop" "$here/malloc_loop.c"
calls=1000000
# A fixed simulated cache, whatever the machine's (valgrind reads the host's otherwise, and hosts
# of one kind have reported different geometries): 32 KiB 8-way L1s, an 8 MiB 16-way last level.
cache=(--cache-sim=yes --I1=32768,8,64 --D1=32768,8,64 --LL=8388608,16,64)
# Per call of the first function named like `names`, inclusive: instructions, L1 data misses (reads
# and writes), last-level data misses.
per_call() { # file names
  callgrind_annotate --inclusive=yes "$1" 2>/dev/null |
    awk -v names="$2" -v calls=$calls '{
      gsub(/\([^)]*\)/, ""); gsub(",", ""); gsub(/(^| )\.( |$)/, " 0 "); gsub(/(^| )\.( |$)/, " 0 ")
      if (NF < 10) next
      n = split($10, f, ":"); fn = f[n]
      if (fn ~ "^(" names ")$") {
        # Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw
        printf "%-8.1f %-8.3f %-8.4f", $1 / calls, ($5 + $6) / calls, ($8 + $9) / calls; exit
      } }'
}
echo
printf '%-26s %-26s %s\n' "one thread, per call" "malloc: Ir D1miss LLmiss" "free: Ir D1miss LLmiss"
for lib in "$build/src/libmemkit-preload.so" "$@"; do
  f="$out/malloc.$(basename "$lib")"
  # The allocator is preloaded into the loop alone (env is exec'ed by valgrind, then replaced).
  valgrind --tool=callgrind "${cache[@]}" --trace-children=yes --callgrind-out-file="$f.%p" \
    env LD_PRELOAD="$lib" "$out/malloc_loop" >/dev/null 2>&1
  f=$(ls -S "$f".* | head -n 1)
  printf '%-26s %-26s %s\n' "$(basename "$lib")" "$(per_call "$f" 'malloc|mi_malloc|je_malloc')" \
    "$(per_call "$f" 'free|mi_free|je_free')"
done
