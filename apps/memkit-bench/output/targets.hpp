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

/// One target: `candidate` against `baseline` on `workload`. For a time (`statistic` "p50" or
/// "p99"), the ratio of the baseline's time to the candidate's at least `ratio_at_least` (or above
/// `ratio_above`); for "peak_rss", the candidate's peak RSS above its start at most
/// `ratio_at_most` times the baseline's; for "process_rss" the same with each row's whole peak
/// above the lighter of the two starts, which charges an allocator its start-up memory.
///
/// A group target names `workloads` instead, a regular expression matching whole workload names,
/// and how the group is judged (`aggregate`): "geomean", the geometric mean of the workloads'
/// ratios against the bar (time only), or "each", every workload against the bar.
struct target {
  std::string workload;
  std::string workloads; ///< a group target's regular expression; then `workload` is empty
  std::string aggregate; ///< a group target's "geomean" or "each"
  std::string candidate; ///< a variant, or a prefix ending in '*': the fastest such at p50
  /// a variant, or several separated by '|': the best of those in the run, per workload (the
  /// fastest at the statistic, or the lowest peak RSS)
  std::string baseline;
  std::string statistic; ///< "p50", "p99", "peak_rss" or "process_rss"
  double ratio_at_least = 0;
  double ratio_above = 0;
  double ratio_at_most = 0; ///< peak_rss and process_rss only
  std::string source;       ///< where the bar comes from, in plain words
  std::string background;   ///< the section of docs/background.md with the published figures
};

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(target, workload, workloads, aggregate, candidate,
                                                baseline, statistic, ratio_at_least, ratio_above,
                                                ratio_at_most, source, background)

/// A target checked on a run, as the results' "targets" list holds it: judged by the ratio's
/// 95 % interval over the processes (core/interval.hpp), never by the ratio alone.
struct target_check {
  std::string target;  ///< what is compared, generated from the target's fields
  bool met = false;    ///< the whole interval clears the bar
  std::string verdict; ///< "met", "missed" or "not separable"
  std::string measured;
  double ratio = 0; ///< the baseline's statistic / the candidate's, medians over processes (a
                    ///< group's geomean, or its lowest for "each"; peak RSS: candidate / baseline)
  double ratio_lo = 0; ///< its interval (0 when unknown)
  double ratio_hi = 0;
  std::size_t processes = 0;        ///< per side, the smaller count
  std::size_t processes_needed = 0; ///< if not separable: about how many would separate them
  std::string source;
  std::string background;
};

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(target_check, target, met, verdict, measured, ratio, ratio_lo,
                                   ratio_hi, processes, processes_needed, source, background)

/// \returns the targets file found when memkit-bench was built (apps/memkit-bench/targets.json).
std::string default_targets_file();

/// \returns the targets of `file`. \throws std::runtime_error naming the file and the fault.
std::vector<target> load_targets(const std::string& file);

/// \returns each target whose workload, candidate and baseline are all in `rows` (a group target:
/// some workload of its group with both), checked: met when the ratio's interval lies wholly on
/// the right side of the bar, missed when wholly on the wrong side, else not separable; a group
/// judged "each" is met when every workload is, missed when any is. Reported, not enforced.
std::vector<target_check> check_targets(const std::vector<target>& targets,
                                        const std::vector<result>& rows);

/// \returns `t` checked on the rows of its candidate and baseline.
target_check check_target(const target& t, const result& candidate, const result& baseline);

void print_targets(std::ostream& out, const std::vector<target_check>& checks);

} // namespace memkit::bench
