// SPDX-License-Identifier: BSL-1.0
// memkit/detail/base/assert.hpp: assertions in three levels, chosen by MEMKIT_DEBUG (config.hpp).
#pragma once

#include <cstdio>
#include <cstdlib>

#include "../../config.hpp"

namespace memkit {
inline namespace MEMKIT_ABI {
namespace detail {

/// \effects writes "memkit: assertion failed: <expression> (<file>:<line>)" to stderr and aborts.
/// An assertion may fail while the heap is exhausted or corrupt, so nothing here allocates: the
/// line number is formatted into a stack buffer and written with `std::fputs` (stderr is
/// unbuffered).
[[noreturn]] MEMKIT_COLD MEMKIT_NOINLINE inline void
assertion_failed(const char* expression, const char* file, unsigned line) noexcept {
  char digits[12];
  char* end = digits + sizeof(digits);
  char* first = end;
  *--first = '\0';
  do {
    *--first = static_cast<char>('0' + line % 10);
    line /= 10;
  } while (line != 0 && first != digits);
  std::fputs("memkit: assertion failed: ", stderr);
  std::fputs(expression, stderr);
  std::fputs(" (", stderr);
  std::fputs(file, stderr);
  std::fputs(":", stderr);
  std::fputs(first, stderr);
  std::fputs(")\n", stderr);
  std::abort();
}

} // namespace detail
} // namespace MEMKIT_ABI
} // namespace memkit

/// Checks `expr` in every build; the failure path is out of line.
#define MEMKIT_ASSERT_ALWAYS(expr)                                                                 \
  (MEMKIT_LIKELY(expr) ? static_cast<void>(0)                                                      \
                       : ::memkit::detail::assertion_failed(#expr, __FILE__, __LINE__))

/// A disabled assertion does not evaluate `expr`, but still names what it uses, so a variable
/// read only by assertions does not warn as unused.
#define MEMKIT_ASSERT_DISABLED(expr) static_cast<void>(sizeof((expr) ? 1 : 0))

/// Level 1: cheap checks of the caller's input (MEMKIT_DEBUG >= 1, the default without NDEBUG).
#if MEMKIT_DEBUG >= 1
#define MEMKIT_ASSERT(expr) MEMKIT_ASSERT_ALWAYS(expr)
#else
#define MEMKIT_ASSERT(expr) MEMKIT_ASSERT_DISABLED(expr)
#endif

/// Level 2: O(1) invariants of memkit's own structures (a carver within its range, counts that
/// must agree).
#if MEMKIT_DEBUG >= 2
#define MEMKIT_ASSERT_INTERNAL(expr) MEMKIT_ASSERT_ALWAYS(expr)
#else
#define MEMKIT_ASSERT_INTERNAL(expr) MEMKIT_ASSERT_DISABLED(expr)
#endif

/// Level 3: invariants that walk a structure (a free list, a chunk list): O(n) per check.
#if MEMKIT_DEBUG >= 3
#define MEMKIT_ASSERT_EXPENSIVE(expr) MEMKIT_ASSERT_ALWAYS(expr)
#else
#define MEMKIT_ASSERT_EXPENSIVE(expr) MEMKIT_ASSERT_DISABLED(expr)
#endif
