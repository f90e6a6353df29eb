// SPDX-License-Identifier: BSL-1.0
// memkit/detail/atomic_stats.hpp: the statistics hooks of stats.hpp for strategies whose calls
// run on several threads at once.
#pragma once

#include <atomic>
#include <cstddef>

#include "../config.hpp"
#include "../stats.hpp"

namespace memkit {
inline namespace MEMKIT_ABI {
namespace detail {

#if MEMKIT_STATISTICS

/// `stats_recorder`'s hooks over relaxed atomic counters, for a strategy called from several
/// threads at once. Relaxed: each counter is exact once the threads are done (every increment is
/// an atomic read-modify-write), but a snapshot taken while they run may mix moments, e.g. count a
/// deallocation whose allocation it does not count yet. No counter orders anything else.
///
/// The counters fill cache lines of their own, so counting does not slow the strategy's other hot
/// fields through false sharing; they still cost every thread a few contended read-modify-writes
/// per call, which is what MEMKIT_STATISTICS=1 buys (docs/statistics.md).
template <class Owner>
class atomic_stats_recorder {
public:
  statistics stats() const noexcept {
    statistics s;
#define MEMKIT_ATOMIC_STATS_LOAD(name) s.name = c_.name.load(std::memory_order_relaxed);
    MEMKIT_STATISTICS_FIELDS(MEMKIT_ATOMIC_STATS_LOAD)
#undef MEMKIT_ATOMIC_STATS_LOAD
    return s;
  }

  void on_allocate(std::size_t bytes) noexcept {
    add(c_.allocations, 1);
    raise(c_.peak_bytes_in_use, add(c_.bytes_in_use, bytes));
    raise(c_.peak_blocks_in_use, add(c_.blocks_in_use, 1));
  }
  void on_deallocate(std::size_t bytes) noexcept {
    add(c_.deallocations, 1);
    c_.bytes_in_use.fetch_sub(bytes, std::memory_order_relaxed);
    c_.blocks_in_use.fetch_sub(1, std::memory_order_relaxed);
  }
  void on_failure() noexcept { add(c_.failures, 1); }
  void on_fallback() noexcept { add(c_.fallbacks, 1); }
  void on_upstream_allocate(std::size_t bytes) noexcept {
    add(c_.upstream_allocations, 1);
    add(c_.upstream_bytes_in_use, bytes);
  }
  void on_upstream_deallocate(std::size_t bytes) noexcept {
    add(c_.upstream_deallocations, 1);
    c_.upstream_bytes_in_use.fetch_sub(bytes, std::memory_order_relaxed);
  }
  /// release(): every block is free; the totals stay. \requires quiescence.
  void on_reset() noexcept {
    c_.bytes_in_use.store(0, std::memory_order_relaxed);
    c_.blocks_in_use.store(0, std::memory_order_relaxed);
  }

private:
  struct alignas(cache_line_size) counters {
#define MEMKIT_ATOMIC_STATS_MEMBER(name) std::atomic<std::size_t> name{0};
    MEMKIT_STATISTICS_FIELDS(MEMKIT_ATOMIC_STATS_MEMBER)
#undef MEMKIT_ATOMIC_STATS_MEMBER
  };

  // \returns the counter's new value.
  static std::size_t add(std::atomic<std::size_t>& c, std::size_t n) noexcept {
    return c.fetch_add(n, std::memory_order_relaxed) + n;
  }
  // A peak only rises; a lost race retries only while the value seen is still below.
  static void raise(std::atomic<std::size_t>& peak, std::size_t value) noexcept {
    std::size_t seen = peak.load(std::memory_order_relaxed);
    while (seen < value && !peak.compare_exchange_weak(seen, value, std::memory_order_relaxed)) {
    }
  }

  counters c_;
};

#else

/// Statistics compiled out: the empty recorder every strategy shares.
template <class Owner>
using atomic_stats_recorder = stats_recorder<Owner>;

#endif

} // namespace detail
} // namespace MEMKIT_ABI
} // namespace memkit
