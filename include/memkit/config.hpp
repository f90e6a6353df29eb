// SPDX-License-Identifier: BSL-1.0
// memkit/config.hpp: every build-time switch (docs/options.md) and the portability macros.
#pragma once

#include <cstddef>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MEMKIT_ASAN 1
#endif
#endif
#if !defined(MEMKIT_ASAN) && defined(__SANITIZE_ADDRESS__)
#define MEMKIT_ASAN 1
#endif
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define MEMKIT_TSAN 1
#endif
#endif
#if !defined(MEMKIT_TSAN) && defined(__SANITIZE_THREAD__)
#define MEMKIT_TSAN 1
#endif

#if defined(__GNUC__)
#define MEMKIT_LIKELY(x) __builtin_expect(!!(x), 1)
#define MEMKIT_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define MEMKIT_NOINLINE __attribute__((noinline))
#define MEMKIT_COLD __attribute__((cold))
#define MEMKIT_ALWAYS_INLINE inline __attribute__((always_inline))
/// Tells the optimizer `c` holds (undefined behaviour if not): for facts a constructor ensured.
#define MEMKIT_ASSUME(c)                                                                           \
  do {                                                                                             \
    if (!(c))                                                                                      \
      __builtin_unreachable();                                                                     \
  } while (0)
#else
#define MEMKIT_LIKELY(x) (x)
#define MEMKIT_UNLIKELY(x) (x)
#define MEMKIT_NOINLINE
#define MEMKIT_COLD
#define MEMKIT_ALWAYS_INLINE inline
#define MEMKIT_ASSUME(c) ((void)0)
#endif

/// Whether C++20 concepts are available: traits.hpp then also offers each trait as a concept, whose
/// failures name the missing member.
#if defined(__cpp_concepts) && __cpp_concepts >= 201907L
#define MEMKIT_CONCEPTS 1
#else
#define MEMKIT_CONCEPTS 0
#endif

// ---------------------------------------------------------------------------------------------
// The switchboard: every MEMKIT_* build switch is defined here and nowhere else (docs/options.md).
// CMake sets them on memkit::memkit's interface (MEMKIT_DEBUG, MEMKIT_STATISTICS, MEMKIT_VALGRIND);
// a translation unit may also define them before its first memkit include. Switches that change a
// class layout also change the ABI namespace below, so two translation units built with different
// values cannot pass memkit objects to each other: the program fails to link instead of running
// with two layouts of one class.
// ---------------------------------------------------------------------------------------------

// 0.1's switch, kept for 0.2.x (CHANGELOG.md): MEMKIT_DEALLOCATE_CHECKS=1 is MEMKIT_DEBUG 1 and
// =0 is level 0, unless MEMKIT_DEBUG is set too, which wins. A macro cannot carry [[deprecated]]:
// Clang marks it deprecated (warned at the #if below, -Wdeprecated-pragma), GCC warns outright;
// -Werror turns either into an error.
#if defined(MEMKIT_DEALLOCATE_CHECKS)
#if defined(__clang__)
#pragma clang deprecated(MEMKIT_DEALLOCATE_CHECKS, "it goes in 0.3: use MEMKIT_DEBUG (level 1 \
runs the O(1) deallocate checks; docs/options.md)")
#else
#pragma GCC warning "MEMKIT_DEALLOCATE_CHECKS is deprecated and goes in 0.3: use MEMKIT_DEBUG \
(level 1 runs the O(1) deallocate checks; docs/options.md)"
#endif
#if MEMKIT_DEALLOCATE_CHECKS && !defined(MEMKIT_DEBUG)
#define MEMKIT_DEBUG 1
#elif !defined(MEMKIT_DEBUG)
#define MEMKIT_DEBUG 0
#endif
#endif

/// How much memkit checks, 0 to 3 (docs/options.md). Like `assert`, 1 unless NDEBUG is defined.
/// - 0: nothing beyond what every build checks (null and size screens, the stack's LIFO order).
/// - 1: `MEMKIT_ASSERT` and the O(1) misuse checks of `deallocate` in the free-list strategies
///   (fixed_pool, array_pool, pool, multipool): size and alignment mismatch, freeing the most
///   recently freed block again, and, where a range check finds it, a foreign pointer
///   (docs/bad-input.md). They cost about a third of a pool's alloc+free pair.
/// - 2: also `MEMKIT_ASSERT_INTERNAL`, O(1) invariants of the strategies themselves.
/// - 3: also `MEMKIT_ASSERT_EXPENSIVE`, invariants that walk a structure (a free list, a chunk
///   list); the fuzz targets build at this level.
#if !defined(MEMKIT_DEBUG)
#if defined(NDEBUG)
#define MEMKIT_DEBUG 0
#else
#define MEMKIT_DEBUG 1
#endif
#endif
#if MEMKIT_DEBUG < 0 || MEMKIT_DEBUG > 3
#error "MEMKIT_DEBUG must be 0, 1, 2 or 3"
#endif

/// Whether every strategy counts its traffic (docs/statistics.md). Off by default: with 0 the
/// counters do not exist, every hook is an empty inline function and `stats()` returns zeros.
/// Changes class layouts, hence the ABI namespace.
#if !defined(MEMKIT_STATISTICS)
#define MEMKIT_STATISTICS 0
#endif

/// Whether the poisoning hooks also issue memcheck client requests (docs/debugging.md); needs
/// <valgrind/memcheck.h>. Off by default; the requests cost a few instructions each when the
/// program does not run under valgrind.
#if !defined(MEMKIT_VALGRIND)
#define MEMKIT_VALGRIND 0
#endif

/// The inline namespace every memkit declaration lives in. Statistics add members to every
/// strategy, and debug levels 2 and 3 may keep bookkeeping for their invariants, so each
/// combination names its own namespace: `memkit::pool` is `memkit::abi_v1_stats::pool` in a
/// translation unit built with statistics, and a function taking one cannot be linked against a
/// caller built without them. Debug levels 0 and 1 differ in code only, and share a namespace.
#if MEMKIT_STATISTICS && MEMKIT_DEBUG >= 2
#define MEMKIT_ABI abi_v1_stats_checked
#elif MEMKIT_STATISTICS
#define MEMKIT_ABI abi_v1_stats
#elif MEMKIT_DEBUG >= 2
#define MEMKIT_ABI abi_v1_checked
#else
#define MEMKIT_ABI abi_v1
#endif

namespace memkit {
inline namespace MEMKIT_ABI {

/// `MEMKIT_DEBUG` as a constant for `if constexpr`.
inline constexpr int debug_level = MEMKIT_DEBUG;

/// Whether `deallocate` runs its O(1) misuse checks (`MEMKIT_DEBUG` >= 1).
inline constexpr bool deallocate_checks = MEMKIT_DEBUG >= 1;

/// `MEMKIT_STATISTICS` as a constant for `if constexpr`.
inline constexpr bool statistics_enabled = MEMKIT_STATISTICS != 0;

/// Size of a cache line on the targets memkit is tuned for (x86-64, AArch64 server parts).
/// libstdc++ 12 warns when `std::hardware_destructive_interference_size` is used in headers
/// because its value may differ between translation units, so the value is fixed here.
inline constexpr std::size_t cache_line_size = 64;

/// Alignment every general-purpose strategy provides when the caller does not ask for more.
inline constexpr std::size_t default_alignment = alignof(std::max_align_t);

/// The page size assumed for alignment guarantees; strategies honour every power of two up to it.
inline constexpr std::size_t page_size = 4096;

} // namespace MEMKIT_ABI
} // namespace memkit
