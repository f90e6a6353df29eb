#!/bin/sh
# SPDX-License-Identifier: BSL-1.0
# apps/memkit-bench/tests/replay_python.sh: python3 recorded under libmemkit-preload.so
# (MEMKIT_OPTIONS=trace:PATH), then the trace replayed against glibc and memkit's replacement:
# exit 0 means python3 ran as it does on glibc, the trace read back whole, the verifier found every
# free's allocation, and every replayed block's stamp and the checksums agreed (docs/TRACE.md).
# Usage: replay_python.sh PRELOAD MEMKIT_BENCH PYTHON3
set -eu
preload=$1
bench=$2
python=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
program='import json; d = [{"k": i, "v": str(i) * 8} for i in range(20000)]; print(len(json.dumps(d)))'
"$python" -c "$program" >"$dir/glibc.out"
LD_PRELOAD=$preload MEMKIT_OPTIONS=trace:$dir/python.trace "$python" -c "$program" >"$dir/memkit.out"
cmp "$dir/glibc.out" "$dir/memkit.out"
"$bench" replay "$dir/python.trace" --allocators std,memkit --processes 2 >"$dir/replay.txt"
cat "$dir/replay.txt"
grep -q '^memkit ' "$dir/replay.txt"
