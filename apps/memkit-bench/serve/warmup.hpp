// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/serve/warmup.hpp: serve mode's warm-up: every served case run on a thread of
// its own while the server already answers, with the progress /readyz and /metrics report.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/registry.hpp"

namespace memkit::bench {

/// The warm-up runs beside the listener so that /healthz answers from the start (a liveness
/// probe that waits tens of seconds concludes the process is dead) while /readyz and /run say
/// "not yet" until every case is warm.
///
/// Threads: start(), cancel() and join() are called by the thread that owns the object; the
/// accessors may be called from any thread at any time. The reference hashes and the RSS are
/// written by the warm-up thread before it publishes state::ready (release) and read only by a
/// thread that has seen state::ready (acquire), so they need no lock.
class warmup {
public:
  enum class state {
    warming,  ///< not every case is warm yet
    ready,    ///< every case warm and every variant's hash agrees with std's
    failed,   ///< a variant's hash disagreed with std's (reported on stderr)
    cancelled ///< cancel() came first
  };

  /// \effects none: start() runs it. `cases` must outlive this object.
  warmup(std::vector<const bench_case*> cases, std::size_t iterations);
  warmup(const warmup&) = delete;
  warmup& operator=(const warmup&) = delete;
  /// \effects cancel(), then join().
  ~warmup();

  /// \effects on a thread of its own, runs every case once cold and `iterations` times timed, in
  /// order, printing a line per case on stderr as batch mode does, then compares every variant's
  /// hash with std's for its workload. With `iterations` 0 runs nothing: ready at once, with no
  /// reference hashes. \requires called once.
  void start();
  /// \effects the warm-up stops after the case it is running and ends cancelled (unless it has
  /// already ended). Safe to call at any time, also before start() or twice.
  void cancel() noexcept;
  /// \effects waits until the warm-up thread (if any) has ended.
  void join();

  state current() const noexcept { return state_.load(std::memory_order_acquire); }
  static const char* name(state s) noexcept;
  /// \returns how many cases have been run; never decreases.
  std::size_t warm() const noexcept { return warm_.load(std::memory_order_relaxed); }
  std::size_t total() const noexcept { return cases_.size(); }
  std::size_t iterations() const noexcept { return iterations_; }
  /// \returns the case the warm-up is on (being run, or next), null once it has ended.
  const bench_case* running() const noexcept;
  /// \returns std's result hash for `workload` from the warm-up, or nothing if there was no
  /// warm-up (`iterations` 0). \requires current() == state::ready.
  std::optional<std::uint64_t> reference_hash(const std::string& workload) const;
  /// \returns resident memory when the warm-up ended. \requires current() == state::ready.
  std::size_t rss_after_kib() const noexcept { return rss_after_kib_; }

private:
  void run();

  const std::vector<const bench_case*> cases_;
  const std::size_t iterations_;
  std::atomic<state> state_{state::warming};
  std::atomic<std::size_t> warm_{0};
  std::atomic<bool> cancel_{false};
  std::map<std::string, std::uint64_t> reference_hash_; ///< written before state::ready
  std::size_t rss_after_kib_ = 0;                       ///< written before state::ready
  std::thread thread_;
};

} // namespace memkit::bench
