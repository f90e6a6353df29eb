#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
# bench/advice_proof.sh: is the gain `memkit-bench advise` predicts the gain the program gets when
# the advice is applied in its code? For docs/TRACE.md#advice-checked-against-the-live-program.
#
# Each of examples/advice_*_example.cpp allocates from one hot call site under malloc, or, given
# the strategy's name, from that memkit strategy in code. Each is recorded once under
# libmemkit-preload.so (MEMKIT_OPTIONS=trace:PATH) running its malloc form, and advised
# (`memkit-bench advise TRACE --processes PROCESSES --json`); then both forms run RUNS times,
# interleaved, under the general-purpose allocator the advisor found best (its LD_PRELOAD as the
# advisor's stderr names it; std: none), since the advice is a gain over that allocator. Live
# time gain: the malloc form's median wall time / the strategy's. Live peak-RSS gain: the same of
# the median peak RSS (`/usr/bin/time -f %M`) above a run of one iteration, as the replay counts
# peak RSS above its start.
#
# Prints Markdown on stdout: per program the hot site's advice, the replay's predicted gains with
# their 95 % intervals, the live gains, and live / predicted. Progress goes to stderr. It builds
# nothing.
#
# Usage: bench/advice_proof.sh BUILD_DIR [MEMKIT_BENCH]
#   BUILD_DIR: a Release build with memkit-preload and the advice_*_example targets built.
#   MEMKIT_BENCH: memkit-bench (default BUILD_DIR/apps/memkit-bench/memkit-bench).
#   RUNS (environment, default 21): live runs per form.
#   PROCESSES (default 25): the advisor's processes per variant (replays of a few million
#   operations differ by up to 1.5x between processes here: fewer leave intervals too wide to
#   show a gain of 10 %).
set -euo pipefail
build=$(cd "${1:?usage: bench/advice_proof.sh BUILD_DIR [MEMKIT_BENCH]}" && pwd)
bench=${2:-$build/apps/memkit-bench/memkit-bench}
runs=${RUNS:-21}
processes=${PROCESSES:-25}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck disable=SC2034 # read by results_header (bench/live_run.sh)
repo=$(cd "$here/.." && pwd)
lib=$build/src/libmemkit-preload.so
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# program, the strategy its second form uses, iterations: each form runs for a few tenths of a
# second on a 2-core EPYC.
programs=("request arena 150000" "scratch stack 8000" "nodes pool 6000000" "index pool 3000000")

. "$here/live_run.sh"

for entry in "${programs[@]}"; do
  read -r name strategy iterations <<<"$entry"
  example=$build/examples/advice_${name}_example
  [ -x "$example" ] || {
    echo "bench/advice_proof.sh: $example not built" >&2
    exit 2
  }
  echo "advice proof: $name: recording and advising" >&2
  env MEMKIT_OPTIONS="trace:$out/$name.trace" LD_PRELOAD="$lib" "$example" malloc "$iterations" \
    >/dev/null
  "$bench" advise "$out/$name.trace" --processes "$processes" --json "$out/$name.json" \
    >"$out/$name.advice.txt" 2>"$out/$name.advice.err"
  rm -f "$out/$name.trace"
  best=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["advice"]["best_general_purpose"])' \
    "$out/$name.json")
  preload=""
  if [ "$best" != std ]; then
    preload=$(sed -n "s/.*: $best (LD_PRELOAD=\(.*\))\$/\1/p" "$out/$name.advice.err" | head -n 1)
  fi
  echo "advice proof: $name: $runs live runs of each form under $best" >&2
  for _ in $(seq "$runs"); do
    {
      echo "$name malloc $(live_run "$preload" "$example" malloc "$iterations")"
      echo "$name $strategy $(live_run "$preload" "$example" "$strategy" "$iterations")"
      echo "$name malloc-1 $(live_run "$preload" "$example" malloc 1)"
      echo "$name $strategy-1 $(live_run "$preload" "$example" "$strategy" 1)"
    } >>"$out/live"
  done
done

