// SPDX-License-Identifier: BSL-1.0
// memkit/detail/spin_wait.hpp: the processor's spin-wait hint, for the loops that wait on another
// thread's store (spin_mutex.hpp), and a bounded exponential backoff for those that retry a failed
// compare-and-swap (tagged_stack.hpp).
#pragma once

#include "../config.hpp"

namespace memkit {
inline namespace MEMKIT_ABI {
namespace detail {

/// Tells the processor that the calling thread is spinning: x86's `pause` (it stops the
/// speculative loads of a spin loop from flushing the pipeline when the awaited store arrives,
/// and gives the core's other hyperthread the execution units meanwhile), AArch64's `yield`.
/// Nothing elsewhere; never a system call.
MEMKIT_ALWAYS_INLINE void cpu_pause() noexcept {
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
  __builtin_ia32_pause();
#elif defined(__GNUC__) && defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

/// Runs `attempt` (one try of a compare-and-swap loop, returning whether it is done) until it
/// succeeds, with a bounded exponential backoff between tries: 1, 2, 4, ... pauses, at most
/// `Limit`. A thread that just lost the race for a contended word lets the winner do its next
/// operations while the word's cache line stays in the winner's core, instead of taking the line
/// back at once only to fail again. The first try is peeled off, so an uncontended call runs no
/// instruction of the backoff.
template <unsigned Limit, class Attempt>
MEMKIT_ALWAYS_INLINE void retry_with_backoff(Attempt&& attempt) noexcept {
  static_assert(Limit > 0 && (Limit & (Limit - 1)) == 0, "Limit is a power of two");
  if (MEMKIT_LIKELY(attempt())) {
    return;
  }
  for (unsigned pauses = 1;; pauses = pauses < Limit ? pauses * 2 : Limit) {
    for (unsigned i = 0; i < pauses; ++i) {
      cpu_pause();
    }
    if (attempt()) {
      return;
    }
  }
}

} // namespace detail
} // namespace MEMKIT_ABI
} // namespace memkit
