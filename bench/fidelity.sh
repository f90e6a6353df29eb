#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
# bench/fidelity.sh: does `memkit-bench replay` rank the allocators as the live program does, and
# does the replay's peak RSS match the program's? For docs/TRACE.md#fidelity.
#
# Each program is recorded once under libmemkit-preload.so (MEMKIT_OPTIONS=trace:PATH), its trace
# replayed (`memkit-bench replay TRACE --allocators ALLOCATORS --processes PROCESSES --json`),
# and the program itself run RUNS times under each allocator's LD_PRELOAD (the libraries the
# replay's own stderr names, so both sides load the same files; std: no preload), the runs
# interleaved across allocators. Live time: the median wall time of the whole process. Live heap:
# the median peak RSS (`/usr/bin/time -f %M`) minus that of a trivial run of the same binary under
# the same allocator (its code, libraries and start-up), since the replay's peak RSS is counted
# above the replaying process's own start. Where a program forks (memkit-bench measures in a forked
# child) the largest trace file, the child doing the work, is the one replayed, and the live time
# and heap of memkit-bench's workloads are the child's, as memkit-bench's --json reports them (its
# peak RSS above the child's start, as the replay's is above its own).
#
# Prints Markdown on stdout: per program the allocators in order by live and by replayed time,
# Kendall's tau between the two orders, the pairs of allocators the live runs order surely (a
# bootstrap interval of the ratio of their medians that excludes 1) with how many of them the
# replay orders alike and tau over them alone, the replayed / live heap ratios; then each
# allocator's figures. Progress goes to stderr. It builds nothing.
#
# Usage: bench/fidelity.sh BUILD_DIR [MEMKIT_BENCH]
#   BUILD_DIR: a Release build with memkit-preload (src/libmemkit-preload.so) built.
#   MEMKIT_BENCH: memkit-bench (default BUILD_DIR/apps/memkit-bench/memkit-bench).
#   RUNS (environment, default 5): live runs per allocator and program.
#   PROCESSES (default 5): replay processes per allocator.
#   ALLOCATORS (default std,memkit,mimalloc,jemalloc,tcmalloc,tbbmalloc).
#   PROGRAMS (default: all): a comma-separated subset of python3, sqlite3, git, json-tree, larson-2t.
set -euo pipefail
build=$(cd "${1:?usage: bench/fidelity.sh BUILD_DIR [MEMKIT_BENCH]}" && pwd)
bench=${2:-$build/apps/memkit-bench/memkit-bench}
runs=${RUNS:-5}
processes=${PROCESSES:-5}
allocators=${ALLOCATORS:-std,memkit,mimalloc,jemalloc,tcmalloc,tbbmalloc}
programs=${PROGRAMS:-python3,sqlite3,git,json-tree,larson-2t}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
lib=$build/src/libmemkit-preload.so
for f in "$lib" "$bench"; do
  [ -e "$f" ] || {
    echo "bench/fidelity.sh: $f not found (build memkit-preload and memkit-bench first)" >&2
    exit 2
  }
done
command -v sqlite3 >/dev/null || { echo "bench/fidelity.sh: sqlite3 not installed" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

sed -n '/^SQL = """/,/^"""/p' "$repo/tests/replacement/real_programs.py" | sed '1d;$d' >"$out/sql"
git clone -q --no-local "$repo" "$out/clone"
export PYTHONMALLOC=malloc PYTHONHASHSEED=0

# Sets cmd, the program's command, and trivial, a trivial run of the same binary whose peak RSS is
# subtracted.
set_commands() {
  case $1 in
  python3) cmd=(python3 "$repo/tests/replacement/programs/python_workload.py") trivial=(python3 -c pass) ;;
  sqlite3) cmd=(sqlite3 :memory: ".read $out/sql") trivial=(sqlite3 :memory: "select 1;") ;;
  git) cmd=(git -C "$out/clone" --no-pager log -p --no-color) trivial=(git -C "$out/clone" rev-parse HEAD) ;;
  json-tree | larson-2t) cmd=("$bench" --workloads "$1" --variants std --processes 1 --json "$out/own.json") trivial=("$bench" --list) ;;
  *) echo "bench/fidelity.sh: unknown program $1" >&2 && exit 2 ;;
  esac
}

. "$here/live_run.sh"

# The time in µs a memkit-bench program took to run its workload and its peak RSS in KiB above its
# start, by its own --json document (the measuring child's timed iterations and its first, untimed
# one: the process whose trace is replayed), or nothing for another program.
own_figures() {
  [ -f "$out/own.json" ] || return 0
  python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
print(round(r["mean_us"] * r["iterations"] / r["processes"] + r["cold_us"]), r["peak_rss_kib"])' "$out/own.json"
}

