// SPDX-License-Identifier: BSL-1.0
// memkit/detail/base/bits.hpp: the bit scans the size classes, the alignment tables and the chunk
// registry compute with, each once.
#pragma once

#include <cstdint>

#include "../../config.hpp"

namespace memkit {
inline namespace MEMKIT_ABI {
namespace detail {

/// The portable forms, which compilers without GCC's builtins use; constexpr functions of their
/// own, so tests compare them with the builtins on every bit position (tests/bits_test.cpp).
/// Six halving steps, no loop: each moves the top set bit into the lower half when it is above.
constexpr unsigned portable_floor_log2(std::uint64_t n) noexcept {
  unsigned r = 0;
  for (unsigned s = 32; s != 0; s /= 2) {
    const unsigned step = static_cast<unsigned>(n >= (std::uint64_t{1} << s)) * s;
    n >>= step;
    r += step;
  }
  return r;
}
constexpr unsigned portable_trailing_zeros(std::uint64_t n) noexcept {
  return portable_floor_log2(n & (~n + 1));
}

/// \returns floor(log2(n)): the index of the highest set bit. \requires n > 0.
constexpr unsigned floor_log2(std::uint64_t n) noexcept {
#if defined(__GNUC__)
  return 63U - static_cast<unsigned>(__builtin_clzll(n));
#else
  return portable_floor_log2(n);
#endif
}

/// \returns the index of the lowest set bit: k for `n == 2^k`. \requires n > 0.
constexpr unsigned trailing_zeros(std::uint64_t n) noexcept {
#if defined(__GNUC__)
  return static_cast<unsigned>(__builtin_ctzll(n));
#else
  return portable_trailing_zeros(n);
#endif
}

} // namespace detail
} // namespace MEMKIT_ABI
} // namespace memkit
