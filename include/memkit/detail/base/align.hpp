// SPDX-License-Identifier: BSL-1.0
// memkit/detail/base/align.hpp: alignment and overflow-checked size arithmetic.
#pragma once

#include <cstddef>
#include <cstdint>

#include "../../config.hpp"

namespace memkit {
inline namespace MEMKIT_ABI {
namespace detail {

/// \returns whether `a` is a valid alignment: a non-zero power of two.
constexpr bool is_valid_alignment(std::size_t a) noexcept { return a != 0 && (a & (a - 1)) == 0; }

/// \returns `n` rounded up to a multiple of `a` (a power of two), or 0 if that overflows.
/// `n == 0` yields 0 too, so callers treat a zero request before calling this.
constexpr std::size_t round_up(std::size_t n, std::size_t a) noexcept {
  const std::size_t r = (n + (a - 1)) & ~(a - 1);
  return r < n ? 0 : r;
}

inline std::uintptr_t address(const void* p) noexcept {
  return reinterpret_cast<std::uintptr_t>(p);
}

inline bool is_aligned(const void* p, std::size_t a) noexcept {
  return (address(p) & (a - 1)) == 0;
}

/// \returns the bytes to add to `p` to reach the next multiple of `a` (a power of two).
inline std::size_t padding_for(const void* p, std::size_t a) noexcept {
  return static_cast<std::size_t>(-address(p) & (a - 1));
}

/// \returns the largest power of two that divides `n` (n > 0).
constexpr std::size_t lowest_bit(std::size_t n) noexcept { return n & (~n + 1); }

/// \returns whether `p` points into [begin, begin + size).
inline bool in_range(const void* p, const void* begin, std::size_t size) noexcept {
  return address(p) - address(begin) < size;
}

/// \returns whether `alignment` is a power of two no larger than `max` (itself a power of two).
/// One test instead of three: `(a - 1) & a` is zero only for powers of two and
/// `(a - 1) & ~(max - 1)` only for `a <= max`; `a == 0` fails the second through `a - 1 ==
/// SIZE_MAX`.
constexpr bool is_alignment_within(std::size_t alignment, std::size_t max) noexcept {
  return ((alignment - 1) & (alignment | ~(max - 1))) == 0;
}

} // namespace detail
} // namespace MEMKIT_ABI
} // namespace memkit
