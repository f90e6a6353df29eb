#!/usr/bin/env python3
# SPDX-License-Identifier: BSL-1.0
"""Tables of memkit_micro_bench results: per pattern, every variant sorted by median time.

Usage: bench/compare.py build/bench/micro.json

Benchmarks are named BM_<Variant>_<Pattern>. Times are CPU time per item (from items_per_second),
or per iteration for a benchmark that counts no items. Speed-ups are ratios of medians from the
same run.
"""

import argparse
import json
import re

# The plain heap every table is compared with: Malloc in the allocator patterns, the standard
# allocator (Std) in the container ones.
HEAP = ("Malloc", "Std")
# The variant a pattern is judged against besides the heap.
BASELINES = {"Alloc": "PmrMonotonic"}
NS_PER_UNIT = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}
LEGEND = """\
ns/item: median CPU time per item: an allocation and its free (AllocFree*), an allocation and its
share of the reset (Alloc), or what the benchmark counts (per iteration if it counts nothing).
cv: its coefficient of variation. vs X: X's median time / this variant's.
heap B/block (or /node): heap bytes per live block at the peak, allocator overhead included."""
# Tables come in this order; other patterns follow by name, numbers compared as numbers.
ORDER = ["AllocFree", "AllocFreeFifo", "AllocFreeShuffled", "Alloc"]


def pattern_key(pattern):
    if pattern in ORDER:
        return ORDER.index(pattern), []
    return len(ORDER), [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", pattern)]


def ns_per_item(b):
    if "items_per_second" in b:
        return 1e9 / b["items_per_second"]
    return b["cpu_time"] * NS_PER_UNIT[b["time_unit"]]


def load(path):
    """Returns {pattern: {variant: row}}, patterns and variants in the order the run listed them.

    A row is the median aggregate when the run had repetitions, else the single run.
    """
    with open(path, encoding="utf-8") as f:
        benchmarks = json.load(f)["benchmarks"]
    has_median = any(b.get("aggregate_name") == "median" for b in benchmarks)
    cv = {b["run_name"]: b["cpu_time"] for b in benchmarks if b.get("aggregate_name") == "cv"}
    results = {}
    for b in benchmarks:
        if b.get("aggregate_name") != ("median" if has_median else None):
            continue
        _, variant, pattern = b["run_name"].split("_", 2)
        results.setdefault(pattern, {})[variant] = {
            "ns": ns_per_item(b),
            "cv": cv.get(b["run_name"]),
            "heap": next(((k, v) for k, v in b.items() if k.startswith("heap_per_")), None),
        }
    return results


def ratio(baseline, row):
    return f"{baseline['ns'] / row['ns']:.2f}x" if baseline else "-"


def print_table(pattern, rows):
    heap_name = next((name for name in HEAP if name in rows), HEAP[0])
    baseline_name = BASELINES.get(pattern)
    heap, baseline = rows.get(heap_name), rows.get(baseline_name)
    header = ["variant", "ns/item", "cv", f"vs {heap_name}"]
    if baseline_name:
        header.append(f"vs {baseline_name}")
    # The counter's name gives the unit: heap_per_block (patterns.hpp), heap_per_node (containers).
    units = {row["heap"][0].removeprefix("heap_per_") for row in rows.values() if row["heap"]}
    header.append(f"heap B/{units.pop()}" if len(units) == 1 else "heap B")
    lines = [header]
    for variant, row in sorted(rows.items(), key=lambda item: item[1]["ns"]):
        line = [variant, f"{row['ns']:.2f}", f"{row['cv']:.1%}" if row["cv"] is not None else "-"]
        line.append(ratio(heap, row))
        if baseline_name:
            line.append(ratio(baseline, row))
        line.append(f"{row['heap'][1]:.1f}" if row["heap"] else "-")
        lines.append(line)
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    print(f"\n{pattern}")
    for n, line in enumerate(lines):
        cells = [c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(line, widths))]
        print("| " + " | ".join(cells) + " |")
        if n == 0:
            print("|" + "|".join("-" * (w + 2) for w in widths) + "|")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("json", help="output of memkit_micro_bench --benchmark_out_format=json")
    args = parser.parse_args()
    print(LEGEND)
    results = load(args.json)
    for pattern in sorted(results, key=pattern_key):
        print_table(pattern, results[pattern])


if __name__ == "__main__":
    main()
