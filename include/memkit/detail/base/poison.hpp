// SPDX-License-Identifier: BSL-1.0
// memkit/detail/base/poison.hpp: tells AddressSanitizer (and memcheck, opt-in) which memory a
// strategy holds free, so a use after free or an overrun inside a pool is reported
// (docs/debugging.md).
#pragma once

#include <cstddef>
#include <cstring>

#include "../../config.hpp"

#if defined(MEMKIT_ASAN)
#include <sanitizer/asan_interface.h>
#endif

// MEMKIT_VALGRIND (config.hpp) makes the same hooks issue memcheck client requests.
#if MEMKIT_VALGRIND
#if __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
#else
#error "MEMKIT_VALGRIND=1 needs <valgrind/memcheck.h> (Debian and Ubuntu: the valgrind package)"
#endif
#define MEMKIT_POISON_VALGRIND 1
#endif

#if defined(MEMKIT_ASAN) || defined(MEMKIT_POISON_VALGRIND)
#define MEMKIT_POISONING 1
#else
#define MEMKIT_POISONING 0
#endif

namespace memkit {
inline namespace MEMKIT_ABI {
namespace detail {

/// Whether the hooks below do anything; without a sanitizer or valgrind they are empty inline
/// functions, so the strategies compile to exactly what they were without them.
inline constexpr bool poisoning = MEMKIT_POISONING != 0;

/// \effects marks `[p, p + n)` as memory held free: any access is reported. ASan tracks 8-byte
/// granules whose first k bytes are addressable, so bytes before `p` in its granule stay as they
/// are, and the granule holding `p + n` is poisoned only if its rest is already unaddressable:
/// poisoning never hides a neighbour's live bytes.
inline void poison([[maybe_unused]] const void* p, [[maybe_unused]] std::size_t n) noexcept {
#if defined(MEMKIT_ASAN)
  ASAN_POISON_MEMORY_REGION(p, n);
#endif
#if defined(MEMKIT_POISON_VALGRIND)
  (void)VALGRIND_MAKE_MEM_NOACCESS(p, n);
#endif
}

/// \effects marks `[p, p + n)` as a block handed out: addressable, contents undefined for memcheck.
/// ASan makes the granule holding `p` addressable from its start, and exactly the bytes up to
/// `p + n` in the last granule, so a read or write one past `p + n` is reported when the bytes
/// after it up to the next 8-byte boundary are not another live block's.
inline void unpoison([[maybe_unused]] const void* p, [[maybe_unused]] std::size_t n) noexcept {
#if defined(MEMKIT_ASAN)
  ASAN_UNPOISON_MEMORY_REGION(p, n);
#endif
#if defined(MEMKIT_POISON_VALGRIND)
  (void)VALGRIND_MAKE_MEM_UNDEFINED(p, n);
#endif
}

/// \effects marks `[p, p + n)` addressable keeping its contents defined: memory going back to its
/// owner (an upstream, a caller's buffer), which must not find it poisoned, or a strategy's own
/// word inside free memory about to be read.
inline void unpoison_kept([[maybe_unused]] const void* p, [[maybe_unused]] std::size_t n) noexcept {
#if defined(MEMKIT_ASAN)
  ASAN_UNPOISON_MEMORY_REGION(p, n);
#endif
#if defined(MEMKIT_POISON_VALGRIND)
  (void)VALGRIND_MAKE_MEM_DEFINED(p, n);
#endif
}

/// \effects `unpoison(p, bytes)` for a block handed out for a request of `bytes` (0 counts as 1,
/// as `allocate(0)` is served like `allocate(1)`).
inline void hand_out(void* p, std::size_t bytes) noexcept { unpoison(p, bytes == 0 ? 1 : bytes); }

/// \returns the `T` a strategy keeps at `at` inside memory it holds free (a free-list link, a
/// stack header), which stays poisoned: it is unpoisoned only for the read. Keeping the link
/// word poisoned too means a use after free of a block's first bytes, the likeliest field to be
/// read, is reported like any other.
template <class T>
T load_hidden(const void* at) noexcept {
  T value;
  unpoison_kept(at, sizeof(T));
  std::memcpy(&value, at, sizeof(T));
  poison(at, sizeof(T));
  return value;
}

/// \effects stores `value` at `at` and poisons `[at, at + n)`, `n >= sizeof(T)`: the free block
/// (or header) that holds it, the link included (see `load_hidden`).
template <class T>
void store_hidden(void* at, const T& value, [[maybe_unused]] std::size_t n) noexcept {
  unpoison_kept(at, sizeof(T));
  std::memcpy(at, &value, sizeof(T));
  poison(at, n);
}

} // namespace detail
} // namespace MEMKIT_ABI
} // namespace memkit
