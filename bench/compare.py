#!/usr/bin/env python3
"""Tables of memkit_micro_bench results: per pattern, every variant sorted by median time.

Usage: bench/compare.py build/bench/micro.json

Benchmarks are named BM_<Variant>_<Pattern>. One item is one allocation and its free, so the time
per item comes from items_per_second (CPU time). Speed-ups are ratios of medians from the same run.
"""

import argparse
import json

# The variant each pattern is judged against besides Malloc.
BASELINES = {"Alloc": "PmrMonotonic"}
# Tables come in this order; patterns not listed follow in the order the run listed them.
ORDER = ["AllocFree", "AllocFreeFifo", "AllocFreeShuffled", "Alloc"]


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
            "ns": 1e9 / b["items_per_second"],
            "cv": cv.get(b["run_name"]),
            "heap": b.get("heap_per_block"),
        }
    return results


def ratio(baseline, row):
    return f"{baseline['ns'] / row['ns']:.2f}x" if baseline else "-"


def print_table(pattern, rows):
    baseline_name = BASELINES.get(pattern)
    malloc, baseline = rows.get("Malloc"), rows.get(baseline_name)
    header = ["variant", "ns/pair", "cv", "vs Malloc"]
    if baseline_name:
        header.append(f"vs {baseline_name}")
    header.append("heap B/block")
    lines = [header]
    for variant, row in sorted(rows.items(), key=lambda item: item[1]["ns"]):
        line = [variant, f"{row['ns']:.2f}", f"{row['cv']:.1%}" if row["cv"] is not None else "-"]
        line.append(ratio(malloc, row))
        if baseline_name:
            line.append(ratio(baseline, row))
        line.append(f"{row['heap']:.1f}" if row["heap"] is not None else "-")
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
    print("ns/pair: median CPU time per allocation and its free (or its share of a reset);")
    print("cv: its coefficient of variation; vs X: X's median time / this variant's;")
    print("heap B/block: heap bytes per live block at the peak, the allocator's overhead included.")
    results = load(args.json)
    for pattern in sorted(results, key=lambda p: ORDER.index(p) if p in ORDER else len(ORDER)):
        print_table(pattern, results[pattern])


if __name__ == "__main__":
    main()
