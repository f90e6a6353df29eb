// SPDX-License-Identifier: BSL-1.0
// memkit/detail/carver.hpp: lazy carving of equal blocks from a range, and the verdicts on bad
// geometry and on misuse that the strategies carving them share.
#pragma once

#include <cstddef>

#include "../config.hpp"
#include "../error.hpp"
#include "base/assert.hpp"

namespace memkit {
inline namespace MEMKIT_ABI {
namespace detail {

/// Hands out equal blocks from `[begin, end)` front to back, one at a time and only when asked, so
/// memory never handed out is never written (a pool over a large reserved mapping commits only
/// the pages it uses). Two pointers; the block size is the caller's, passed to each `carve`, so a
/// strategy that already holds it (every one does) stores it once.
class carver {
public:
  constexpr carver() noexcept = default;

  /// \requires `begin <= end`, both null or both in one array.
  carver(char* begin, char* end) noexcept : next_(begin), end_(end) {
    MEMKIT_ASSERT_INTERNAL(begin <= end);
  }

  /// \returns the next block of `size` bytes, or null when fewer than `size` bytes are left. Never
  /// computes a pointer past `end`: the bytes left are compared, not an end pointer.
  MEMKIT_ALWAYS_INLINE void* carve(std::size_t size) noexcept {
    return can_carve(size) ? take(size) : nullptr;
  }

  /// \returns whether a block of `size` bytes is left.
  MEMKIT_ALWAYS_INLINE bool can_carve(std::size_t size) const noexcept {
    return static_cast<std::size_t>(end_ - next_) >= size;
  }

  /// \returns whether nothing is left, for a range whose length is a multiple of the block size
  /// (a pool's chunk): one compare of two pointers, where `can_carve` also subtracts, and the
  /// caller knows the block it then `take`s is not null, so it tests nothing more (callgrind of
  /// bench/pair_loop.cpp: four instructions fewer per block carved than `carve`).
  MEMKIT_ALWAYS_INLINE bool exhausted() const noexcept { return next_ == end_; }

  /// \returns the next block of `size` bytes. \requires `can_carve(size)`.
  MEMKIT_ALWAYS_INLINE char* take(std::size_t size) noexcept {
    MEMKIT_ASSERT_INTERNAL(can_carve(size));
    char* const p = next_;
    next_ += size;
    return p;
  }

  /// \returns the first of `n` consecutive blocks of `size` bytes carved in one step, or of as
  /// many as are left if fewer, and their number in `taken`; at least one block even for `n` 0.
  /// The batch form: a cache that carves a page's worth at a time touches memory a page at a time.
  /// \requires `can_carve(size)`.
  char* take_batch(std::size_t size, std::size_t n, std::size_t& taken) noexcept {
    const std::size_t left = remaining() / size;
    taken = n == 0 ? 1 : (n > left ? left : n);
    return take(taken * size);
  }

  /// \returns where the next block would start (the end of what was carved).
  char* next() const noexcept { return next_; }
  char* end() const noexcept { return end_; }
  /// \returns the bytes not carved yet.
  std::size_t remaining() const noexcept { return static_cast<std::size_t>(end_ - next_); }

private:
  char* next_ = nullptr;
  char* end_ = nullptr;
};

/// Throws what a constructor given `size` and `alignment` must (docs/concepts.md, "Constructor
/// arguments"): `bad_alignment` if `alignment` is not a power of two, else `bad_size`. Out of line,
/// so that the constructors that call it on their unlikely path stay small enough to inline.
[[noreturn]] MEMKIT_NOINLINE MEMKIT_COLD inline void
throw_bad_geometry(const char* name, std::size_t size, std::size_t alignment) {
  if (!is_valid_alignment(alignment)) {
    throw bad_alignment(name, size, alignment);
  }
  throw bad_size(name, size, alignment);
}

/// The cold half of the deallocate checks of a strategy that carves its blocks from one array
/// (fixed_pool, array_pool): reports which mistake the call made, given whether `p` is one of the
/// blocks carved so far (docs/bad-input.md). Nothing for null.
MEMKIT_NOINLINE MEMKIT_COLD inline void reject_block(const char* name, bool carved, const void* p,
                                                     std::size_t bytes, std::size_t alignment,
                                                     std::size_t block_size,
                                                     std::size_t block_alignment) noexcept {
  if (p != nullptr) {
    report_misuse(classify_block_misuse(carved, bytes, alignment, block_size, block_alignment),
                  name, p, bytes, alignment);
  }
}

} // namespace detail
} // namespace MEMKIT_ABI
} // namespace memkit
