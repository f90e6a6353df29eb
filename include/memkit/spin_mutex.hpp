// SPDX-License-Identifier: BSL-1.0
// memkit/spin_mutex.hpp: `memkit::spin_mutex`, a test-and-test-and-set spin lock for short
// critical sections, such as `synchronized<pool<>, spin_mutex>` (docs/threads.md, "Which mutex").
#pragma once

#include <atomic>
#include <thread>

#include "config.hpp"
#include "detail/spin_wait.hpp"

namespace memkit {
inline namespace MEMKIT_ABI {

/// A lock (Lockable: `lock`, `try_lock`, `unlock`) that waits by spinning instead of sleeping in
/// the kernel. Uncontended, `lock` is one atomic exchange and `unlock` one release store, against
/// glibc's `pthread_mutex_lock`/`unlock` calls (docs/threads.md has both counted). Made for
/// critical sections of a few dozen instructions, as a pool's allocate and deallocate are; not for
/// a section that may block or run long, where waiters would burn their time slices.
///
/// - Test and test-and-set: a waiter reads the flag (its cache line stays shared, no traffic)
///   until it sees the lock free, then tries the exchange.
/// - Exponential backoff between reads: 1, 2, 4, ... `detail::cpu_pause()`s, at most
///   `max_backoff`. Each read of a waiter takes the flag's line out of the holder's core, so its
///   next unlock and lock must fetch it back; read at once after every failure, two threads
///   locking in a loop paid that on every section and ran 4x slower than when the waiter backs off
///   and lets the holder run several sections in a row (docs/threads.md, "Which mutex").
/// - Oversubscription: after `spin_budget` pauses of waiting, the holder is most likely not
///   running (it would have let go), so the waiter calls `std::this_thread::yield()` between
///   reads and lets the holder's thread have the core.
/// - Not fair: a thread that unlocks and locks again at once often wins against a waiter.
/// - Memory order: `lock` and a successful `try_lock` acquire, `unlock` releases, so everything
///   written under the lock happens-before the next holder's section (ThreadSanitizer sees the
///   atomics and checks it).
/// - `alignas(64)`: the flag sits on a cache line of its own, so the waiters' reads do not keep
///   taking away the line the holder is writing the protected data on.
class alignas(64) spin_mutex {
public:
  /// Pauses a waiter spends before it starts yielding: hundreds of times a pool's section (its
  /// instructions per pair: `memkit_pair_loop` under callgrind, docs/options.md), yet a few
  /// microseconds (`pause` is 10 to 140 cycles, depending on the x86 generation).
  static constexpr unsigned spin_budget = 1024;
  /// The longest wait between two reads of the flag, in pauses (`memkit-bench --workloads
  /// mt-local-fixed-2t` chose it; docs/threads.md, "Which mutex").
  static constexpr unsigned max_backoff = 64;

  constexpr spin_mutex() noexcept = default;
  spin_mutex(const spin_mutex&) = delete;
  spin_mutex& operator=(const spin_mutex&) = delete;

  /// \effects blocks until the calling thread holds the lock. \requires it does not hold it.
  void lock() noexcept {
    // Acquire: the section sees what the previous holder wrote before its release.
    if (MEMKIT_LIKELY(!locked_.exchange(true, std::memory_order_acquire))) {
      return;
    }
    wait_and_lock();
  }

  /// \returns whether the lock was taken; never waits. A `false` means another thread held it at
  /// some point during the call.
  bool try_lock() noexcept {
    // The read first: a failing try_lock does not take the cache line from the holder.
    return !locked_.load(std::memory_order_relaxed) &&
           !locked_.exchange(true, std::memory_order_acquire);
  }

  /// \effects releases the lock. \requires the calling thread holds it.
  void unlock() noexcept {
    // Release: publishes the section's writes to the next holder's acquire.
    locked_.store(false, std::memory_order_release);
  }

private:
  MEMKIT_NOINLINE void wait_and_lock() noexcept {
    unsigned waited = 0;
    unsigned pauses = 1;
    do {
      // Relaxed: only a hint for when to try the exchange, which acquires.
      while (locked_.load(std::memory_order_relaxed)) {
        if (waited < spin_budget) {
          for (unsigned i = 0; i < pauses; ++i) {
            detail::cpu_pause();
          }
          waited += pauses;
          pauses = pauses < max_backoff ? pauses * 2 : max_backoff;
        } else {
          std::this_thread::yield();
        }
      }
    } while (locked_.exchange(true, std::memory_order_acquire));
  }

  std::atomic<bool> locked_{false};
};

} // namespace MEMKIT_ABI
} // namespace memkit
