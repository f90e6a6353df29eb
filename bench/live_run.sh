# SPDX-License-Identifier: BSL-1.0
# shellcheck shell=bash
# bench/live_run.sh: sourced by bench/fidelity.sh and bench/advice_proof.sh, which time programs
# live and set `out` to their temporary directory.
#
# live_run PRELOAD COMMAND...: runs COMMAND once with LD_PRELOAD=PRELOAD (none if empty), its
# output discarded, and prints "MICROSECONDS PEAK_RSS_KIB": the wall time around the run and
# /usr/bin/time's maximum resident set size.
live_run() {
  local preload=$1 s e
  shift
  s=$(date +%s%N)
  /usr/bin/time -f %M -o "${out:?set by the sourcing script}/rss" env ${preload:+LD_PRELOAD=$preload} "$@" </dev/null >/dev/null 2>&1
  e=$(date +%s%N)
  echo "$(((e - s) / 1000)) $(tail -n 1 "$out/rss")"
}
