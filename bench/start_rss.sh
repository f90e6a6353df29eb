#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
# Start-up memory of malloc replacements: a C program that allocates once (bench/start_rss.c) runs
# RUNS times under glibc and under each library preloaded, and a Markdown table gives the medians
# of its resident memory and of the anonymous part of it (the allocator's own structures, the
# libraries' .bss and the stack; the rest is the mapped files of the program and its libraries,
# shared with other processes), and each one's excess over glibc's.
# Usage: bench/start_rss.sh LIBRARY.so ... > RESULT.md
#   RUNS: runs per allocator (default 9)
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: bench/start_rss.sh LIBRARY.so ..." >&2; exit 2; }
runs=${RUNS:-9}
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cc -O2 -o "$out/start_rss" "$here/start_rss.c"

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "Resident memory of \`bench/start_rss.c\` after one \`malloc\` and \`free\`, in KiB, medians of $runs runs"
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
commit=$(git -C "$here" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
echo "(\`RUNS=$runs bench/start_rss.sh\` of commit $commit, $(date -u +%Y-%m-%dT%H:%MZ), $cpu,"
echo "$(nproc) cores, Linux $(uname -r); each library's file name says which build it is)."
echo
echo "| allocator | resident | anonymous | anonymous above glibc's |"
echo "|---|---:|---:|---:|"
base=""
for lib in "" "$@"; do
  name=${lib:+$(basename "$lib")}
  : > "$out/rss"
  : > "$out/anon"
  for _ in $(seq "$runs"); do
    read -r rss anon < <(LD_PRELOAD="$lib" "$out/start_rss")
    echo "$rss" >> "$out/rss"
    echo "$anon" >> "$out/anon"
  done
  rss=$(median < "$out/rss")
  anon=$(median < "$out/anon")
  base=${base:-$anon}
  echo "| ${name:-glibc} | $rss | $anon | $((anon - base)) |"
done
