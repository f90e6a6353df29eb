// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/core/measure.hpp: one measurement of a workload's iteration under a policy:
// a cold iteration, the timed ones, the result hash and the peak resident memory; in this process
// or, isolated, in a forked child.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/policy.hpp"

namespace memkit::bench {

struct bench_case;

/// Resets the process's peak resident set size, so that each measurement reports its own peak
/// (Linux >= 4.0: writing 5 to /proc/self/clear_refs resets VmHWM). \returns false if refused.
bool reset_peak_rss() noexcept;
/// \returns VmHWM from /proc/self/status, in KiB (0 if unreadable).
std::size_t peak_rss_kib() noexcept;
/// \returns the resident set size (/proc/self/statm), in KiB (0 if unreadable). Allocates
/// nothing.
std::size_t rss_kib() noexcept;

/// One (workload, variant) measurement: timed iterations after one untimed cold iteration.
struct measurement {
  std::vector<double> samples_us;
  double cold_us = 0; ///< the first iteration with a freshly built policy
  /// The result hash of the iterations (all equal, or `consistent` is false).
  std::uint64_t hash = 0;
  bool consistent = true;       ///< every iteration produced the same hash
  std::size_t peak_rss_kib = 0; ///< the peak resident memory above start_rss_kib
  /// The resident memory when the workload starts: the harness, and what the allocator under test
  /// made resident before (its start-up memory, and what it kept of the harness's frees).
  std::size_t start_rss_kib = 0;
  std::string note; ///< what a workload reports besides time (huge pages obtained, ...)
};

/// Builds a `Policy` from `h`, runs `iteration(policy, note)` once cold and `iterations` times
/// timed, recycling the policy after each, and records times, hash, the note and, if
/// `probe_rss`, the peak RSS. The policy is destroyed before this returns: nothing it allocated
/// outlives the call.
template <class Policy, class Iteration>
measurement measure(const hint& h, std::size_t iterations, const Iteration& iteration,
                    bool probe_rss) {
  using clock = std::chrono::steady_clock;
  measurement m;
  // Sized, and so written, before the resident memory is read: filled as the iterations went, its
  // pages (8 bytes an iteration: 156 KiB of json-tree's 20,000) would count in the workload's peak
  // as the allocator's, more under an allocator that maps it afresh than under one that reuses
  // memory already resident.
  m.samples_us.resize(iterations);
  std::size_t rss_before = 0;
  if (probe_rss) {
    reset_peak_rss();
    rss_before = rss_kib();
  }
  {
    auto policy = std::make_unique<Policy>(h);
    std::string note;
    for (std::size_t i = 0; i <= iterations; ++i) {
      const auto start = clock::now();
      const std::uint64_t hash = iteration(*policy, note);
      policy->recycle();
      const auto stop = clock::now();
      const double us = std::chrono::duration<double, std::micro>(stop - start).count();
      if (i == 0) {
        m.cold_us = us;
        m.hash = hash;
      } else {
        m.samples_us[i - 1] = us;
        m.consistent = m.consistent && hash == m.hash;
      }
    }
    m.note = std::move(note);
  }
  const std::size_t peak = probe_rss ? peak_rss_kib() : 0;
  m.peak_rss_kib = peak > rss_before ? peak - rss_before : 0;
  m.start_rss_kib = rss_before;
  return m;
}

/// Measures cases each in a child process of its own, forked not from the calling process but
/// from one it forks when made (the *zygote*), before any measurement: every child starts from the
/// same small heap, whatever was measured before it. Its peak RSS is thus its own rather than the
/// most any earlier variant reached (glibc keeps freed memory, Boost's singleton pools never return
/// theirs), and does not shrink either because a child inherits, already resident, the memory the
/// allocator under test kept of what the calling process freed after earlier measurements (its
/// results, in tcmalloc's caches): docs/method.md, "Peak resident memory".
class zygote {
public:
  /// \effects forks the zygote, which measures `cases[i]` on request; `cases` must outlive it.
  /// This process ignores SIGPIPE from then on. \throws std::system_error if the zygote cannot be
  /// made.
  explicit zygote(const std::vector<const bench_case*>& cases);
  /// \effects ends the zygote and waits for it.
  ~zygote();
  zygote(const zygote&) = delete;
  zygote& operator=(const zygote&) = delete;

  /// \returns the measurement of `cases[index]` for `iterations` in a child of the zygote, or sets
  /// `error` (the child crashed, threw or was killed, or the zygote is gone).
  measurement measure(std::size_t index, std::size_t iterations, std::string& error);

private:
  int requests_ = -1; ///< to the zygote: which case, how many iterations
  int results_ = -1;  ///< from it: each child's measurement, framed, then how the child ended
  pid_t pid_ = -1;
};

} // namespace memkit::bench
