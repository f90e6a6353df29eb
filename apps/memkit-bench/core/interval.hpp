// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/core/interval.hpp: how sure a ratio of two variants' times is. Each variant
// runs in several processes, each a different draw of code and heap layout; a ratio's 95 %
// interval is a percentile bootstrap over those processes' medians, and a verdict is given only
// when the interval excludes the bar (docs/method.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace memkit::bench {

/// The interval's confidence level, the bootstrap's resamples and its fixed seed: printed with
/// every table, so the same per-process medians always give the same interval.
inline constexpr double interval_level = 0.95;
inline constexpr std::size_t bootstrap_resamples = 10'000;
inline constexpr std::uint64_t bootstrap_seed = 2013;

/// \returns the median of `v` (the mean of the middle two for an even count; 0 if empty).
double median(std::vector<double> v);

/// A ratio of medians with its interval.
struct ratio_interval {
  double ratio = 0; ///< median(baseline) / median(candidate): above 1, the candidate is faster
  double lo = 0;    ///< the interval; both 0 when either side has fewer than 2 processes
  double hi = 0;
  std::size_t processes = 0; ///< the smaller side's processes

  /// \returns whether the interval was computed.
  bool known() const noexcept { return lo > 0 && hi > 0; }
};

/// \returns median(baseline) / median(candidate) and its `interval_level` percentile-bootstrap
/// interval: `resamples` times, each side's per-process medians are resampled with replacement
/// (independently: each process is its own layout draw) and the ratio of the resamples' medians
/// taken; the interval spans the middle `interval_level` of those ratios. Deterministic for a
/// given `seed`.
ratio_interval speedup_interval(const std::vector<double>& baseline,
                                const std::vector<double>& candidate,
                                std::uint64_t seed = bootstrap_seed,
                                std::size_t resamples = bootstrap_resamples);

/// \returns the median of `ratios`, one per process, each the ratio of two variants measured in
/// that one process (a paired design: both sides share the process's layout draw and its moment
/// on the machine), and its `interval_level` percentile-bootstrap interval over the processes.
/// `processes` is the count of ratios; no interval below 2. Deterministic for a given `seed`.
ratio_interval paired_interval(const std::vector<double>& ratios,
                               std::uint64_t seed = bootstrap_seed,
                               std::size_t resamples = bootstrap_resamples);

/// One workload's two sides for geomean_interval: each variant's per-process medians.
struct ratio_sides {
  const std::vector<double>* baseline;
  const std::vector<double>* candidate;
};

/// \returns the geometric mean over `workloads` of median(baseline) / median(candidate), with its
/// percentile-bootstrap interval: each resample resamples every workload's two sides as
/// speedup_interval does and takes the geometric mean of the resampled ratios. `processes` is
/// the smallest side's count; no interval when it is below 2.
ratio_interval geomean_interval(const std::vector<ratio_sides>& workloads,
                                std::uint64_t seed = bootstrap_seed,
                                std::size_t resamples = bootstrap_resamples);

/// Where an interval lies against a bar.
enum class verdict {
  above,        ///< the whole interval is above the bar (or at it, for an inclusive bar)
  below,        ///< the whole interval is below the bar
  not_separable ///< the interval contains the bar, or is unknown
};

/// \returns where `r`'s interval lies against `bar`. `inclusive`: an interval whose low end
/// equals the bar counts as above ("at least"), else it must exceed it ("above").
verdict judge(const ratio_interval& r, double bar, bool inclusive = false);

/// \returns how many processes per side would make `r`'s interval exclude `bar` at the spread
/// measured, assuming the interval narrows as 1/sqrt(processes): the current count scaled by the
/// square of (the interval's half-width towards the bar / the ratio's distance from it), on a log
/// scale. 0 when it cannot be estimated (no interval, or the ratio is exactly the bar).
std::size_t processes_to_separate(const ratio_interval& r, double bar);

/// \returns "faster", "slower" or "no clear difference": `r` (baseline / candidate time) judged
/// against 1.
std::string speed_verdict(const ratio_interval& r);

} // namespace memkit::bench
