#!/bin/sh
# SPDX-License-Identifier: BSL-1.0
# apps/memkit-bench/tests/advise_report.sh MEMKIT_BENCH DIR: advise on a synthetic trace with
# --report DIR, then checks the page has the advice's pictures: the candidates' gains, a chart of
# each advised site's sizes and lifetimes, each replay's time beside its memory, and the memory
# over time of the trace and the replays.
set -eu
bench=$1
dir=$2
rm -rf "$dir"
"$bench" advise synthetic:20000:2 --processes 2 --allocators std --top 2 --report "$dir" >/dev/null
test -s "$dir/advice-gains.png"
grep -q "id='advice'" "$dir/index.html"
sites=$(ls "$dir" | grep -c '^site-[0-9]*\.png$')
replays=$(ls "$dir" | grep -c '^time-rss-.*\.png$')
# --top 2 profiles the 2 sites with the most operations and 2 by peak bytes (overlapping).
[ "$sites" -ge 2 ] || { echo "advise_report: $sites site charts, expected at least 2" >&2; exit 1; }
[ "$replays" -eq 2 ] || { echo "advise_report: $replays time-rss charts, expected 2" >&2; exit 1; }
grep -q "site-[0-9]*\.png" "$dir/index.html"
test -s "$dir/memory-over-time.png"
grep -q "id='memory'" "$dir/index.html"
echo "advise_report: $sites site charts, $replays replay charts, the gains and memory charts"
