// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/output/targets.cpp: reading the speed targets and checking them.

#include "output/targets.hpp"

#include <fstream>
#include <ostream>
#include <stdexcept>

#include "core/interval.hpp"
#include "output/format.hpp"

#ifndef MEMKIT_BENCH_TARGETS_FILE
#define MEMKIT_BENCH_TARGETS_FILE "targets.json"
#endif

namespace memkit::bench {

namespace {

/// \returns `t`'s fault ("" if none).
std::string fault(const target& t) {
  if (t.workload.empty() || t.candidate.empty() || t.baseline.empty()) {
    return "a target needs a workload, a candidate and a baseline";
  }
  if (t.statistic == "peak_rss") {
    if (!(t.ratio_at_most > 0) || t.ratio_at_least != 0 || t.ratio_above != 0) {
      return "a peak_rss target needs ratio_at_most, above 0, and no other ratio";
    }
  } else if (t.statistic != "p50" && t.statistic != "p99") {
    return "statistic '" + t.statistic + "' is none of p50, p99 and peak_rss";
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

/// \returns the row of `variant` on `workload`; for a prefix ending in '*', the fastest at p50 of
/// the variants it matches. Null if none.
const result* find(const std::vector<result>& rows, const std::string& workload,
                   const std::string& variant) {
  const bool group = !variant.empty() && variant.back() == '*';
  const std::string prefix = group ? variant.substr(0, variant.size() - 1) : variant;
  const result* best = nullptr;
  for (const auto& r : rows) {
    const bool matches = group ? r.variant.rfind(prefix, 0) == 0 : r.variant == variant;
    if (r.workload == workload && matches && (best == nullptr || r.p50_us < best->p50_us)) {
      best = &r;
    }
  }
  return best;
}

/// "json-tree: the fastest memkit-* at least 1.6x std at p50".
std::string describe(const target& t) {
  const bool group = t.candidate.back() == '*';
  if (t.statistic == "peak_rss") {
    return t.workload + ": " + t.candidate + "'s peak RSS at most " + fixed(t.ratio_at_most, 1) +
           "x " + t.baseline + "'s";
  }
  const std::string relation =
      t.ratio_above > 0
          ? (t.ratio_above == 1 ? "faster than" : "more than " + fixed(t.ratio_above, 2) + "x")
      : t.ratio_at_least == 1 ? "no slower than"
                              : "at least " + fixed(t.ratio_at_least, 1) + "x";
  return t.workload + ": " + (group ? "the fastest " + t.candidate : t.candidate) + " " + relation +
         " " + t.baseline + " at " + t.statistic;
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

// A peak-RSS target: judged on the run's peak RSS of each row (the largest over its processes),
// which varies between processes far less than time does; no interval.
target_check check_peak_rss(const target& t, const result& candidate, const result& baseline) {
  const auto mine = static_cast<double>(candidate.peak_rss_kib);
  const auto theirs = static_cast<double>(baseline.peak_rss_kib);
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

target_check check_target(const target& t, const result& candidate, const result& baseline) {
  if (t.statistic == "peak_rss") {
    return check_peak_rss(t, candidate, baseline);
  }
  const ratio_interval r =
      speedup_interval(per_process(baseline, t.statistic), per_process(candidate, t.statistic));
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
  c.measured = candidate.variant + " " + fixed(r.ratio, 2) + "x, 95% [" + fixed(r.lo, 2) + ", " +
               fixed(r.hi, 2) + "] over " + std::to_string(r.processes) + " processes (" +
               fixed(median(per_process(candidate, t.statistic)), 2) + " us vs " +
               baseline.variant + " " + fixed(median(per_process(baseline, t.statistic)), 2) +
               " us)";
  if (v == verdict::not_separable) {
    c.measured += c.processes_needed > 0 ? "; not separable at this sample size: about " +
                                               std::to_string(c.processes_needed) +
                                               " processes would separate them at this spread"
                                         : "; not separable at this sample size";
  }
  c.source = t.source;
  c.background = t.background;
  return c;
}

std::vector<target_check> check_targets(const std::vector<target>& targets,
                                        const std::vector<result>& rows) {
  std::vector<target_check> out;
  for (const auto& t : targets) {
    const result* candidate = find(rows, t.workload, t.candidate);
    const result* baseline = find(rows, t.workload, t.baseline);
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