# Where and what: the header of the generated Markdown.
results_header bench/advice_proof.sh "Advice checked against the live program" \
  "RUNS=$runs PROCESSES=$processes bench/advice_proof.sh BUILD_DIR"

python3 - "$out" "$runs" "$processes" "${programs[@]}" <<'EOF'
import json, statistics, sys
out, runs, processes, programs = sys.argv[1], sys.argv[2], sys.argv[3], [p.split() for p in sys.argv[4:]]
live = {}
for line in open(f"{out}/live"):
    name, form, us, kib = line.split()
    live.setdefault((name, form), []).append((int(us) / 1000, int(kib)))
med = lambda name, form, i: statistics.median(r[i] for r in live[(name, form)])

def gain(r, lo, hi):
    return f"{r:.2f}x [{lo:.2f}, {hi:.2f}]" if lo and hi else f"{r:.2f}x"

print(f"Advice: `memkit-bench advise TRACE --processes {processes}` on a recording of the malloc form; "
      "the advice is the hot site's, or its group's where the advisor routed it with other sites "
      "of the same candidate (the program's strategy form serves them all); the predicted time gain "
      "is the advisor's paired one (both sides replayed in each process). "
      f"Live: medians of {runs} runs of each form under the best general-purpose allocator the "
      "advisor named. Gains are the malloc form's / the strategy's: time, and peak RSS above a "
      "one-iteration run of the same form (none where either is below 1 MiB). Saved: the best allocator's median time less the "
      "candidate's, in the advisor's second round of replays and live.\n")
print("| program | hot site: ops, pattern | advice | best allocator | predicted time gain | live time gain | live / predicted | saved ms: replay, live | predicted peak-RSS gain | live peak-RSS gain |")
print("|---|---|---|---|---|---|---:|---|---|---|")
rows = []
for name, strategy, iterations in programs:
    doc = json.load(open(f"{out}/{name}.json"))
    a = doc["advice"]
    # The hot site's advice, or its group's: the program's form applies the strategy to every
    # site its one allocation in the source shows as.
    hot = max((s for s in a["sites"] if not s["group"]), key=lambda s: s["site"]["ops"])
    site = hot["site"]
    hot = next((s for s in a["sites"] if site["site"] in s["group"]), hot)
    second = {r["variant"]: r["p50_us"] for r in doc["results"] if "candidates on" in r["workload"]}
    saved_replay = (second[a["baseline_variant"]] - second[hot["variant"]]) / 1000 if hot["variant"] in second else float("nan")
    saved_live = med(name, "malloc", 0) - med(name, strategy, 0)
    t_live = med(name, "malloc", 0) / med(name, strategy, 0)
    heap = lambda form: med(name, form, 1) - med(name, form + "-1", 1)
    # Peak RSS does not resolve heaps of a few pages: no gain is given below 1 MiB.
    r_live = f"{heap('malloc') / heap(strategy):.2f}x" if min(heap("malloc"), heap(strategy)) >= 1024 else "-"
    pattern = f"{site['ops']} ops, {site['candidate']} ({site['reason']})"
    print(f"| {name} ({iterations}) | {pattern} | {hot['verdict']} ({hot['why']}) | {a['best_general_purpose']} | "
          f"{gain(hot['time_gain'], hot['time_gain_lo'], hot['time_gain_hi'])} | {t_live:.2f}x | "
          f"{t_live / hot['time_gain']:.2f} | {saved_replay:.1f}, {saved_live:.1f} | "
          f"{gain(hot['rss_gain'], hot['rss_gain_lo'], hot['rss_gain_hi'])} | {r_live} |")
    rows.append((name, strategy))
print("\n| program | form | live ms | peak RSS KiB | one-iteration peak RSS KiB |\n|---|---|---:|---:|---:|")
for name, strategy in rows:
    for form in ("malloc", strategy):
        print(f"| {name} | {form} | {med(name, form, 0):.1f} | {med(name, form, 1):.0f} | {med(name, form + '-1', 1):.0f} |")
EOF
