// SPDX-License-Identifier: BSL-1.0
// memkit/detail/size_class.hpp: multipool's size classes, computed in O(1) arithmetic.
//
// The scheme is jemalloc's (jemalloc(3), "Size classes"): sizes up to 128 bytes round up to a
// multiple of 16, so a block wastes less than 16 bytes; above that every doubling (2^k, 2^(k+1)]
// holds four classes spaced 2^(k-2) apart, so a block wastes less than 2^(k-2) < n / 4, i.e. less
// than 25% of the request n. Both bounds are checked for every size in tests/multipool_test.cpp.
//
//   index:  0   1   2  ...  7 |   8   9  10  11 |  12  13  14  15 | ...
//   size:  16  32  48  ... 128 | 160 192 224 256 | 320 384 448 512 | ...
#pragma once

#include <cstddef>
#include <cstdint>

#include "../config.hpp"
#include "base/bits.hpp"

namespace memkit {
inline namespace MEMKIT_ABI {
namespace detail {

/// Spacing of the small classes. Every block must hold the free-list link and honour
/// `default_alignment` (16 on x86-64 and AArch64) without asking for more.
inline constexpr std::size_t class_granularity = 16;

/// Largest size served by the evenly spaced small classes (8 of them).
inline constexpr std::size_t small_class_limit = 128;

/// Largest class a multipool may be configured with: beyond it a 64 KiB chunk holds a single block
/// and the class gains nothing over asking the upstream directly.
inline constexpr std::size_t class_size_limit = std::size_t{64} * 1024;

static_assert(default_alignment <= class_granularity && sizeof(void*) <= class_granularity,
              "a block of the smallest class must hold a link and be default-aligned");

/// \returns the index of the smallest class whose size is at least `n`.
/// \requires n >= 1.
constexpr std::size_t class_index(std::size_t n) noexcept {
  if (n <= small_class_limit) {
    return (n - 1) >> 4;
  }
  // n lies in (2^k, 2^(k+1)] with k >= 7; (n - 1) >> (k - 2) is 4 + the class within the doubling,
  // and the doublings before it hold 8 + 4 * (k - 7) classes: 8 + 4(k - 7) - 4 = 4k - 24.
  const unsigned k = floor_log2(n - 1);
  return 4 * static_cast<std::size_t>(k) - 24 + ((n - 1) >> (k - 2));
}

/// \returns the size of class `index`: the inverse of `class_index` on class sizes.
constexpr std::size_t class_size(std::size_t index) noexcept {
  if (index < small_class_limit / class_granularity) {
    return (index + 1) << 4;
  }
  // index = 4q + r: doubling k = q + 5, spacing 2^(k-2) = 2^(q+3), size 2^k + (r+1) * 2^(k-2).
  return (5 + (index & 3)) << ((index >> 2) + 3);
}

/// Requests up to 1 KiB, most of a program's, may find their class in a table by 16-byte step
/// rather than by class_index's bit scan: a load instead of eight instructions (thread_cached's
/// allocation, the malloc replacement's).
inline constexpr std::size_t table_class_limit = 1024;

struct class_table {
  std::uint8_t of[table_class_limit / class_granularity + 1];
};
inline constexpr class_table small_class_table = [] {
  class_table t{};
  for (std::size_t step = 0; step < sizeof t.of; ++step) { // 0 bytes: the smallest class
    t.of[step] = static_cast<std::uint8_t>(class_index(step == 0 ? 1 : step * class_granularity));
  }
  return t;
}();

/// \returns class_index(n), or class 0 for 0. \requires n <= table_class_limit.
MEMKIT_ALWAYS_INLINE std::size_t table_class_index(std::size_t n) noexcept {
  return small_class_table.of[(n + class_granularity - 1) / class_granularity];
}

/// Number of classes up to `class_size_limit`; sizes per-class arrays.
inline constexpr std::size_t class_count_limit = class_index(class_size_limit) + 1;

static_assert(class_size(class_count_limit - 1) == class_size_limit,
              "class_size_limit must be a class boundary");

} // namespace detail
} // namespace MEMKIT_ABI
} // namespace memkit
