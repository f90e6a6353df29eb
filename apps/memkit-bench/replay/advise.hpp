// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/replay/advise.hpp: the advisor: per top call site, its candidate strategy
// replayed against the best general-purpose allocator on the same trace, kept only if the
// measured gain clears a threshold and its interval shows a gain (docs/TRACE.md, "Advice").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/interval.hpp"
#include "replay/command.hpp"
#include "replay/sites.hpp"

namespace memkit::bench::replay {

/// One site's advice.
struct advice {
  site_profile site; ///< the site, or a group's first (its busiest)
  /// A group's sites: every top site whose candidate is the same strategy, routed to it together
  /// (one allocation in a program's source often shows as several sites, a helper inlined into
  /// its callers or a recursion unrolled); empty for a site alone.
  std::vector<std::uint32_t> group;
  std::string baseline;      ///< the best general-purpose allocator: the one to beat
  std::string variant;       ///< the candidate's replay variant, "" when there was no candidate
  std::size_t processes = 0; ///< processes asked for per variant (--processes)
  /// baseline's replay time / the candidate's: the median over processes of the ratio within
  /// each process, both replayed in turn there (paired_replays, processes.hpp); time.processes:
  /// the processes that succeeded
  ratio_interval time;
  /// the same, the two sides measured in separate processes (the rows' figures): reported, not
  /// judged, since each process is its own layout draw
  ratio_interval time_between;
  ratio_interval rss;       ///< baseline's peak RSS / the candidate's
  double rss_saved_kib = 0; ///< baseline's median peak RSS less the candidate's
  bool use = false;         ///< the candidate cleared a threshold
  std::string verdict;      ///< "use arena" or "keep mimalloc"
  std::string why;          ///< the gain that cleared, or what fell short
};

/// \returns whether `r`'s gain (the ratio of the medians) is at least 1 + `threshold` and its
/// interval lies wholly above 1: a gain large enough to matter, and measured, not noise
/// (core/interval.hpp).
bool clears(const ratio_interval& r, double threshold);

/// The least peak RSS a candidate must save, besides clearing the ratio's threshold, for a
/// verdict of "smaller".
inline constexpr double rss_floor_kib = 1024;

/// \effects fills `a.use`, `a.verdict` and `a.why` from its intervals and the thresholds.
void decide(advice& a, double time_threshold, double rss_threshold);

/// Runs `memkit-bench advise`. \returns the exit status (command.hpp).
int run_advise(const advise_command_options& o);

} // namespace memkit::bench::replay
