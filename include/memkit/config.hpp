// memkit/config.hpp: build-time switches and portability macros (see docs/concepts.md).
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

#if defined(__GNUC__)
#define MEMKIT_LIKELY(x) __builtin_expect(!!(x), 1)
#define MEMKIT_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define MEMKIT_NOINLINE __attribute__((noinline))
#define MEMKIT_COLD __attribute__((cold))
#define MEMKIT_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define MEMKIT_LIKELY(x) (x)
#define MEMKIT_UNLIKELY(x) (x)
#define MEMKIT_NOINLINE
#define MEMKIT_COLD
#define MEMKIT_ALWAYS_INLINE inline
#endif

/// Whether `deallocate` of the free-list strategies (fixed_pool, array_pool, pool, multipool) runs
/// its O(1) misuse checks: size and alignment mismatch, freeing the most recently freed block
/// again, and, where a range check finds it, a foreign pointer (docs/bad-input.md). Like `assert`,
/// on unless NDEBUG is defined; define it to 0 or 1 to choose. The checks cost about a third of a
/// pool's alloc+free pair in docs/BENCHMARKS.md, hence off in release builds. The stack's LIFO
/// check does not depend on it: it is on in every build. Must agree across translation units.
#if !defined(MEMKIT_DEALLOCATE_CHECKS)
#if defined(NDEBUG)
#define MEMKIT_DEALLOCATE_CHECKS 0
#else
#define MEMKIT_DEALLOCATE_CHECKS 1
#endif
#endif

namespace memkit {

/// `MEMKIT_DEALLOCATE_CHECKS` as a constant for `if constexpr`.
inline constexpr bool deallocate_checks = MEMKIT_DEALLOCATE_CHECKS != 0;

/// Size of a cache line on the targets memkit is tuned for (x86-64, AArch64 server parts).
/// libstdc++ 12 warns when `std::hardware_destructive_interference_size` is used in headers
/// because its value may differ between translation units, so the value is fixed here.
inline constexpr std::size_t cache_line_size = 64;

/// Alignment every general-purpose strategy provides when the caller does not ask for more.
inline constexpr std::size_t default_alignment = alignof(std::max_align_t);

/// The page size assumed for alignment guarantees; strategies honour every power of two up to it.
inline constexpr std::size_t page_size = 4096;

} // namespace memkit
