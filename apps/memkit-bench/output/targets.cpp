// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/output/targets.cpp: reading the speed targets and checking them.

#include "output/targets.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <optional>
#include <ostream>
#include <regex>
#include <set>
#include <stdexcept>
#include <utility>

#include "core/interval.hpp"
#include "output/format.hpp"

#ifndef MEMKIT_BENCH_TARGETS_FILE
#define MEMKIT_BENCH_TARGETS_FILE "targets.json"
#endif

namespace memkit::bench {

namespace {

/// \returns whether `statistic` is one of memory: "peak_rss" (above each process's start) or
/// "process_rss" (the start-up memory counted).
bool of_memory(const std::string& statistic) {
  return statistic == "peak_rss" || statistic == "process_rss";
}

/// \returns row `r`'s peak RSS in KiB as the memory statistic `statistic` counts it: above the
/// row's own start ("peak_rss") or the whole process's ("process_rss").
double memory_kib(const result& r, const std::string& statistic) {
  return static_cast<double>(statistic == "process_rss" ? r.process_peak_rss_kib : r.peak_rss_kib);
}

/// \returns `t`'s fault ("" if none).
std::string fault(const target& t) {
  if (t.workload.empty() == t.workloads.empty() || t.candidate.empty() || t.baseline.empty()) {
    return "a target needs a workload (or a group of workloads), a candidate and a baseline";
  }
  if (!t.workloads.empty()) {
    if (t.aggregate != "each" && t.aggregate != "geomean") {
      return "a group of workloads needs an aggregate, 'each' or 'geomean'";
    }
    if (t.aggregate == "geomean" && of_memory(t.statistic)) {
      return "a " + t.statistic + " target over a group is judged on each workload";
    }
    try {
      std::regex(t.workloads);
    } catch (const std::regex_error& e) {
      return "workloads '" + t.workloads + "' is no regular expression: " + e.what();
    }
  } else if (!t.aggregate.empty()) {
    return "an aggregate needs a group of workloads";
  }
  if (of_memory(t.statistic)) {
    if (!(t.ratio_at_most > 0) || t.ratio_at_least != 0 || t.ratio_above != 0) {
      return "a " + t.statistic + " target needs ratio_at_most, above 0, and no other ratio";
    }
  } else if (t.statistic != "p50" && t.statistic != "p99") {
    return "statistic '" + t.statistic + "' is none of p50, p99, peak_rss and process_rss";
  } else if ((t.ratio_at_least > 0) == (t.ratio_above > 0) || t.ratio_at_most != 0) {
    return "a time target needs exactly one of ratio_at_least and ratio_above, above 0";
  }
  if (t.source.empty()) {
    return "a target needs its source, in plain words";
  }
  return "";
}

/// \returns the processes' values of the statistic `name` in `r`.
const std::vector<double>& per_process(const result& r, const std::string& name) {
  return name == "p99" ? r.process_p99_us : r.process_p50_us;
}

/// \returns whether row `a` is better than row `b` at `statistic`: faster, or less peak RSS.
bool better(const result& a, const result& b, const std::string& statistic) {
  if (of_memory(statistic)) {
    return memory_kib(a, statistic) < memory_kib(b, statistic);
  }
  return statistic == "p99" ? a.p99_us < b.p99_us : a.p50_us < b.p50_us;
}

/// \returns the row of `variant` on `workload`; for a prefix ending in '*', the fastest at p50 of
/// the variants it matches; for variants separated by '|', the best of them at `statistic`. Null
/// if none.
const result* find(const std::vector<result>& rows, const std::string& workload,
                   const std::string& variant, const std::string& statistic) {
  const bool group = !variant.empty() && variant.back() == '*';
  const std::string prefix = group ? variant.substr(0, variant.size() - 1) : variant;
  const std::string alternatives = "|" + variant + "|";
  const result* best = nullptr;
  for (const auto& r : rows) {
    const bool matches = group ? r.variant.rfind(prefix, 0) == 0
                               : alternatives.find("|" + r.variant + "|") != std::string::npos;
    if (r.workload != workload || !matches) {
      continue;
    }
    if (best == nullptr || (group ? r.p50_us < best->p50_us : better(r, *best, statistic))) {
      best = &r;
    }
  }
  return best;
}

/// "1.6", "0.95": a bar with the decimals it has, up to two.
std::string bar_text(double bar) { return fixed(bar, std::round(bar * 10) == bar * 10 ? 1 : 2); }

/// "json-tree: the fastest memkit-* at least 1.6x std at p50"; for a group, "workloads /.../,
/// geomean: ..." and "the best of a|b" for alternatives.
std::string describe(const target& t) {
  const bool group = t.candidate.back() == '*';
  const std::string where =
      t.workloads.empty() ? t.workload : "workloads /" + t.workloads + "/, " + t.aggregate;
  const std::string baseline =
      t.baseline.find('|') == std::string::npos ? t.baseline : "the best of " + t.baseline;
  if (of_memory(t.statistic)) {
    return where + ": " + t.candidate + "'s peak RSS" +
           (t.statistic == "process_rss" ? ", start-up memory included," : "") + " at most " +
           bar_text(t.ratio_at_most) + "x " + baseline + "'s";
  }
  const std::string relation =
      t.ratio_above > 0
          ? (t.ratio_above == 1 ? "faster than" : "more than " + fixed(t.ratio_above, 2) + "x")
      : t.ratio_at_least == 1 ? "no slower than"
                              : "at least " + bar_text(t.ratio_at_least) + "x";
  return where + ": " + (group ? "the fastest " + t.candidate : t.candidate) + " " + relation +
         " " + baseline + " at " + t.statistic;
}

} // namespace

std::string default_targets_file() { return MEMKIT_BENCH_TARGETS_FILE; }

std::vector<target> load_targets(const std::string& file) {
  std::ifstream in(file);
  if (!in) {
    throw std::runtime_error("cannot read the targets file " + file);
  }
  try {
    auto targets = nlohmann::json::parse(in).at("targets").get<std::vector<target>>();
    for (const auto& t : targets) {
      if (const std::string why = fault(t); !why.empty()) {
        throw std::runtime_error(why + " (" + t.workload + " against " + t.baseline + ")");
      }
    }
    return targets;
  } catch (const std::exception& e) {
    throw std::runtime_error("the targets file " + file + ": " + e.what());
  }
}

namespace {

// A memory target: judged on the run's peak RSS of each row (the largest over its processes),
// which varies between processes far less than time does; no interval. For "peak_rss", each
// row's peak above its own start; for "process_rss", each row's whole peak above the lighter of
// the two rows' starts, so each allocator is charged the memory it made resident before the
// workload began (start-up, and what it kept of the harness's frees) beyond the other's.
target_check check_peak_rss(const target& t, const result& candidate, const result& baseline) {
  const double base =
      t.statistic == "process_rss"
          ? static_cast<double>(std::min(candidate.start_rss_kib, baseline.start_rss_kib))
          : 0;
  const double mine = memory_kib(candidate, t.statistic) - base;
  const double theirs = memory_kib(baseline, t.statistic) - base;
  target_check c;
  c.target = describe(t);
  // A baseline that grew by nothing is met only by a candidate that grew by nothing.
  c.met = mine <= t.ratio_at_most * theirs;
  c.verdict = c.met ? "met" : "missed";
  c.ratio = theirs > 0 ? mine / theirs : 0;
  c.measured = candidate.variant + " " + (theirs > 0 ? fixed(mine / theirs, 2) : "-") + "x (" +
               fixed(mine, 0) + " KiB vs " + baseline.variant + " " + fixed(theirs, 0) + " KiB)";
  c.source = t.source;
  c.background = t.background;
  return c;
}

} // namespace

namespace {

// A time target's check from its ratio's interval: the verdict, the ratio and the processes that
// would separate it from the bar.
target_check judged(const target& t, const ratio_interval& r) {
  const double bar = t.ratio_above > 0 ? t.ratio_above : t.ratio_at_least;
  const verdict v = judge(r, bar, t.ratio_above == 0);
  target_check c;
  c.target = describe(t);
  c.met = v == verdict::above;
  c.verdict = c.met ? "met" : v == verdict::below ? "missed" : "not separable";
  c.ratio = r.ratio;
  c.ratio_lo = r.lo;
  c.ratio_hi = r.hi;
  c.processes = r.processes;
  c.processes_needed = v == verdict::not_separable ? processes_to_separate(r, bar) : 0;
  return c;
}

} // namespace

target_check check_target(const target& t, const result& candidate, const result& baseline) {
  if (of_memory(t.statistic)) {
    return check_peak_rss(t, candidate, baseline);
  }
  const ratio_interval r =
      speedup_interval(per_process(baseline, t.statistic), per_process(candidate, t.statistic));
  target_check c = judged(t, r);
  c.measured = candidate.variant + " " + fixed(r.ratio, 2) + "x, 95% [" + fixed(r.lo, 2) + ", " +
               fixed(r.hi, 2) + "] over " + std::to_string(r.processes) + " processes (" +
               fixed(median(per_process(candidate, t.statistic)), 2) + " us vs " +
               baseline.variant + " " + fixed(median(per_process(baseline, t.statistic)), 2) +
               " us)";
  if (c.verdict == "not separable") {
    c.measured += c.processes_needed > 0 ? "; not separable at this sample size: about " +
                                               std::to_string(c.processes_needed) +
                                               " processes would separate them at this spread"
                                         : "; not separable at this sample size";
  }
  c.source = t.source;
  c.background = t.background;
  return c;
}

namespace {

/// A group target's workloads with both a candidate and a baseline row, in name order.
using row_pairs = std::vector<std::pair<const result*, const result*>>;

row_pairs rows_of_group(const target& t, const std::vector<result>& rows) {
  const std::regex pattern(t.workloads);
  std::set<std::string> names;
  for (const auto& r : rows) {
    if (std::regex_match(r.workload, pattern)) {
      names.insert(r.workload);
    }
  }
  row_pairs pairs;
  for (const std::string& w : names) {
    const result* candidate = find(rows, w, t.candidate, t.statistic);
    const result* baseline = find(rows, w, t.baseline, t.statistic);
    if (candidate != nullptr && baseline != nullptr) {
      pairs.emplace_back(candidate, baseline);
    }
  }
  return pairs;
}

// A group judged on its geometric mean: one interval over every workload's processes.
target_check check_geomean(const target& t, const row_pairs& pairs) {
  std::vector<ratio_sides> sides;
  for (const auto& [candidate, baseline] : pairs) {
    sides.push_back({&per_process(*baseline, t.statistic), &per_process(*candidate, t.statistic)});
  }
  const ratio_interval r = geomean_interval(sides);
  target_check c = judged(t, r);
  c.processes_needed = 0;
  c.measured = pairs.front().first->variant + " " + fixed(r.ratio, 2) + "x, 95% [" +
               fixed(r.lo, 2) + ", " + fixed(r.hi, 2) + "], geomean over " +
               std::to_string(pairs.size()) + " workloads, " + std::to_string(r.processes) +
               " processes each";
  c.source = t.source;
  c.background = t.background;
  return c;
}

// A group judged workload by workload: met when every one is, missed when any is; the missed ones
// are named and the lowest ratio (the highest, for peak RSS) is quoted.
target_check check_each(const target& t, const row_pairs& pairs) {
  target one = t;
  one.workloads.clear();
  one.aggregate.clear();
  std::size_t met = 0;
  std::size_t missed = 0;
  std::string missed_names;
  std::optional<target_check> worst;
  std::string worst_workload;
  const bool rss = of_memory(t.statistic);
  for (const auto& [candidate, baseline] : pairs) {
    one.workload = candidate->workload;
    const target_check c = check_target(one, *candidate, *baseline);
    met += c.met ? 1 : 0;
    if (c.verdict == "missed") {
      missed_names += (missed++ == 0 ? "" : ", ") + one.workload;
    }
    if (!worst || (rss ? c.ratio > worst->ratio : c.ratio < worst->ratio)) {
      worst = c;
      worst_workload = one.workload + " against " + baseline->variant;
    }
  }
  target_check c = *worst;
  c.target = describe(t);
  c.met = met == pairs.size();
  c.verdict = c.met ? "met" : missed > 0 ? "missed" : "not separable";
  c.processes_needed = 0;
  c.measured = std::to_string(met) + " of " + std::to_string(pairs.size()) + " workloads met, " +
               std::to_string(missed) + " missed" +
               (missed == 0 ? std::string() : " (" + missed_names + ")") + "; " +
               (rss ? "highest " : "lowest ") + worst_workload + ": " + worst->measured;
  return c;
}

} // namespace

std::vector<target_check> check_targets(const std::vector<target>& targets,
                                        const std::vector<result>& rows) {
  std::vector<target_check> out;
  for (const auto& t : targets) {
    if (!t.workloads.empty()) {
      const row_pairs pairs = rows_of_group(t, rows);
      if (!pairs.empty()) {
        out.push_back(t.aggregate == "geomean" ? check_geomean(t, pairs) : check_each(t, pairs));
      }
      continue;
    }
    const result* candidate = find(rows, t.workload, t.candidate, t.statistic);
    const result* baseline = find(rows, t.workload, t.baseline, t.statistic);
    if (candidate != nullptr && baseline != nullptr) {
      out.push_back(check_target(t, *candidate, *baseline));
    }
  }
  return out;
}

void print_targets(std::ostream& out, const std::vector<target_check>& checks) {
  if (checks.empty()) {
    return;
  }
  out << "\n== speed targets (judged by the 95% interval over processes; targets.json says where "
         "each comes from)\n";
  for (const auto& t : checks) {
    out << (t.met                   ? "  met        "
            : t.verdict == "missed" ? "  MISSED     "
                                    : "  unclear    ")
        << t.target << ": " << t.measured << "\n";
  }
}

} // namespace memkit::bench
