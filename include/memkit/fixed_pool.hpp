// SPDX-License-Identifier: BSL-1.0
// memkit/fixed_pool.hpp: equal-size blocks from caller storage, intrusive free list, lazy carving.
#pragma once

#include <cstddef>
#include <new>

#include "config.hpp"
#include "detail/base/align.hpp"
#include "detail/base/assert.hpp"
#include "detail/base/poison.hpp"
#include "detail/block_index.hpp"
#include "detail/carver.hpp"
#include "detail/fit_table.hpp"
#include "detail/free_list.hpp"
#include "error.hpp"
#include "resource.hpp"
#include "stats.hpp"

namespace memkit {
inline namespace MEMKIT_ABI {

/// A fixed number of equal-size blocks carved from storage the caller supplies and keeps owning.
/// Free blocks form a singly linked list threaded through the blocks themselves, so a block is at
/// least a pointer in size and alignment (array_pool serves smaller blocks). Blocks are carved
/// lazily: memory never handed out is never written, so a pool over a large reserved mapping only
/// commits the pages it uses. Not thread-safe.
class fixed_pool : private detail::stats_recorder<fixed_pool> {
  // Block sizes are rounded to the block alignment, which is at least alignof(void*); that makes
  // every block big enough for a link only if a pointer's size equals its alignment.
  static_assert(sizeof(void*) == alignof(void*),
                "fixed_pool assumes sizeof(void*) == alignof(void*)");

public:
  /// \returns the block alignment a pool built with `block_alignment` uses: the smallest power of
  /// two that is at least `block_alignment` and `alignof(void*)`, capped at `unbounded_alignment`.
  static constexpr std::size_t block_alignment_for(std::size_t block_alignment) noexcept {
    std::size_t a = alignof(void*);
    while (a < block_alignment && a < unbounded_alignment) {
      a <<= 1;
    }
    return a;
  }

  /// \returns the block size a pool built with `block_size` and `block_alignment` uses:
  /// `block_size` (at least a pointer, at most `unbounded_size`) rounded up to a multiple of
  /// `block_alignment_for(block_alignment)`. Storage for n blocks, if aligned to the block
  /// alignment, is `n * block_size_for(...)` bytes.
  static constexpr std::size_t block_size_for(std::size_t block_size,
                                              std::size_t block_alignment) noexcept {
    const std::size_t n = block_size < sizeof(void*)    ? sizeof(void*)
                          : block_size > unbounded_size ? unbounded_size
                                                        : block_size;
    // Cannot overflow: n < 2^(N-1) and the alignment is at most 2^(N-1).
    return detail::round_up(n, block_alignment_for(block_alignment));
  }

  /// \effects manages `[storage, storage + storage_bytes)` as blocks of
  /// `block_size_for(block_size, block_alignment)` bytes, the first at the first address there
  /// aligned to `block_alignment_for(block_alignment)`; `capacity()` is the number that fit.
  /// Writes nothing to the storage. Storage too small for one block makes a pool of capacity 0.
  /// \throws bad_alignment if `block_alignment` is not a power of two, bad_size if `block_size`
  /// exceeds `unbounded_size` (docs/concepts.md, "Constructor arguments").
  /// \requires the storage outlives the pool and is used by nothing else while it lives.
  fixed_pool(void* storage, std::size_t storage_bytes, std::size_t block_size,
             std::size_t block_alignment = default_alignment)
      : block_size_(checked_block_size(block_size, block_alignment)),
        block_alignment_(block_alignment_for(block_alignment)),
        fits_(block_size_, block_alignment_), index_(block_size_) {
    if (storage == nullptr) {
      return;
    }
    const std::size_t pad = detail::padding_for(storage, block_alignment_);
    if (pad < storage_bytes) {
      begin_ = static_cast<char*>(storage) + pad;
      capacity_ = (storage_bytes - pad) / block_size_;
      carver_ = detail::carver(begin_, begin_ + capacity_ * block_size_);
      detail::poison(begin_, capacity_ * block_size_);
    }
  }

#if MEMKIT_POISONING
  /// \effects gives the storage back to the caller unpoisoned (only in poisoning builds, so that
  /// the pool stays trivially destructible otherwise).
  ~fixed_pool() { detail::unpoison_kept(begin_, capacity_ * block_size_); }
#endif

  fixed_pool(const fixed_pool&) = delete;
  fixed_pool& operator=(const fixed_pool&) = delete;

  const char* name() const noexcept { return "memkit::fixed_pool"; }
  /// \returns `block_size()`: every request up to it is served from one block.
  std::size_t max_size() const noexcept { return block_size_; }
  /// \returns `block_alignment()`.
  std::size_t max_alignment() const noexcept { return block_alignment_; }

  /// \returns the rounded block size (see `block_size_for`).
  std::size_t block_size() const noexcept { return block_size_; }
  /// \returns the alignment of every block (see `block_alignment_for`).
  std::size_t block_alignment() const noexcept { return block_alignment_; }
  /// \returns how many blocks the storage holds.
  std::size_t capacity() const noexcept { return capacity_; }
  /// \returns how many blocks are allocated and not yet returned. O(free blocks): it walks the
  /// free list, so that the hot paths keep no counter (a load and a store per call otherwise).
  std::size_t in_use() const noexcept {
    MEMKIT_ASSERT_EXPENSIVE(free_.count() <= carved_);
    return carved_ - free_.count(carved_);
  }

  /// \returns the counters of docs/statistics.md (all zero unless MEMKIT_STATISTICS is 1).
  using detail::stats_recorder<fixed_pool>::stats;

  /// \returns `try_allocate(bytes, alignment)` if not null.
  /// \throws bad_alignment, bad_size or out_of_memory (naming "memkit::fixed_pool") as
  /// docs/concepts.md describes.
  void* allocate(std::size_t bytes, std::size_t alignment = default_alignment) {
    return detail::allocate_or_throw(*this, bytes, alignment);
  }

  /// \returns a free block, the most recently freed first, or null if `bytes > block_size()`,
  /// `alignment` is not a power of two up to `block_alignment()`, or every block is in use.
  void* try_allocate(std::size_t bytes, std::size_t alignment = default_alignment) noexcept {
    if (MEMKIT_UNLIKELY(!fits_(bytes, alignment))) {
      on_failure();
      return nullptr;
    }
    if (MEMKIT_LIKELY(!free_.empty())) {
      void* const n = free_.pop();
      detail::hand_out(n, bytes);
      on_allocate(bytes);
      return n;
    }
    return record(carve(bytes), bytes);
  }

  /// \effects makes the block at `p` free again; nothing if `p` is null.
  /// A pointer that is not the start of a carved block, a size above `block_size()`, an alignment
  /// that `try_allocate` would refuse, or the block freed last (still the head of the free list) is
  /// reported as a misuse (docs/bad-input.md) and otherwise ignored.
  void deallocate(void* p, std::size_t bytes, std::size_t alignment = default_alignment) noexcept {
    if constexpr (deallocate_checks) {
      if (MEMKIT_UNLIKELY(!owns(p) || !fits_(bytes, alignment) || p == free_.head())) {
        reject(p, bytes, alignment);
        return;
      }
    } else if (p == nullptr) {
      return;
    }
    on_deallocate(bytes);
    free_.push(p, block_size_);
  }

  /// \returns whether `p` is the start of a block this pool has handed out since the last reset
  /// (whether or not it is free now).
  bool owns(const void* p) const noexcept {
    return index_(detail::address(p) - detail::address(begin_)) < carved_;
  }

  /// \effects makes every block free in O(1); carving starts again from the first block.
  /// \requires no block is still in use.
  void reset() noexcept {
    detail::poison(begin_, carved_ * block_size_);
    on_reset();
    free_.clear();
    carved_ = 0;
    carver_ = detail::carver(begin_, carver_.end());
  }

private:
  // Out of line with three arguments, like the call it replaces: the seven of
  // detail::reject_block, inlined into deallocate, cost the allocation loop a register (callgrind
  // of bench/pair_loop.cpp: one instruction more per allocate/deallocate pair).
  MEMKIT_NOINLINE MEMKIT_COLD void reject(const void* p, std::size_t bytes,
                                          std::size_t alignment) const noexcept {
    detail::reject_block(name(), owns(p), p, bytes, alignment, block_size_, block_alignment_);
  }

  // The throw is out of line so that the constructor stays small enough to inline, and a pool
  // built and used in one function still has its fit test folded away.
  static std::size_t checked_block_size(std::size_t block_size, std::size_t block_alignment) {
    if (MEMKIT_UNLIKELY(!detail::is_valid_alignment(block_alignment) ||
                        block_size > unbounded_size)) {
      detail::throw_bad_geometry("memkit::fixed_pool", block_size, block_alignment);
    }
    return block_size_for(block_size, block_alignment);
  }

  /// The free list is empty: hand out the next block never used before, if any. The carver's
  /// range holds a whole number of blocks (see `detail::carver::exhausted`).
  MEMKIT_NOINLINE void* carve(std::size_t bytes) noexcept {
    if (carver_.exhausted()) {
      return nullptr;
    }
    void* const p = carver_.take(block_size_);
    ++carved_;
    MEMKIT_ASSERT_INTERNAL(carved_ <= capacity_);
    detail::hand_out(p, bytes);
    return p;
  }

  detail::free_list free_;
  char* begin_ = nullptr;
  std::size_t carved_ = 0; ///< blocks [0, carved_) have been handed out at least once
  detail::carver carver_;  ///< the blocks [carved_, capacity_)
  std::size_t block_size_;
  std::size_t block_alignment_;
  detail::fit_table fits_;
  detail::block_index index_;
  std::size_t capacity_ = 0;
};

namespace detail {

/// The storage of an inline_fixed_pool, a base class so that it exists before the fixed_pool base
/// that is given its address.
template <std::size_t Bytes, std::size_t Alignment>
struct inline_pool_storage {
  alignas(Alignment) unsigned char bytes[Bytes];
};

} // namespace detail

/// A fixed_pool of exactly `Capacity` blocks whose storage lives inside the object: no heap, no
/// caller buffer. Block size and alignment are rounded as `fixed_pool::block_size_for` and
/// `fixed_pool::block_alignment_for` describe. Usable wherever a `fixed_pool&` is expected.
template <std::size_t BlockSize, std::size_t Capacity,
          std::size_t BlockAlignment = default_alignment>
class inline_fixed_pool
    : private detail::inline_pool_storage<fixed_pool::block_size_for(BlockSize, BlockAlignment) *
                                              Capacity,
                                          fixed_pool::block_alignment_for(BlockAlignment)>,
      public fixed_pool {
  static_assert(detail::is_valid_alignment(BlockAlignment),
                "inline_fixed_pool: BlockAlignment must be a power of two");
  static_assert(Capacity > 0, "inline_fixed_pool: Capacity must be positive");
  static_assert(Capacity <= unbounded_size / fixed_pool::block_size_for(BlockSize, BlockAlignment),
                "inline_fixed_pool: BlockSize * Capacity does not fit in an object");

public:
  /// \effects an empty pool over the inline storage; `capacity() == Capacity`.
  inline_fixed_pool() noexcept
      : fixed_pool(this->bytes, sizeof(this->bytes), BlockSize, BlockAlignment) {}
};

} // namespace MEMKIT_ABI
} // namespace memkit