declare -A preload
IFS=, read -r -a allocator_list <<<"$allocators"
IFS=, read -r -a program_list <<<"$programs"
for p in "${program_list[@]}"; do
  set_commands "$p"
  echo "fidelity: $p: recording" >&2
  env MEMKIT_OPTIONS="trace:$out/$p.trace" LD_PRELOAD="$lib" "${cmd[@]}" </dev/null >/dev/null 2>&1
  trace=$(ls -S "$out/$p".trace* | head -n 1)
  echo "fidelity: $p: replaying $(basename "$trace")" >&2
  "$bench" replay "$trace" --allocators "$allocators" --processes "$processes" \
    --json "$out/$p.replay.json" >"$out/$p.replay.txt" 2>"$out/$p.replay.err"
  grep -q 'memkit-bench: .*: ' "$out/$p.replay.err" &&
    sed -n 's/^memkit-bench: [^:]*: \(.*events.*\)$/\1/p' "$out/$p.replay.err" | head -n 1 >"$out/$p.summary"
  for a in "${allocator_list[@]}"; do
    [ "$a" = std ] && preload[$a]="" && continue
    preload[$a]=$(sed -n "s/.*: $a (LD_PRELOAD=\(.*\))\$/\1/p" "$out/$p.replay.err" | head -n 1)
    [ -n "${preload[$a]}" ] || {
      echo "bench/fidelity.sh: the replay ran no $a process" >&2
      exit 1
    }
  done
  rm -f "$out/$p.trace" "$out/$p.trace".*
  echo "fidelity: $p: $runs live runs per allocator" >&2
  for _ in $(seq "$runs"); do
    for a in "${allocator_list[@]}"; do
      rm -f "$out/own.json"
      echo "$p $a live $(live_run "${preload[$a]}" "${cmd[@]}") $(own_figures)" >>"$out/live"
      echo "$p $a trivial $(live_run "${preload[$a]}" "${trivial[@]}")" >>"$out/live"
    done
  done
done

# Where and what: the header of the generated Markdown.
results_header bench/fidelity.sh "Replay fidelity: replayed against live allocator rankings and peak RSS" \
  "RUNS=$runs PROCESSES=$processes ALLOCATORS=$allocators PROGRAMS=$programs bench/fidelity.sh BUILD_DIR"

python3 - "$out" "$programs" "$allocators" "$runs" "$processes" <<'EOF'
import json, statistics, sys
out, programs, allocators, runs, processes = sys.argv[1], sys.argv[2].split(","), sys.argv[3].split(","), sys.argv[4], sys.argv[5]
live = {}
for line in open(f"{out}/live"):
    p, a, kind, us, kib, *own = line.split()
    live.setdefault((p, a, kind), []).append(
        (int(us) / 1000, int(kib), int(own[0]) / 1000 if own else None, int(own[1]) if own else None))

def med(rows, i):
    return statistics.median(r[i] for r in rows)

import random

def separable(a, b):
    """Whether the samples a and b (times) differ surely: the 95 % percentile-bootstrap interval
    of median(a) / median(b) (2000 resamples, fixed seed) excludes 1."""
    g = random.Random(2013)
    ratios = sorted(statistics.median(g.choices(a, k=len(a))) / statistics.median(g.choices(b, k=len(b)))
                    for _ in range(2000))
    return ratios[49] > 1 or ratios[1949] < 1

def tau(x, y):
    """Kendall's tau-b of two score lists over the same items."""
    conc = disc = tx = ty = 0
    n = len(x)
    for i in range(n):
        for j in range(i + 1, n):
            dx, dy = x[i] - x[j], y[i] - y[j]
            if dx == 0 and dy == 0:
                continue
            if dx == 0:
                tx += 1
            elif dy == 0:
                ty += 1
            elif (dx > 0) == (dy > 0):
                conc += 1
            else:
                disc += 1
    d = ((conc + disc + tx) * (conc + disc + ty)) ** 0.5
    return (conc - disc) / d if d else 0.0

