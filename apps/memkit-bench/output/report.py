#!/usr/bin/env python3
# SPDX-License-Identifier: BSL-1.0
"""memkit-bench's report: PNG charts and an index.html from the JSON memkit-bench writes.

Usage: report.py RESULTS.json OUTPUT_DIR

Writes, per workload, p50-<workload>.png (median per variant with a whisker to p99, and a strip of
each process's median beside the bar, so a lead that rests on one layout draw shows) and
dist-<workload>.png (each variant's latency percentiles), plus speedup.png (speed-up over std at
the median, workload x variant, with its verdict) and index.html showing them all. For a replay
(memkit-bench replay or advise) also time-rss-<workload>.png, each allocator's time beside its
peak memory, and memory-over-time.png (the trace's live bytes over its events above each
allocator's resident memory over its median replay); for advise, advice-gains.png (each
candidate's gains with their intervals against the thresholds) and site-<id>.png (a site's request
sizes and lifetimes). Needs matplotlib; nothing else beyond the standard library.
"""

import html
import json
import math
import os
import sys

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)
from matplotlib.ticker import FuncFormatter  # noqa: E402

SUPPORTED_SCHEMA = 2


def safe(name):
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)


def variant_color(variant):
    """One colour family per kind of variant, so a reader can tell memkit from its peers."""
    if variant == "std":
        return "#444444"
    if variant.startswith("memkit-"):
        return "#1f77b4"
    if variant.startswith("pmr-"):
        return "#ff7f0e"
    if variant.startswith("boost-") or variant.startswith("foonathan-"):
        return "#2ca02c"
    return "#9467bd"  # global replacements


