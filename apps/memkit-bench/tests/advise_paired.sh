#!/bin/sh
# SPDX-License-Identifier: BSL-1.0
# apps/memkit-bench/tests/advise_paired.sh MEMKIT_BENCH DIR: the advisor's paired measurement and
# its groups (docs/TRACE.md#advice). A replay child given two policies replays each in turn and
# reports the times of each round; advise on a synthetic trace whose arena, stack and multipool
# candidates each have two sites routes each pair together as one more candidate, and every
# candidate's time gain has an interval from the paired processes.
set -eu
bench=$1
dir=$2
rm -rf "$dir"
mkdir -p "$dir"
"$bench" replay synthetic:5000:2 --as-child std --child-paired ";*=pool" --child-rounds 3 \
  --json "$dir/child.json"
"$bench" advise synthetic:20000:2 --processes 3 --rounds 2 --allocators std --top 6 \
  --json "$dir/advice.json" >/dev/null 2>"$dir/advice.err"
python3 - "$dir" <<'PY'
import json, sys
d = sys.argv[1]
seconds = json.load(open(f"{d}/child.json"))["paired_seconds"]
assert len(seconds) == 2 and all(len(s) == 3 for s in seconds), seconds
assert all(t > 0 for s in seconds for t in s), seconds

advice = json.load(open(f"{d}/advice.json"))["advice"]
assert advice["baseline_variant"] == "std+routed", advice["baseline_variant"]
groups = {a["site"]["candidate"]: sorted(a["group"]) for a in advice["sites"] if a["group"]}
want = {"arena": [200, 201], "stack": [100, 101], "multipool": [500, 501]}
assert groups == want, groups
for a in advice["sites"]:
    if not a["variant"]:
        continue
    assert 0 < a["time_gain_lo"] <= a["time_gain"] <= a["time_gain_hi"], a
    assert a["time_gain_between_processes"] > 0, a
    if a["group"]:
        assert a["why"].endswith("routed together"), a["why"]
        assert all(f"{s}=" in a["variant"] for s in a["group"]), a["variant"]
print("advise_paired: 2 policies x 3 rounds in one child;", len(groups), "groups:", groups)
PY