summary, detail = [], []
for p in programs:
    doc = json.load(open(f"{out}/{p}.replay.json"))
    rows = {r["variant"]: r for r in doc["results"]}
    names = [a for a in allocators if a in rows]
    # Live time less the trivial run's: the process's start and exit under that allocator (loading
    # and initialising it), which the replay, timed from its threads' release, does not hold.
    whole = [med(live[(p, a, "live")], 0) for a in names]
    lt = [w - med(live[(p, a, "trivial")], 0) for w, a in zip(whole, names)]
    # A memkit-bench program's own time for its workload, where it gave one: the measuring child,
    # whose trace is the one replayed, rather than the whole run with its parent and zygote.
    own = all(r[2] is not None for a in names for r in live[(p, a, "live")])
    if own:
        lt = [med(live[(p, a, "live")], 2) for a in names]
    rt = [rows[a]["p50_us"] / 1000 for a in names]
    # Per live run its time less the trivial runs' median; per replay process its time.
    lt_runs = [[r[2] if own else r[0] - med(live[(p, a, "trivial")], 0) for r in live[(p, a, "live")]]
               for a in names]
    rt_runs = [[t / 1000 for t in rows[a]["process_p50_us"]] for a in names]
    # The pairs the live runs order surely, and how many of them the replay orders alike.
    live_sure = [(i, j) for i in range(len(names)) for j in range(i + 1, len(names))
                 if separable(lt_runs[i], lt_runs[j])]
    alike = sum(1 for i, j in live_sure if (lt[i] - lt[j]) * (rt[i] - rt[j]) > 0)
    alike_sure = sum(1 for i, j in live_sure
                     if (lt[i] - lt[j]) * (rt[i] - rt[j]) > 0 and separable(rt_runs[i], rt_runs[j]))
    heap = ([med(live[(p, a, "live")], 3) for a in names] if own else
            [med(live[(p, a, "live")], 1) - med(live[(p, a, "trivial")], 1) for a in names])
    rrss = [rows[a]["peak_rss_kib"] for a in names]
    ratios = [r / h if h > 0 else float("inf") for r, h in zip(rrss, heap)]
    order = lambda v: " < ".join(names[i] for i in sorted(range(len(names)), key=lambda i: v[i]))
    # Pairs the replay orders unlike the live runs, with the live gap between them.
    disc = []
    for i in range(len(names)):
        for j in range(i + 1, len(names)):
            if (lt[i] - lt[j]) * (rt[i] - rt[j]) < 0:
                disc.append(f"{names[i]}/{names[j]} {abs(lt[i] - lt[j]) / min(lt[i], lt[j]) * 100:.1f} %")
    within = sum(1 for q in ratios if abs(q - 1) <= 0.10)
    summary.append(f"| {p} | {open(f'{out}/{p}.summary').read().strip().split(',')[0]} | {order(lt)} | {order(rt)} | "
                   f"{tau(lt, rt):.2f} | {len(live_sure)} of {len(names) * (len(names) - 1) // 2}: {alike} alike ({alike_sure} surely), tau {(2 * alike - len(live_sure)) / max(len(live_sure), 1):.2f} | {tau(whole, rt):.2f} | {', '.join(disc) or '-'} | {min(ratios):.2f}..{max(ratios):.2f} | {within} of {len(names)} |")
    detail.append(f"\n### {p}\n\n| allocator | whole run ms | live ms | replay ms | live - std ms | replay - std ms | live heap KiB | replay peak KiB | replay / live heap |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    s = names.index("std") if "std" in names else 0
    for i, a in enumerate(names):
        detail.append(f"| {a} | {whole[i]:.1f} | {lt[i]:.1f} | {rt[i]:.1f} | {lt[i] - lt[s]:+.1f} | {rt[i] - rt[s]:+.1f} | {heap[i]:.0f} | {rrss[i]} | {ratios[i]:.2f} |")

print(f"Live: median of {runs} runs per allocator, wall time and peak RSS, each less a trivial run's of the same binary under the same allocator (whole run: the time not less it), "
      "except the time and heap of memkit-bench's workloads (json-tree, larson-2t): the workload's own, as memkit-bench's --json gives them (its measuring child's iterations, timed and cold, and its peak RSS above its start), "
      "since that child's trace is the one replayed; replay: "
      f"`memkit-bench replay --processes {processes}` (median time, peak RSS above the replay's start). "
      "tau: Kendall's tau-b between the two orders by time (whole run: with the live whole runs' order). Pairs the live runs order surely: "
      "those whose 95 % bootstrap interval of the ratio of the live medians excludes 1, and of them how many the replay orders alike "
      "(surely: its processes' interval excludes 1 too), and Kendall's tau over those pairs alone, (alike - unlike) / pairs, "
      "which counts a pair the live runs cannot order as neither agreeing nor disagreeing (Goodman and Kruskal's gamma). "
      "Discordant: the pairs the replay orders "
      "unlike the live runs, with their live gap. Per program: each allocator's time less std's, live and replayed.\n")
print("| program | trace | live order (fastest first) | replay order | tau | pairs the live runs order surely: the replay alike, tau over them | tau, whole run | discordant pairs (live gap) | replay / live heap | within 10 % |")
print("|---|---|---|---|---:|---|---:|---|---|---|")
print("\n".join(summary))
print("\n".join(detail))
EOF
