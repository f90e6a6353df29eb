// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/output/targets.cpp: reading the speed targets and checking them.

#include "output/targets.hpp"

#include <fstream>
#include <ostream>
#include <stdexcept>

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
  if (t.statistic != "p50" && t.statistic != "p99") {
    return "statistic '" + t.statistic + "' is neither p50 nor p99";
  }
  if ((t.ratio_at_least > 0) == (t.ratio_above > 0)) {
    return "a target needs exactly one of ratio_at_least and ratio_above, above 0";
  }
  if (t.source.empty()) {
    return "a target needs its source, in plain words";
  }
  return "";
}

double statistic(const result& r, const std::string& name) {
  return name == "p99" ? r.p99_us : r.p50_us;
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

std::vector<target_check> check_targets(const std::vector<target>& targets,
                                        const std::vector<result>& rows) {
  std::vector<target_check> out;
  for (const auto& t : targets) {
    const result* candidate = find(rows, t.workload, t.candidate);
    const result* baseline = find(rows, t.workload, t.baseline);
    if (candidate == nullptr || baseline == nullptr) {
      continue;
    }
    const double mine = statistic(*candidate, t.statistic);
    const double theirs = statistic(*baseline, t.statistic);
    const double ratio = mine > 0 ? theirs / mine : 0;
    const bool met = t.ratio_above > 0 ? ratio > t.ratio_above : ratio >= t.ratio_at_least;
    out.push_back({describe(t), met,
                   candidate->variant + " " + fixed(ratio, 2) + "x (" + fixed(mine, 2) + " us vs " +
                       baseline->variant + " " + fixed(theirs, 2) + " us)",
                   t.source, t.background});
  }
  return out;
}

void print_targets(std::ostream& out, const std::vector<target_check>& checks) {
  if (checks.empty()) {
    return;
  }
  out << "\n== speed targets (one run, medians; targets.json says where each comes from)\n";
  for (const auto& t : checks) {
    out << (t.met ? "  met     " : "  MISSED  ") << t.target << ": " << t.measured << "\n";
  }
}

} // namespace memkit::bench
