// SPDX-License-Identifier: BSL-1.0
// memkit/array_pool.hpp: equal-size blocks of any size (even 1 byte) with a separate free stack.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <utility>

#include "config.hpp"
#include "detail/base/align.hpp"
#include "detail/base/assert.hpp"
#include "detail/base/poison.hpp"
#include "detail/block_index.hpp"
#include "detail/carver.hpp"
#include "detail/fit_table.hpp"
#include "error.hpp"
#include "resource.hpp"
#include "stats.hpp"
#include "upstream.hpp"

namespace memkit {
inline namespace MEMKIT_ABI {

/// A fixed number of equal-size blocks in one storage array, with the indices of returned blocks on
/// a separate `std::uint32_t` stack. Blocks hold no links, so they can be 1, 2 or 4 bytes and pack
/// densely. Both arrays come from the upstream on first use; blocks are carved lazily, so storage
/// never handed out is never written. Not thread-safe.
template <class Upstream = malloc_resource>
class array_pool : private detail::stats_recorder<array_pool<Upstream>> {
  static_assert(is_resource_v<Upstream>, "array_pool<Upstream>: Upstream must be a resource");

public:
  /// \returns the default block alignment for `block_size`: its largest power-of-two divisor
  /// (so blocks packed back to back all keep it), capped at `default_alignment`.
  static constexpr std::size_t natural_alignment(std::size_t block_size) noexcept {
    const std::size_t low = detail::lowest_bit(block_size == 0 ? 1 : block_size);
    return low < default_alignment ? low : default_alignment;
  }

  /// \effects `array_pool(block_size, capacity, natural_alignment(block_size))`.
  array_pool(std::size_t block_size, std::size_t capacity)
      : array_pool(block_size, capacity, natural_alignment(block_size)) {}

  /// \effects a pool of `capacity` blocks of `block_size` bytes (0 counts as 1) rounded up to a
  /// multiple of `block_alignment`, every block aligned to it. Allocates nothing.
  /// \throws bad_alignment if `block_alignment` is not a power of two; bad_size if `capacity`
  /// exceeds UINT32_MAX (the stack holds 32-bit indices) or the arrays' sizes overflow
  /// (docs/concepts.md, "Constructor arguments"). A capacity of 0 makes a pool that is always
  /// exhausted.
  array_pool(std::size_t block_size, std::size_t capacity, std::size_t block_alignment,
             Upstream upstream = Upstream{})
      : block_size_(detail::round_up(block_size == 0 ? 1 : block_size, block_alignment)),
        block_alignment_(block_alignment), fits_(block_size_, block_alignment_),
        capacity_(capacity), upstream_(std::move(upstream)) {
    if (MEMKIT_UNLIKELY(!detail::is_valid_alignment(block_alignment) || block_size_ == 0 ||
                        capacity > std::numeric_limits<std::uint32_t>::max() ||
                        capacity > unbounded_size / block_size_ ||
                        capacity >= unbounded_size / sizeof(std::uint32_t))) {
      detail::throw_bad_geometry(name(), block_size, block_alignment);
    }
    index_ = detail::block_index(block_size_);
  }

  /// \effects release(). Not copyable: blocks point into it.
  ~array_pool() { release(); }
  array_pool(const array_pool&) = delete;
  array_pool& operator=(const array_pool&) = delete;

  const char* name() const noexcept { return "memkit::array_pool"; }
  /// \returns how many blocks the pool holds, and how many of them are allocated and not yet
  /// returned.
  std::size_t capacity() const noexcept { return capacity_; }
  std::size_t in_use() const noexcept { return carved_ - top_; }

  /// \returns the block size rounded up to a multiple of the block alignment, and that alignment;
  /// every request within both is served from one block, so they are max_size() and
  /// max_alignment() too.
  std::size_t block_size() const noexcept { return block_size_; }
  std::size_t block_alignment() const noexcept { return block_alignment_; }
  std::size_t max_size() const noexcept { return block_size_; }
  std::size_t max_alignment() const noexcept { return block_alignment_; }

  /// \returns the counters of docs/statistics.md (all zero unless MEMKIT_STATISTICS is 1).
  using detail::stats_recorder<array_pool<Upstream>>::stats;

  /// \returns `try_allocate(bytes, alignment)` if not null.
  /// \throws bad_alignment, bad_size or out_of_memory (naming "memkit::array_pool") as
  /// docs/concepts.md describes.
  void* allocate(std::size_t bytes, std::size_t alignment = default_alignment) {
    return detail::allocate_or_throw(*this, bytes, alignment);
  }

  /// \returns a free block, the most recently freed first, or null if `bytes > block_size()`,
  /// `alignment` is not a power of two up to `block_alignment()`, every block is in use, or the
  /// upstream cannot supply the arrays on first use.
  void* try_allocate(std::size_t bytes, std::size_t alignment = default_alignment) noexcept {
    if (MEMKIT_UNLIKELY(!fits_(bytes, alignment))) {
      this->on_failure();
      return nullptr;
    }
    if (MEMKIT_LIKELY(top_ != 0)) {
      this->on_allocate(bytes);
      unsigned char* const p = storage_ + stack_[top_--] * block_size_;
      detail::hand_out(p, bytes);
      return p;
    }
    return this->record(carve(bytes), bytes);
  }

  /// \effects makes the block at `p` free again; nothing if `p` is null.
  /// A pointer that is not the start of a carved block, a size above `block_size()`, an alignment
  /// that `try_allocate` would refuse, or the block freed last (still on top of the free stack) is
  /// reported as a misuse (docs/bad-input.md) and otherwise ignored.
  void deallocate(void* p, std::size_t bytes, std::size_t alignment = default_alignment) noexcept {
    const std::size_t i = index_of(p);
    // The range check stays on at MEMKIT_DEBUG 0: it also screens out null, and an
    // index outside the array would be pushed.
    if (MEMKIT_UNLIKELY(i >= carved_ ||
                        (deallocate_checks && (!fits_(bytes, alignment) || stack_[top_] == i)))) {
      reject(p, bytes, alignment);
      return;
    }
    this->on_deallocate(bytes);
    stack_[++top_] = static_cast<std::uint32_t>(i);
    detail::poison(p, block_size_);
  }

  /// \returns whether `p` is the start of a block handed out since the last reset or release
  /// (whether or not it is free now).
  bool owns(const void* p) const noexcept { return index_of(p) < carved_; }

  /// \effects obtains both arrays from the upstream now, if not held yet, so that no later
  /// allocation calls the upstream. Nothing for a pool of capacity 0.
  /// \throws out_of_memory naming "memkit::array_pool" (with the storage array's size) if the
  /// upstream cannot supply them.
  void reserve() {
    if (storage_ == nullptr && capacity_ != 0 && !acquire()) {
      throw out_of_memory(name(), storage_bytes(), block_alignment_);
    }
  }

  /// \effects makes every block free in O(1), keeping both arrays.
  /// \requires no block is still in use.
  void reset() noexcept {
    detail::poison(storage_, carved_ * block_size_);
    this->on_reset();
    top_ = 0;
    carved_ = 0;
  }

  /// \effects returns both arrays to the upstream with the sizes and alignments they were obtained
  /// with; the next allocation obtains them again. \requires no block is still in use.
  void release() noexcept {
    reset(); // first: it poisons the storage, which goes back unpoisoned
    if (storage_ != nullptr) {
      detail::unpoison_kept(storage_, storage_bytes());
      upstream_.deallocate(stack_, stack_bytes(), alignof(std::uint32_t));
      upstream_.deallocate(storage_, storage_bytes(), block_alignment_);
      this->on_upstream_deallocate(stack_bytes());
      this->on_upstream_deallocate(storage_bytes());
      storage_ = nullptr;
      stack_ = nullptr;
    }
  }

private:
  // Out of line with three arguments, like the call it replaces: the seven of
  // detail::reject_block, inlined into deallocate, cost the allocation loop a register (callgrind
  // of bench/pair_loop.cpp: one instruction more per allocate/deallocate pair).
  MEMKIT_NOINLINE MEMKIT_COLD void reject(const void* p, std::size_t bytes,
                                          std::size_t alignment) const noexcept {
    detail::reject_block(name(), owns(p), p, bytes, alignment, block_size_, block_alignment_);
  }

  /// Index 0 of the stack is a sentinel no block has, so that the double-free test in deallocate
  /// reads the top entry without first testing for an empty stack. Capacity <= UINT32_MAX keeps
  /// every real index below it.
  static constexpr std::uint32_t no_block = std::numeric_limits<std::uint32_t>::max();

  /// `storage_` is null until the arrays are acquired and `carved_` is 0 then, so every pointer
  /// (null included) maps to an index >= carved_ and no array is read.
  std::size_t index_of(const void* p) const noexcept {
    return index_(detail::address(p) - detail::address(storage_));
  }

  std::size_t storage_bytes() const noexcept { return capacity_ * block_size_; }
  std::size_t stack_bytes() const noexcept { return (capacity_ + 1) * sizeof(std::uint32_t); }

  /// No returned block is waiting: hand out the next block never used before, if any, obtaining
  /// the arrays first if this is the first one. Blocks are found by index (the free stack holds
  /// indices), so the next one is too, rather than by a detail::carver: keeping a carver's two
  /// pointers beside the count made reset() and release() heavier where they inline, and GCC 12
  /// then spilled a register of the allocation loop (callgrind of bench/pair_loop.cpp: one
  /// instruction more per allocation).
  MEMKIT_NOINLINE void* carve(std::size_t bytes) noexcept {
    if (carved_ == capacity_ || (storage_ == nullptr && !acquire())) {
      return nullptr;
    }
    unsigned char* const p = storage_ + carved_++ * block_size_;
    MEMKIT_ASSERT_INTERNAL(carved_ <= capacity_ && top_ < carved_);
    detail::hand_out(p, bytes);
    return p;
  }

  MEMKIT_NOINLINE bool acquire() noexcept {
    void* storage = upstream_.try_allocate(storage_bytes(), block_alignment_);
    if (storage == nullptr) {
      return false;
    }
    this->on_upstream_allocate(storage_bytes());
    void* stack = upstream_.try_allocate(stack_bytes(), alignof(std::uint32_t));
    if (stack == nullptr) {
      upstream_.deallocate(storage, storage_bytes(), block_alignment_);
      this->on_upstream_deallocate(storage_bytes());
      return false;
    }
    this->on_upstream_allocate(stack_bytes());
    storage_ = static_cast<unsigned char*>(storage);
    stack_ = static_cast<std::uint32_t*>(stack);
    detail::poison(storage_, storage_bytes());
    stack_[0] = no_block;
    return true;
  }

  unsigned char* storage_ = nullptr;
  std::uint32_t* stack_ = nullptr; ///< [0] is no_block; returned blocks' indices at [1, top_]
  std::size_t top_ = 0;
  std::size_t carved_ = 0; ///< blocks [0, carved_) have been handed out at least once
  std::size_t block_size_;
  detail::block_index index_;
  std::size_t block_alignment_;
  detail::fit_table fits_;
  std::size_t capacity_;
  Upstream upstream_;
};

} // namespace MEMKIT_ABI
} // namespace memkit
