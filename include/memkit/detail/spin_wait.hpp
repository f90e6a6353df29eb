// memkit/detail/spin_wait.hpp: the processor's spin-wait hint, for the loops that wait on another
// thread's store (spin_mutex.hpp) or retry a failed compare-and-swap.
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

} // namespace detail
} // namespace MEMKIT_ABI
} // namespace memkit
