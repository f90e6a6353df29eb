// SPDX-License-Identifier: BSL-1.0
// memkit/detail/fit_table.hpp: "does this request fit a block?" in one load and one compare.
#pragma once

#include <cstddef>

#include "../config.hpp"
#include "base/align.hpp"
#include "base/bits.hpp"

namespace memkit {
inline namespace MEMKIT_ABI {
namespace detail {

/// Whether a request of (bytes, alignment) fits a fixed-block strategy's blocks: `bytes` at most
/// the block size and `alignment` a power of two at most the block alignment. Entry k holds
/// `block_size + 1` if 2^k is within the block alignment, else 0, so for the usual compile-time
/// alignment (a container's `alignof(T)`) the test folds into one compare against one entry
/// instead of two compares and branches, which cost a pool about a quarter of a 32-byte
/// alloc/free pair (measured on memkit_micro_bench's AllocFree).
class fit_table {
public:
  /// \requires `block_alignment` is a power of two, `block_size < SIZE_MAX`.
  fit_table(std::size_t block_size, std::size_t block_alignment) noexcept
      : block_alignment_(block_alignment),
        above_page_(block_alignment > page_size ? block_size + 1 : 0) {
    for (std::size_t k = 0; k < entries; ++k) {
      fit_[k] = (std::size_t{1} << k) <= block_alignment ? block_size + 1 : 0;
    }
  }

  bool operator()(std::size_t bytes, std::size_t alignment) const noexcept {
    if (alignment <= page_size) {
      return is_valid_alignment(alignment) && bytes < fit_[trailing_zeros(alignment)];
    }
    return is_alignment_within(alignment, block_alignment_) && bytes < above_page_;
  }

private:
  static constexpr std::size_t entries = 13; // alignments 1 .. memkit::page_size
  static_assert(std::size_t{1} << (entries - 1) == page_size);

  std::size_t fit_[entries];
  std::size_t block_alignment_;
  std::size_t above_page_; ///< the entry for alignments above page_size, up to block_alignment_
};

} // namespace detail
} // namespace MEMKIT_ABI
} // namespace memkit
