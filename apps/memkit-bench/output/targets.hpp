// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/output/targets.hpp: the speed targets, read from a JSON file (targets.json) and
// checked on the rows of a run.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/summary.hpp"

namespace memkit::bench {

/// One speed target: `candidate` against `baseline` on `workload`, the ratio of the baseline's
/// `statistic` to the candidate's at least `ratio_at_least` (or above `ratio_above`).
struct target {
  std::string workload;
  std::string candidate; ///< a variant, or a prefix ending in '*': the fastest such at p50
  std::string baseline;  ///< a variant
  std::string statistic; ///< "p50" or "p99"
  double ratio_at_least = 0;
  double ratio_above = 0;
  std::string source;     ///< where the bar comes from, in plain words
  std::string background; ///< the section of docs/background.md with the published figures
};

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(target, workload, candidate, baseline, statistic,
                                                ratio_at_least, ratio_above, source, background)

/// A target checked on a run, as the results' "targets" list holds it.
struct target_check {
  std::string target; ///< what is compared, generated from the target's fields
  bool met = false;
  std::string measured;
  std::string source;
  std::string background;
};

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(target_check, target, met, measured, source, background)

/// \returns the targets file found when memkit-bench was built (apps/memkit-bench/targets.json).
std::string default_targets_file();

/// \returns the targets of `file`. \throws std::runtime_error naming the file and the fault.
std::vector<target> load_targets(const std::string& file);

/// \returns each target whose workload, candidate and baseline are all in `rows`, checked.
/// Reported, not enforced: one run on a shared machine is noisy.
std::vector<target_check> check_targets(const std::vector<target>& targets,
                                        const std::vector<result>& rows);

void print_targets(std::ostream& out, const std::vector<target_check>& checks);

} // namespace memkit::bench
