// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/replay/sites.hpp: what each call site of a trace does with its blocks, and the
// memkit strategy that pattern suggests (docs/TRACE.md, "Advice"). The suggestion is only a
// candidate: the advisor replays it and keeps it only if it measurably pays (replay/advise.hpp).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "replay/events.hpp"
#include "replay/routes.hpp"

namespace memkit::bench::replay {

/// The rules' thresholds, stated once (docs/TRACE.md lists them).
inline constexpr double cross_thread_rule = 0.10;       ///< share of frees on another thread
inline constexpr double bulk_rule = 0.80;               ///< share of frees in bulk deaths
inline constexpr std::uint64_t bulk_run = 4;            ///< frees that make a bulk death, at least
inline constexpr std::uint64_t large_rule = 256 * 1024; ///< smallest request of a large site
inline constexpr double long_lived_rule = 0.5;          ///< lifetime p50 as a share of the trace

/// Sizes in powers of two: bucket i holds sizes in [2^(i-1), 2^i), bucket 0 size 0.
inline constexpr std::size_t size_buckets = 41;

/// One call site's pattern.
struct site_profile {
  std::uint32_t site = 0;
  std::uint64_t address = 0; ///< the site's innermost return address, 0 if unknown
  std::uint64_t allocs = 0;
  std::uint64_t frees = 0;
  std::uint64_t reallocs = 0;
  std::uint64_t ops = 0; ///< allocs + frees + reallocs
  std::uint64_t peak_live = 0;
  std::uint64_t peak_live_bytes = 0;
  std::uint64_t min_size = 0;
  std::uint64_t max_size = 0;
  std::uint64_t distinct_sizes = 0; ///< counted up to 65, then "many"
  std::uint64_t threads = 0;        ///< threads that allocate here
  std::array<std::uint64_t, size_buckets> size_histogram{};
  /// Lifetimes in events of the trace (allocation to free); a block never freed counts until the
  /// trace's end.
  double lifetime_p50 = 0;
  double lifetime_p90 = 0;
  double lifetime_p99 = 0;
  double lifo_share = 0;         ///< frees of the site's most recent live block on that thread
  double bulk_share = 0;         ///< frees in a run of at least bulk_run that empties the site
  double cross_thread_share = 0; ///< frees on a thread other than the block's last
  strategy candidate = strategy::malloc; ///< malloc: no candidate
  std::string reason;                    ///< the rule that chose it, or why none
};

/// site_profile's field list: its JSON record (replay/records.hpp).
#define MEMKIT_BENCH_SITE_PROFILE_FIELDS(X)                                                        \
  X(site)                                                                                          \
  X(address)                                                                                       \
  X(allocs)                                                                                        \
  X(frees)                                                                                         \
  X(reallocs)                                                                                      \
  X(ops)                                                                                           \
  X(peak_live)                                                                                     \
  X(peak_live_bytes)                                                                               \
  X(min_size)                                                                                      \
  X(max_size)                                                                                      \
  X(distinct_sizes)                                                                                \
  X(threads)                                                                                       \
  X(size_histogram)                                                                                \
  X(lifetime_p50)                                                                                  \
  X(lifetime_p90)                                                                                  \
  X(lifetime_p99)                                                                                  \
  X(lifo_share)                                                                                    \
  X(bulk_share)                                                                                    \
  X(cross_thread_share)                                                                            \
  X(candidate)                                                                                     \
  X(reason)

/// Profiles the sites of a trace fed one event at a time, in the recorded order.
class site_profiler {
public:
  site_profiler();
  ~site_profiler();
  site_profiler(const site_profiler&) = delete;
  site_profiler& operator=(const site_profiler&) = delete;

  void add(const event& e);
  /// \returns every site's profile with its candidate, most operations first. Call once.
  std::vector<site_profile> finish();

private:
  class impl;
  std::unique_ptr<impl> impl_;
};

/// \returns every site's profile with its candidate, most operations first.
std::vector<site_profile> profile_sites(const event_list& events);

/// \returns the sites to advise on: the `n` with the most operations and the `n` with the most
/// peak bytes (each once), in `profiles`' order.
std::vector<site_profile> top_sites(const std::vector<site_profile>& profiles, std::size_t n);

} // namespace memkit::bench::replay
