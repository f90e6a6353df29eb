#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
# What recording a trace (MEMKIT_OPTIONS=trace:PATH) costs, for docs/TRACE.md#overhead:
#   - per call on one thread: callgrind's instructions per malloc and per free of
#     bench/malloc_loop.c (1 M of each) without and with recording (bench/instructions.sh), and the
#     wall time the loop takes more, per event (median of RUNS runs);
#   - bytes per event on disk, and the wall-time ratio recorded / not recorded of whole programs:
#     the loop, python3 and sqlite3 as the real-program tests run them (tests/replacement/), and
#     memkit-bench workloads (the std variant, under the preloaded library, each run its own
#     process), all on libmemkit-preload.so; and the same for heaptrack (recorded / glibc) where it
#     is installed.
# Usage: bench/trace_overhead.sh BUILD_DIR [MEMKIT_BENCH [WORKLOAD ...]]
#   BUILD_DIR: a Release build with memkit-preload, memkit_pair_loop and memkit_trace_stats built.
#   RUNS (environment, default 11): runs per median.
#   BEFORE (environment): another such build, an older recorder: then each program is recorded by
#     both in turn, run by run (a machine whose speed drifts during the run slows both alike), and
#     the table compares them instead of showing heaptrack.
set -euo pipefail
build=${1:?usage: bench/trace_overhead.sh BUILD_DIR [MEMKIT_BENCH [WORKLOAD ...]]}
bench_app=${2:-}
shift $(($# < 2 ? $# : 2))
workloads=("$@")
[ ${#workloads[@]} -gt 0 ] || workloads=(mt-local-1t larson-2t json-tree)
runs=${RUNS:-11}
here=$(cd "$(dirname "$0")" && pwd)
lib=$build/src/libmemkit-preload.so
stats=$build/bench/memkit_trace_stats
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

before=${BEFORE:-}
echo "instructions per call, one thread (callgrind, bench/instructions.sh):"
echo "  recording off: $("$here/instructions.sh" "$build" | tail -n 1)"
for b in $before "$build"; do
  echo "  recording on ($b): $(MEMKIT_OPTIONS="trace:$out/callgrind.trace" "$here/instructions.sh" \
    "$b" | tail -n 1)"
  rm -f "$out"/callgrind.trace*
done

cc -O2 -o "$out/malloc_loop" "$here/malloc_loop.c"
sed -n '/^SQL = """/,/^"""/p' "$here/../tests/replacement/real_programs.py" | sed '1d;$d' >"$out/sql"

# The median wall time in ms of RUNS runs of the command, its output discarded.
median_ms() {
  for _ in $(seq "$runs"); do
    local s e
    s=$(date +%s%N)
    "$@" </dev/null >/dev/null 2>&1 || true
    e=$(date +%s%N)
    echo $(((e - s) / 1000))
  done | sort -n | awk '{ v[NR] = $1 } END { printf "%.1f", v[int((NR + 1) / 2)] / 1000 }'
}

# Events and bytes of every trace file at $1 and $1.<pid>, read by the trace_stats of build $2
# (this one's if not given): "events bytes".
trace_size() {
  local events=0 bytes=0 f e b
  for f in "$1" "$1".*; do
    [ -f "$f" ] || continue
    e=$("${2:-$build}/bench/memkit_trace_stats" "$f" | awk '$1 == "events" { print $2 }')
    b=$(stat -c %s "$f")
    events=$((events + e))
    bytes=$((bytes + b))
  done
  echo "$events $bytes"
}


# One run of the command: its wall time in µs, its output discarded.
once_us() {
  local s e
  s=$(date +%s%N)
  "$@" </dev/null >/dev/null 2>&1 || true
  e=$(date +%s%N)
  echo $(((e - s) / 1000))
}
# The median in ms of the µs on stdin.
median_of() { sort -n | awk '{ v[NR] = $1 } END { printf "%.1f", v[int((NR + 1) / 2)] / 1000 }'; }

# BEFORE's comparison: the program not recorded, recorded by BEFORE's library and by this build's,
# the three run in turn RUNS times.
compare() { # name command...
  local name=$1
  shift
  local path=$out/${name//[^a-z0-9-]/_}.trace
  local b ev_b by_b ev_a by_a
  for b in "$before" "$build"; do
    env MEMKIT_OPTIONS="trace:$path" LD_PRELOAD="$b/src/libmemkit-preload.so" "$@" </dev/null \
      >/dev/null 2>&1 || true
    if [ "$b" = "$before" ]; then read -r ev_b by_b < <(trace_size "$path" "$b"); else
      read -r ev_a by_a < <(trace_size "$path" "$b"); fi
    rm -f "$path" "$path".*
  done
  : >"$out/plain"
  : >"$out/before"
  : >"$out/after"
  for _ in $(seq "$runs"); do
    once_us env LD_PRELOAD="$lib" "$@" >>"$out/plain"
    once_us env MEMKIT_OPTIONS="trace:$path" LD_PRELOAD="$before/src/libmemkit-preload.so" "$@" \
      >>"$out/before"
    rm -f "$path" "$path".*
    once_us env MEMKIT_OPTIONS="trace:$path" LD_PRELOAD="$lib" "$@" >>"$out/after"
    rm -f "$path" "$path".*
  done
  local plain tb ta
  plain=$(median_of <"$out/plain")
  tb=$(median_of <"$out/before")
  ta=$(median_of <"$out/after")
  printf '%-24s %10d %8.2f %8.2f %10s %10s %10s %7.2f %7.2f\n' "$name" "$ev_a" \
    "$(echo "$by_b / $ev_b" | bc -l)" "$(echo "$by_a / $ev_a" | bc -l)" "$plain" "$tb" "$ta" \
    "$(echo "$tb / $plain" | bc -l)" "$(echo "$ta / $plain" | bc -l)"
}
if [ -n "$before" ]; then
  printf '\n%-24s %10s %8s %8s %10s %10s %10s %7s %7s\n' program events B/ev_bef B/event memkit_ms \
    before_ms traced_ms r_before ratio
  measure() { compare "$@"; }
fi

heaptrack_bin=$(command -v heaptrack || true)
[ -n "$before" ] || printf '\n%-22s %10s %8s %10s %10s %7s' program events B/event memkit_ms traced_ms ratio
[ -n "$before" ] || [ -z "$heaptrack_bin" ] || printf ' %9s %12s %7s %8s' glibc_ms heaptrack_ms \
  ratio B/event
[ -n "$before" ] || echo
# Every run goes through env, which sets what differs: the allocator and the options.
[ -n "$before" ] || measure() { # name command...
  local name=$1
  shift
  local path=$out/${name//[^a-z0-9-]/_}.trace
  env MEMKIT_OPTIONS="trace:$path" LD_PRELOAD="$lib" "$@" </dev/null >/dev/null 2>&1 || true
  read -r events bytes < <(trace_size "$path")
  rm -f "$path" "$path".*
  local plain traced
  plain=$(median_ms env LD_PRELOAD="$lib" "$@")
  traced=$(median_ms env MEMKIT_OPTIONS="trace:$path" LD_PRELOAD="$lib" "$@")
  rm -f "$path" "$path".*
  printf '%-22s %10d %8.2f %10s %10s %7.2f' "$name" "$events" "$(echo "$bytes / $events" | bc -l)" \
    "$plain" "$traced" "$(echo "$traced / $plain" | bc -l)"
  if [ -n "$heaptrack_bin" ]; then
    local glibc ht ht_bytes
    local ht_out=$out/ht.${name//[^a-z0-9-]/_}
    glibc=$(median_ms env "$@")
    ht=$(median_ms env "$heaptrack_bin" -o "$ht_out" "$@")
    rm -f "$ht_out"*
    env "$heaptrack_bin" -o "$ht_out" "$@" </dev/null >/dev/null 2>&1 || true
    ht_bytes=$(cat "$ht_out"* 2>/dev/null | wc -c)
    rm -f "$ht_out"*
    printf ' %9s %12s %7.2f %8.2f' "$glibc" "$ht" "$(echo "$ht / $glibc" | bc -l)" \
      "$(echo "$ht_bytes / $events" | bc -l)"
  fi
  echo
}
measure malloc_loop "$out/malloc_loop"
# As tests/replacement/real_programs.py runs it: every object through malloc.
export PYTHONMALLOC=malloc PYTHONHASHSEED=0
measure python3 /usr/bin/python3 "$here/../tests/replacement/programs/python_workload.py"
measure sqlite3 sqlite3 :memory: "$(cat "$out/sql")"
if [ -n "$bench_app" ]; then
  for w in "${workloads[@]}"; do
    measure "memkit-bench:$w" "$bench_app" --workloads "$w" --variants std --processes 1
  done
fi
