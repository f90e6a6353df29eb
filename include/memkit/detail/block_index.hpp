// SPDX-License-Identifier: BSL-1.0
// memkit/detail/block_index.hpp: division-free mapping of a byte offset to a block index.
#pragma once

#include <cstddef>
#include <limits>

#include "../config.hpp"

namespace memkit {
inline namespace MEMKIT_ABI {
namespace detail {

/// Maps a byte offset into a block array to a block index without dividing, so that `deallocate`
/// can find and validate a block in O(1) for any block size (a 64-bit `div` costs tens of cycles on
/// x86-64, a multiply three; Agner Fog, "Instruction tables").
///
/// With `stride == odd << shift`, multiplying by the inverse of `odd` modulo 2^N and rotating right
/// by `shift` yields `offset / stride` for every multiple of `stride` and a value above
/// `SIZE_MAX / stride` for everything else (Hacker's Delight, 2nd ed., 10-17). Hence, for
/// `count * stride <= SIZE_MAX`, `(*this)(offset) < count` holds exactly when `offset` is the start
/// of one of the first `count` blocks: one test covers "outside" and "not on a block boundary".
/// For a power-of-two stride the multiplier is 1 and this is a plain shift.
class block_index {
public:
  /// \requires `stride > 0`.
  explicit constexpr block_index(std::size_t stride = 1) noexcept
      : shift_(trailing_zeros(stride)), inverse_(odd_inverse(stride >> trailing_zeros(stride))) {}

  constexpr std::size_t operator()(std::size_t offset) const noexcept {
    const std::size_t q = offset * inverse_;
    return (q >> shift_) | (q << ((digits - shift_) & (digits - 1)));
  }

private:
  static constexpr unsigned digits = std::numeric_limits<std::size_t>::digits;

  static constexpr unsigned trailing_zeros(std::size_t n) noexcept {
    unsigned k = 0;
    while (n != 0 && (n & 1) == 0) {
      n >>= 1;
      ++k;
    }
    return k;
  }

  /// Newton's iteration `x *= 2 - odd * x` doubles the number of correct low bits; `odd` is its own
  /// inverse modulo 8, so five steps give 3 << 5 = 96 >= 64 bits.
  static constexpr std::size_t odd_inverse(std::size_t odd) noexcept {
    std::size_t x = odd;
    for (int i = 0; i < 5; ++i) {
      x *= 2 - odd * x;
    }
    return x;
  }

  unsigned shift_;
  std::size_t inverse_;
};

} // namespace detail
} // namespace MEMKIT_ABI
} // namespace memkit