def p50_chart(workload, rows, path):
    rows = sorted(rows, key=lambda r: r["p50_us"])
    names = [r["variant"] for r in rows]
    p50 = [r["p50_us"] for r in rows]
    p99 = [r["p99_us"] for r in rows]
    fig, ax = plt.subplots(figsize=(8, 0.38 * len(rows) + 1.4))
    ax.barh(names, p50, height=0.55, color=[variant_color(n) for n in names],
            xerr=[[0] * len(rows), [max(0.0, b - a) for a, b in zip(p50, p99)]],
            error_kw={"ecolor": "#000000", "capsize": 3, "elinewidth": 1})
    # The strip: one dot per process under its bar, jittered so that equal medians still show.
    for y, r in enumerate(rows):
        dots = r.get("process_p50_us", [])
        offsets = [0.38 + 0.04 * ((i % 3) - 1) for i in range(len(dots))]
        ax.scatter(dots, [y + o for o in offsets], s=9, color="#d62728", zorder=3,
                   label="one process's p50" if y == 0 else None)
    for y, (a, b) in enumerate(zip(p50, p99)):
        ax.text(b, y, f"  {a:,.0f}" if a >= 100 else f"  {a:.3g}", va="center", fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("µs per iteration: bar = p50 (median over processes), whisker = p99, "
                  "dots = each process's p50")
    if any(r.get("process_p50_us") for r in rows):
        ax.legend(fontsize=7, loc="best")
    ax.set_title(f"{workload}: median with p99 (shorter is faster)")
    ax.set_xlim(0, max(p99) * 1.18 if p99 else 1)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def distribution_chart(workload, rows, path):
    fig, ax = plt.subplots(figsize=(8, 4.2))
    palette = plt.get_cmap("tab20").colors
    for i, r in enumerate(sorted(rows, key=lambda r: r["p50_us"])):
        # Up to p99: the maximum is one sample, in the table; it would squeeze every curve.
        values = r["percentiles_us"][:100]
        if not values:
            continue
        style = "-" if r["variant"].startswith("memkit-") or r["variant"] == "std" else "--"
        ax.plot(values, range(len(values)), style, label=r["variant"],
                color="#000000" if r["variant"] == "std" else palette[i % len(palette)],
                linewidth=2.2 if r["variant"] == "std" else 1.3)
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    # Minor labels at 2x and 5x only, so a wide range does not run them together.
    ax.xaxis.set_minor_formatter(FuncFormatter(
        lambda v, _: f"{v:g}" if f"{v:.0e}"[0] in "25" else ""))
    ax.tick_params(axis="x", which="minor", labelsize=7)
    ax.set_xlabel("µs per iteration (log scale)")
    ax.set_ylabel("percentile")
    ax.set_yticks([0, 25, 50, 75, 90, 99])
    ax.set_title(f"{workload}: latency distribution per variant (left is faster)")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7, loc="lower right", ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def variant_order(variant):
    """std first, then memkit, std::pmr, the pool libraries and the global replacements."""
    for rank, prefix in enumerate(("std", "memkit-", "pmr-", "boost-", "foonathan-")):
        if variant == prefix or (prefix.endswith("-") and variant.startswith(prefix)):
            return (rank, variant)
    return (5, variant)


def speedup_heatmap(workloads, variants, by_key, path):
    ratios = [[by_key.get((w, v), {}).get("speedup_vs_std") or math.nan for v in variants]
              for w in workloads]
    # Coloured by log2 of the ratio, so 2x faster and 2x slower are equally strong.
    grid = [[math.log2(x) if x > 0 else math.nan for x in row] for row in ratios]
    finite = [abs(x) for row in grid for x in row if not math.isnan(x)]
    # Saturates at 8x either way, so that the common 1.2x-3x differences still show as colour.
    limit = min(max(finite + [1.0]), 3.0)
    fig, ax = plt.subplots(figsize=(1.0 + 0.62 * len(variants), 1.6 + 0.34 * len(workloads)))
    cmap = plt.get_cmap("RdYlGn").copy()
    cmap.set_bad("#eeeeee")
    image = ax.imshow(grid, cmap=cmap, aspect="auto", vmin=-limit, vmax=limit)
    ax.set_xticks(range(len(variants)), labels=variants, rotation=60, ha="right", fontsize=8)
    ax.set_yticks(range(len(workloads)), labels=workloads, fontsize=8)
    for i, row in enumerate(ratios):
        for j, x in enumerate(row):
            if not math.isnan(x):
                # "?": the interval contains 1, so this ratio is no verdict.
                unclear = by_key.get((workloads[i], variants[j]), {}).get(
                    "verdict_vs_std") == "no clear difference"
                ax.text(j, i, f"{x:.2f}{'?' if unclear else ''}", ha="center", va="center",
                        fontsize=6.5)
    ax.set_title("speed-up over std at p50 (green: faster than std; ?: the 95% interval "
                 "contains 1; grey: does not fit)", fontsize=9)
    ticks = [t for t in range(-3, 4) if abs(t) <= limit]
    bar = fig.colorbar(image, ax=ax, fraction=0.025, pad=0.01, ticks=ticks)
    bar.ax.set_yticklabels([f"{2.0 ** t:g}x" for t in ticks])
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def time_and_rss_chart(workload, rows, path):
    """A replay's allocators side by side: time (p50, whisker to p99) and peak RSS."""
    rows = sorted(rows, key=lambda r: r["p50_us"])
    names = [r["variant"] for r in rows]
    colors = [variant_color(n) for n in names]
    fig, (left, right) = plt.subplots(1, 2, sharey=True,
                                      figsize=(10, 0.38 * len(rows) + 1.6))
    p50 = [r["p50_us"] / 1000 for r in rows]
    p99 = [r["p99_us"] / 1000 for r in rows]
    left.barh(names, p50, height=0.55, color=colors,
              xerr=[[0] * len(rows), [max(0.0, b - a) for a, b in zip(p50, p99)]],
              error_kw={"ecolor": "#000000", "capsize": 3, "elinewidth": 1})
    left.set_xlabel("ms per replay: p50 over processes, whisker to p99 (shorter is faster)")
    rss = [r["peak_rss_kib"] / 1024 for r in rows]
    right.barh(names, rss, height=0.55, color=colors)
    for y, v in enumerate(rss):
        right.text(v, y, f"  {v:,.1f}", va="center", fontsize=8)
    right.set_xlabel("peak RSS above the start, MiB (shorter is smaller)")
    right.set_xlim(0, max(rss + [0.001]) * 1.2)
    left.invert_yaxis()
    for ax in (left, right):
        ax.grid(axis="x", alpha=0.3)
    fig.suptitle(f"{workload}: time and memory per allocator", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def site_label(a):
    """An advice's site, or the sites of a group routed together."""
    group = a.get("group") or []
    return "sites " + ",".join(map(str, group)) if group else f"site {a['site']['site']}"


def gains_chart(advice, path):
    """Each candidate's gain over the best general-purpose allocator, with its 95 % interval,
    against the thresholds that keep it: the advice as a picture."""
    sites = advice["sites"]
    labels = [f"{site_label(a)}: {a['site']['candidate']}" for a in sites]
    fig, axes = plt.subplots(1, 2, sharey=True, figsize=(10, 0.42 * len(sites) + 1.8))
    for ax, key, threshold, what in ((axes[0], "time_gain", advice["time_threshold"], "time"),
                                     (axes[1], "rss_gain", advice["rss_threshold"],
                                      "peak RSS")):
        for y, a in enumerate(sites):
            gain, lo, hi = a[key], a[key + "_lo"], a[key + "_hi"]
            color = "#2ca02c" if a["use"] else "#888888"
            if gain is None or not math.isfinite(gain) or gain <= 0:
                continue
            if lo and hi and lo > 0:
                ax.plot([lo, hi], [y, y], color=color, linewidth=2)
            ax.plot([gain], [y], "o", color=color)
        ax.axvline(1.0, color="#000000", linewidth=1)
        ax.axvline(1.0 + threshold, color="#d62728", linestyle="--", linewidth=1,
                   label=f"kept from {1 + threshold:.2f}x, interval above 1x")
        ax.set_xlabel(f"{what} gain: best allocator / candidate (right is better)")
        ax.grid(axis="x", alpha=0.3)
        ax.legend(fontsize=7, loc="best")
    axes[0].set_yticks(range(len(sites)), labels=labels, fontsize=8)
    axes[0].invert_yaxis()
    fig.suptitle(f"candidates against {advice['best_general_purpose']} (green: recommended; "
                 "bar: 95% interval)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def site_chart(site, path):
    """One call site's request sizes (power-of-two buckets) and lifetimes (percentiles, in
    events of the trace)."""
    histogram = site.get("size_histogram", [])
    used = [i for i, n in enumerate(histogram) if n]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 2.8))
    if used:
        buckets = list(range(used[0], used[-1] + 1))
        # Bucket b holds the sizes of bit width b: 2^(b-1) to 2^b - 1 bytes (0: size 0).
        left.bar([f"{1 << (b - 1)}-{(1 << b) - 1}" if b else "0" for b in buckets],
                 [histogram[b] for b in buckets], color="#1f77b4")
        left.tick_params(axis="x", labelrotation=45, labelsize=7)
    left.set_xlabel("request size, bytes")
    left.set_ylabel("allocations")
    names = ["p50", "p90", "p99"]
    values = [site.get(f"lifetime_{n}", 0) for n in names]
    right.barh(names, values, color="#9467bd")
    right.invert_yaxis()
    right.set_xlabel("lifetime, events of the trace (a block never freed lives to the end)")
    fig.suptitle(f"site {site['site']}: {site['ops']:,} operations, peak "
                 f"{site['peak_live_bytes']:,} bytes live; LIFO {100 * site['lifo_share']:.0f}%, "
                 f"bulk death {100 * site['bulk_share']:.0f}%, cross-thread "
                 f"{100 * site['cross_thread_share']:.0f}% of frees; candidate "
                 f"{site['candidate']} ({site['reason']})", fontsize=8.5)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def median_run(runs):
    """The run of median time among a variant's processes."""
    ordered = sorted(runs, key=lambda r: r["seconds"])
    return ordered[(len(ordered) - 1) // 2]


def memory_chart(replay, path):
    """A replay's memory over time: the trace's live bytes over its events (what any allocator
    must hold), then each allocator's resident memory above the start over its median replay."""
    live = replay.get("live_over_time", [])
    runs = {name: median_run(r) for name, r in replay.get("runs", {}).items()
            if r and name != "null" and r[0].get("rss_over_time")}
    if not live and not runs:
        return False
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(10, 6.4))
    top.plot([p[0] for p in live], [p[1] / 2**20 for p in live], color="#333333")
    top.set_xlabel("event of the trace")
    top.set_ylabel("live MiB (requested)")
    top.set_title("the program's live bytes", fontsize=9)
    palette = plt.get_cmap("tab10")  # one colour a line: variants of one family share theirs
    for i, name in enumerate(sorted(runs, key=variant_order)):
        points = runs[name]["rss_over_time"]
        bottom.plot([p[0] / 1000 for p in points], [p[1] / 1024 for p in points],
                    label=name, color=palette(i % 10), linewidth=1.2)
    bottom.set_xlabel("ms since the replay's start (each allocator's median replay)")
    bottom.set_ylabel("resident MiB above the start")
    bottom.set_title("each allocator's resident memory", fontsize=9)
    if runs:
        bottom.legend(fontsize=7, ncol=3)
    for ax in (top, bottom):
        ax.grid(alpha=0.3)
        ax.set_ylim(bottom=0)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def memory_section(replay, out):
    """memory_chart as a section of index.html, or nothing if the document has no series."""
    file = "memory-over-time.png"
    if not memory_chart(replay, os.path.join(out, file)):
        return ""
    return (f"<h2 id='memory'>Memory over time</h2>\n<img src='{file}' alt='live bytes over the "
            f"trace and resident memory over each replay'>")


def advice_section(advice, out):
    """The advise command's verdicts: the gains chart, the table, and each site's profile."""
    gains_file = "advice-gains.png"
    gains_chart(advice, os.path.join(out, gains_file))
    rows = []
    profiles = []
    for a in advice["sites"]:
        site = a["site"]
        if not a.get("group"):  # a group's sites each have their own entry
            file = f"site-{site['site']}.png"
            site_chart(site, os.path.join(out, file))
            profiles.append(f"<img src='{file}' alt='sizes and lifetimes of site {site['site']}'>")
        rows.append(f"<tr><td>{html.escape(site_label(a))}</td><td>{html.escape(site['candidate'])}</td>"
                    f"<td>{a['time_gain']:.2f}x</td><td>{a['rss_gain']:.2f}x</td>"
                    f"<td>{'<b>' if a['use'] else ''}{html.escape(a['verdict'])}"
                    f"{'</b>' if a['use'] else ''}</td><td>{html.escape(a['why'])}</td></tr>")
    table = ("<table><tr><th>site</th><th>candidate</th><th>time gain</th>"
             "<th>peak RSS gain</th><th>advice</th><th>why</th></tr>" + "\n".join(rows) +
             "</table>")
    return (f"<h2 id='advice'>Advice</h2>\n<p>Trace {html.escape(str(advice['trace']))}; the "
            f"best general-purpose allocator: {html.escape(advice['best_general_purpose'])}. "
            f"A candidate is recommended only if its gain is at least "
            f"{1 + advice['time_threshold']:.2f}x in time or {1 + advice['rss_threshold']:.2f}x "
            f"in peak RSS, with its 95% interval above 1x.</p>\n"
            f"<img src='{gains_file}' alt='gains of every candidate'>\n"
            f"{table}\n<h3>The sites</h3>\n" + "\n".join(profiles))


def row_table(rows):
    head = ("<tr><th>variant</th><th>processes</th><th>cold µs</th><th>min µs</th>"
            "<th>p50 µs</th><th>p99 µs</th><th>max µs</th><th>throughput/s</th><th>vs std</th>"
            "<th>95% interval</th><th>verdict</th><th>spread</th><th>+peak RSS KiB</th>"
            "<th>hash</th><th>note</th></tr>")
    lines = [head]
    for r in rows:
        mark = "" if r["hash_ok"] else " <b>MISMATCH</b>"
        speedup = f"{r['speedup_vs_std']:.2f}x" if r["speedup_vs_std"] else "-"
        interval = (f"[{r['speedup_lo']:.2f}, {r['speedup_hi']:.2f}]"
                    if r["speedup_lo"] > 0 else "-")
        spread = f"{100 * r['process_spread']:.0f}%" if r["processes"] > 1 else "-"
        lines.append(
            f"<tr><td>{html.escape(r['variant'])}</td><td>{r['processes']}</td>"
            f"<td>{r['cold_us']:.2f}</td>"
            f"<td>{r['min_us']:.2f}</td><td>{r['p50_us']:.2f}</td><td>{r['p99_us']:.2f}</td>"
            f"<td>{r['max_us']:.2f}</td><td>{r['throughput_per_s']:,.0f}</td><td>{speedup}</td>"
            f"<td>{interval}</td><td>{html.escape(r['verdict_vs_std'] or '-')}</td>"
            f"<td>{spread}</td>"
            f"<td>{r['peak_rss_kib']}</td><td><code>{r['hash']}</code>{mark}</td>"
            f"<td>{html.escape(r['note'])}</td></tr>")
    return "<table>" + "\n".join(lines) + "</table>"


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[1], encoding="utf-8") as f:
        doc = json.load(f)
    if doc.get("schema") != SUPPORTED_SCHEMA:
        print(f"report.py: unsupported schema {doc.get('schema')!r}", file=sys.stderr)
        return 2
    out = argv[2]
    os.makedirs(out, exist_ok=True)

    results = doc["results"]
    workloads, variants, by_workload, by_key = [], [], {}, {}
    for r in results:
        if r["workload"] not in by_workload:
            workloads.append(r["workload"])
            by_workload[r["workload"]] = []
        if r["variant"] not in variants:
            variants.append(r["variant"])
        by_workload[r["workload"]].append(r)
        by_key[(r["workload"], r["variant"])] = r

    variants.sort(key=variant_order)
    speedup_heatmap(workloads, variants, by_key, os.path.join(out, "speedup.png"))
    sections = []
    # A replay (memkit-bench replay or advise): each allocator's time beside its memory.
    replay = "trace" in doc.get("options", {})
    if "advice" in doc:
        sections.append(advice_section(doc["advice"], out))
    for key in ("replay", "advice"):
        if key in doc:
            sections.append(memory_section(doc[key], out))
    for w in workloads:
        p50_file, dist_file = f"p50-{safe(w)}.png", f"dist-{safe(w)}.png"
        p50_chart(w, by_workload[w], os.path.join(out, p50_file))
        distribution_chart(w, by_workload[w], os.path.join(out, dist_file))
        both = ""
        if replay:
            both_file = f"time-rss-{safe(w)}.png"
            time_and_rss_chart(w, by_workload[w], os.path.join(out, both_file))
            both = f"<img src='{both_file}' alt='time and peak RSS of {html.escape(w)}'>\n"
        sections.append(
            f"<h2 id='{safe(w)}'>{html.escape(w)}</h2>\n{both}<img src='{p50_file}' alt='p50 "
            f"and p99 of {html.escape(w)}'>\n<img src='{dist_file}' alt='latency distribution "
            f"of {html.escape(w)}'>\n{row_table(by_workload[w])}")

    machine = doc.get("machine", {})
    warning = "" if doc.get("optimized") else (
        "<p class='warn'>UNOPTIMIZED BUILD: these timings say nothing about speed. "
        "Build with CMAKE_BUILD_TYPE=Release.</p>")
    verdicts = {"met": "met", "missed": "<b>MISSED</b>", "not separable": "<i>not separable</i>"}
    targets = "".join(
        f"<li>{verdicts.get(t['verdict'], html.escape(t['verdict']))}: "
        f"{html.escape(t['target'])}: "
        f"{html.escape(t['measured'])}<br><small>{html.escape(t.get('source', ''))} "
        f"({html.escape(t.get('background', ''))})</small></li>"
        for t in doc.get("targets", []))
    method = doc.get("interval", {})
    interval = (f"{method.get('method', '?')}, {method.get('resamples', '?')} resamples, "
                f"seed {method.get('seed', '?')}")
    contents = " · ".join(f"<a href='#{safe(w)}'>{html.escape(w)}</a>" for w in workloads)
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>memkit-bench report</title>
<style>
body {{ font-family: sans-serif; margin: 2em; max-width: 1100px; }}
img {{ max-width: 100%; display: block; margin: 0.5em 0; }}
table {{ border-collapse: collapse; font-size: 0.85em; margin-bottom: 2em; }}
td, th {{ border: 1px solid #ccc; padding: 2px 6px; text-align: right; }}
td:first-child, td:last-child {{ text-align: left; }}
.warn {{ background: #fdd; border: 2px solid #c00; padding: 0.5em; font-weight: bold; }}
</style></head><body>
<h1>memkit-bench report</h1>
{warning}
<p>{html.escape(machine.get('cpu', '?'))}, {machine.get('cores', '?')} cores,
{html.escape(machine.get('kernel', '?'))}, transparent huge pages:
{html.escape(machine.get('thp_policy', '?'))}, {html.escape(machine.get('compiler', '?'))};
layout randomization: {html.escape(machine.get('layout_randomization', '?'))}.</p>
<p>Times are per iteration of each workload. Every variant ran in several processes, each a fresh
draw of code and heap layout; a process's p50 is the median, its p99 the 99th percentile of its
timed iterations, and the row's p50 and p99 are the medians of those over the processes. "cold" is
the first iteration with a freshly built allocator, not counted in the others. Speed-up is std's
p50 over the variant's p50, with its 95% interval ({html.escape(interval)}); "faster" or
"slower" only when the interval excludes 1, else "no clear difference". Spread is (largest -
smallest) / median of the processes' p50s. "+peak RSS" is the peak resident memory of the
measuring process above its resident memory when the measurement began (each measurement runs in
its own process).</p>
<h2>Speed targets</h2>
<ul>{targets}</ul>
<h2>Speed-up over std</h2>
<img src="speedup.png" alt="speed-up heat map">
<p>{contents}</p>
{chr(10).join(sections)}
</body></html>
"""
    with open(os.path.join(out, "index.html"), "w", encoding="utf-8") as f:
        f.write(page)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
