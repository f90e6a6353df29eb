// SPDX-License-Identifier: BSL-1.0
// memkit/pool.hpp: a growable pool of fixed-size blocks, carved lazily from chunks that double.
#pragma once

#include <cstddef>
#include <new>
#include <utility>

#include "config.hpp"
#include "detail/base/align.hpp"
#include "detail/base/assert.hpp"
#include "detail/base/poison.hpp"
#include "detail/carver.hpp"
#include "detail/chunk_list.hpp"
#include "detail/fit_table.hpp"
#include "detail/free_list.hpp"
#include "error.hpp"
#include "resource.hpp"
#include "stats.hpp"
#include "upstream.hpp"

namespace memkit {
inline namespace MEMKIT_ABI {

/// How a `pool` sizes its blocks and grows. Aggregate: `pool_options{32}` or, in C++20,
/// `pool_options{.block_size = 32, .reserved_blocks = 1000}`.
struct pool_options {
  /// Bytes every block can hold; 0 is served as 1, as `allocate(0)` is.
  std::size_t block_size = 0;
  /// Alignment of every block; a power of two.
  std::size_t block_alignment = default_alignment;
  /// Blocks obtained at construction, so that the first `reserved_blocks` allocations make no
  /// upstream call (the only memory a pool ever takes in its constructor).
  std::size_t reserved_blocks = 0;
  /// Blocks in the first chunk obtained on demand, at least 1. 32 is boost::pool's default
  /// first chunk (`next_size`), so the two grow in the same steps when benchmarked against each
  /// other, and a pool that serves a handful of objects takes only a small chunk.
  std::size_t first_chunk_blocks = 32;
  /// Cap on the chunk size as it doubles, at least 1; raised to `first_chunk_blocks` if below it
  /// (docs/concepts.md, "Constructor arguments"). 4096 blocks
  /// is reached after 8 doublings from 32; a pool of 32-byte blocks then takes 128 KiB chunks,
  /// glibc malloc's default mmap threshold (M_MMAP_THRESHOLD), so capped chunks are mapped and go
  /// back to the kernel on release() instead of fragmenting the heap. The cap also bounds what one
  /// growth step can obtain beyond need to 4095 blocks (untouched, since blocks are carved lazily).
  std::size_t max_chunk_blocks = 4096;
};

/// A pool of equal blocks (docs/concepts.md) that grows on demand: chunks come from `Upstream`,
/// each twice the previous one up to `max_chunk_blocks`, and are carved one block at a time by a
/// bump pointer, so untouched memory stays untouched. Freed blocks go on an intrusive free list
/// that `try_allocate` pops before carving: the steady state is a pop and a push.
///
/// Each chunk keeps its bookkeeping (next chunk, size) in a two-word header at its end, after the
/// last block (detail/chunk_list.hpp), so the blocks start at the chunk's start with no alignment
/// padding even for page-aligned blocks; a chunk of n blocks is `n * block_size() + 2 *
/// sizeof(void*)` bytes aligned to `block_alignment()`, and goes back to the upstream with exactly
/// that size and alignment.
///
/// Detected misuse in deallocate, in O(1) (reported, then ignored): a size above block_size()
/// (size mismatch), an alignment above block_alignment() or not a power of two (alignment
/// mismatch), and freeing the block most recently freed (double free). A foreign pointer or an
/// older double free is not detected: owns(p) is exact but walks the chunks.
template <class Upstream = malloc_resource>
class pool : private detail::stats_recorder<pool<Upstream>> {
  static_assert(is_resource_v<Upstream>, "memkit::pool<Upstream>: Upstream must be a resource");

public:
  /// \effects a pool of `block_size`-byte blocks aligned to `block_alignment`; obtains nothing.
  /// \throws bad_alignment if `block_alignment` is not a power of two, bad_size if the rounded
  /// block size overflows (docs/concepts.md, "Constructor arguments").
  explicit pool(std::size_t block_size, std::size_t block_alignment = default_alignment,
                Upstream upstream = {})
      : pool(pool_options{block_size, block_alignment}, std::move(upstream)) {}

  /// \effects a pool configured by `options`; obtains `options.reserved_blocks` blocks, if any,
  /// as a single chunk.
  /// \throws bad_alignment, bad_size as above, bad_size if `first_chunk_blocks` or
  /// `max_chunk_blocks` is 0; out_of_memory if the reservation fails.
  explicit pool(const pool_options& options, Upstream upstream = {})
      : block_size_(checked_block_size(options)),
        block_alignment_(options.block_alignment < alignof(void*) ? alignof(void*)
                                                                  : options.block_alignment),
        fits_(block_size_, block_alignment_),
        growth_(options.first_chunk_blocks, options.max_chunk_blocks),
        upstream_(std::move(upstream)) {
    if (options.reserved_blocks != 0) {
      reserve(options.reserved_blocks);
    }
  }

  pool(const pool&) = delete;
  pool& operator=(const pool&) = delete;

  /// \effects release().
  ~pool() { release(); }

  const char* name() const noexcept { return "memkit::pool"; }

  /// \returns block_size(): every request up to it is served by one block.
  std::size_t max_size() const noexcept { return block_size_; }

  /// \returns block_alignment(); every smaller power of two is honoured too.
  std::size_t max_alignment() const noexcept { return block_alignment_; }

  /// \returns the block size asked for, rounded up to a multiple of block_alignment() (and to at
  /// least a pointer, which a free block holds).
  std::size_t block_size() const noexcept { return block_size_; }

  /// \returns the alignment asked for, raised to at least that of a pointer.
  std::size_t block_alignment() const noexcept { return block_alignment_; }

  /// \returns a block of block_size() bytes.
  /// \throws bad_alignment, bad_size, out_of_memory (the upstream could not provide a chunk).
  void* allocate(std::size_t bytes, std::size_t alignment = default_alignment) {
    return pop_or_slow<true>(bytes, alignment);
  }

  /// \returns a block for a request of at most block_size() bytes and block_alignment(), or null.
  /// Pops the free list; carving and growing happen out of line.
  void* try_allocate(std::size_t bytes, std::size_t alignment = default_alignment) noexcept {
    return pop_or_slow<false>(bytes, alignment);
  }

  /// Puts the block back on the free list; `deallocate(nullptr, ...)` does nothing.
  /// \requires `p` came from this pool and is in use. Checked in O(1) only for the cases listed in
  /// the class comment; owns(p) is the exact (O(chunks)) test.
  void deallocate(void* p, std::size_t bytes, std::size_t alignment = default_alignment) noexcept {
    // Null is screened inline even without checks: sending it to the out-of-line slow path (which
    // takes `this`) made GCC keep free_ in memory across a loop of frees, a load and a store per
    // free (callgrind and objdump of the AllocFree loop: 1.02 -> 0.63 ns per free).
    if constexpr (deallocate_checks) {
      if (MEMKIT_UNLIKELY(p == nullptr || p == free_.head() || !fits_(bytes, alignment))) {
        deallocate_slow(p, bytes, alignment);
        return;
      }
    } else if (p == nullptr) {
      return;
    }
    this->on_deallocate(bytes);
    free_.push(p, block_size_);
  }

  /// \returns whether `p` points into a chunk's blocks (handed out, free or not yet carved).
  /// O(chunk_count()): walks the chunk list; the hot paths never call it.
  bool owns(const void* p) const noexcept { return chunks_.contains(p); }

  /// \returns whether at least `n` blocks can be handed out without any upstream call, obtaining
  /// one more chunk if needed (of the missing blocks, or the next growth step if larger). On
  /// failure nothing changes. O(min(n, free blocks)): free blocks are counted only if the blocks
  /// not yet carved fall short.
  bool try_reserve(std::size_t n) noexcept {
    const std::size_t uncarved = capacity_ - carved_;
    if (n <= uncarved) {
      return true;
    }
    const std::size_t available = uncarved + free_.count(n - uncarved);
    if (n <= available) {
      return true;
    }
    const std::size_t missing = n - available;
    return grow(missing > growth_.next() ? missing : growth_.next(), missing);
  }

  /// \effects as try_reserve(n). \throws out_of_memory (for `n` blocks) if the upstream fails.
  void reserve(std::size_t n) {
    if (!try_reserve(n)) {
      const std::size_t limit = static_cast<std::size_t>(-1) / block_size_;
      throw out_of_memory(name(), n > limit ? static_cast<std::size_t>(-1) : n * block_size_,
                          block_alignment_);
    }
  }

  /// \effects every block becomes free again; the chunks are kept and carved afresh, oldest first,
  /// so a steady cycle of allocations and reset() makes no upstream calls.
  /// \requires no block is still in use (they become invalid).
  void reset() noexcept {
    chunks_.keep_all();
    this->on_reset();
    free_.clear();
    carver_ = {};
    carved_ = 0;
  }

  /// \effects returns every chunk to the upstream and starts over from first_chunk_blocks.
  /// \requires no block is still in use (they become invalid).
  void release() noexcept {
    MEMKIT_ASSERT_EXPENSIVE(chunks_.count() == chunk_count_);
    chunks_.release(upstream_, block_alignment_,
                    [this](std::size_t bytes) { this->on_upstream_deallocate(bytes); });
    this->on_reset();
    free_.clear();
    carver_ = {};
    carved_ = 0;
    capacity_ = 0;
    chunk_count_ = 0;
    growth_.restart();
  }

  /// \returns the blocks in all chunks obtained, in use or not.
  std::size_t capacity() const noexcept { return capacity_; }
  /// \returns the blocks handed out and not yet returned. O(free blocks): it walks the free list,
  /// because a counter updated by every allocate and deallocate made a 32-byte alloc/free loop
  /// 15-40% slower (a read-modify-write of one more word in a loop that otherwise moves two
  /// pointers).
  std::size_t in_use() const noexcept {
    MEMKIT_ASSERT_EXPENSIVE(free_.count() <= carved_);
    return carved_ - free_.count(carved_);
  }
  /// \returns the chunks currently held from the upstream.
  std::size_t chunk_count() const noexcept { return chunk_count_; }

  /// \returns the counters of docs/statistics.md (all zero unless MEMKIT_STATISTICS is 1).
  using detail::stats_recorder<pool<Upstream>>::stats;

  Upstream& upstream() noexcept { return upstream_; }
  const Upstream& upstream() const noexcept { return upstream_; }

private:
  // Blocks are multiples of block_alignment_ >= alignof(void*), which is enough for the chunk
  // header that follows the last one.
  static_assert(alignof(detail::chunk) <= alignof(void*), "a chunk header must fit after a block");

  static std::size_t checked_block_size(const pool_options& o) {
    const std::size_t granule =
        o.block_alignment < alignof(void*) ? alignof(void*) : o.block_alignment;
    const std::size_t size =
        detail::round_up(o.block_size < sizeof(void*) ? sizeof(void*) : o.block_size, granule);
    if (MEMKIT_UNLIKELY(!detail::is_valid_alignment(o.block_alignment) || size == 0 ||
                        size > unbounded_size || o.first_chunk_blocks == 0 ||
                        o.max_chunk_blocks == 0)) {
      detail::throw_bad_geometry("memkit::pool", o.block_size, o.block_alignment);
    }
    return size;
  }

  // The fast path of allocate (Throwing) and try_allocate. allocate does not go through
  // detail::allocate_or_throw: with the pop's result and the slow path's null test merged, GCC 12
  // placed the pop behind two taken jumps, which cost ~25 % of a 32-byte alloc/free pair against
  // boost::pool (objdump and wall time of a standalone LIFO loop). Here the throwing slow path
  // never returns null, so there is nothing to merge and the pop stays inline.
  template <bool Throwing>
  void* pop_or_slow(std::size_t bytes, std::size_t alignment) noexcept(!Throwing) {
    void* const n = free_.head();
    if (MEMKIT_LIKELY(n != nullptr && fits_(bytes, alignment))) {
      free_.pop();
      detail::hand_out(n, bytes);
      this->on_allocate(bytes);
      return n;
    }
    if constexpr (Throwing) {
      return allocate_slow_or_throw(bytes, alignment);
    } else {
      return this->record(allocate_slow(bytes, alignment), bytes);
    }
  }

  MEMKIT_NOINLINE void* allocate_slow_or_throw(std::size_t bytes, std::size_t alignment) {
    void* p = this->record(allocate_slow(bytes, alignment), bytes);
    if (p == nullptr) {
      detail::throw_failed_request(name(), bytes, alignment, max_size(), max_alignment());
    }
    return p;
  }

  // The slow half of try_allocate: the free list is empty, or the request is invalid or has an
  // alignment above page_size. Pops the free list if it can; otherwise carves the next block from
  // the current chunk, moving on to a younger chunk left over from reset() or try_reserve(), and
  // obtains a new chunk only when every chunk is fully carved.
  MEMKIT_NOINLINE void* allocate_slow(std::size_t bytes, std::size_t alignment) noexcept {
    if (bytes > block_size_ || !detail::is_valid_alignment(alignment) ||
        alignment > block_alignment_) {
      return nullptr;
    }
    if (!free_.empty()) {
      void* const n = free_.pop();
      detail::hand_out(n, bytes);
      return n;
    }
    // A chunk holds a whole number of blocks, so its carver is exhausted exactly when no block is
    // left.
    void* const p = !carver_.exhausted() ? carver_.take(block_size_) : carve_next_chunk();
    if (p == nullptr) {
      return nullptr;
    }
    ++carved_;
    MEMKIT_ASSERT_INTERNAL(carved_ <= capacity_);
    detail::hand_out(p, bytes);
    return p;
  }

  // \returns the first block of the next spare chunk (kept by reset() or reserved ahead), or of a
  // new one; null if the upstream has none. Apart from the common carving step, so that the
  // registers of that step are not shaped by this one (one instruction less per block carved).
  MEMKIT_NOINLINE void* carve_next_chunk() noexcept {
    detail::chunk* c = chunks_.take_spare();
    if (c == nullptr) {
      if (!grow(growth_.next(), 1)) {
        return nullptr;
      }
      c = chunks_.take_spare();
    }
    carver_ = detail::carver(c->begin(), c->blocks_end());
    return carver_.take(block_size_);
  }

  // Obtains a spare chunk of `want` blocks, or fewer down to `need` while the upstream refuses;
  // the next growth step doubles what was obtained, up to the cap.
  bool grow(std::size_t want, std::size_t need) noexcept {
    std::size_t blocks = 0;
    const detail::chunk* c =
        chunks_.obtain_blocks(upstream_, want, need, block_size_, block_alignment_, blocks);
    if (c == nullptr) {
      return false;
    }
    this->on_upstream_allocate(c->bytes);
    capacity_ += blocks;
    ++chunk_count_;
    growth_.grew(blocks);
    return true;
  }

  // The slow half of deallocate: null, a detected misuse, or a valid block whose alignment is
  // above page_size (pushed like any other).
  MEMKIT_NOINLINE MEMKIT_COLD void deallocate_slow(void* p, std::size_t bytes,
                                                   std::size_t alignment) noexcept {
    if (p == nullptr) {
      return;
    }
    if (bytes > block_size_) {
      report_misuse(misuse::size_mismatch, name(), p, bytes, alignment);
    } else if (!detail::is_valid_alignment(alignment) || alignment > block_alignment_) {
      report_misuse(misuse::alignment_mismatch, name(), p, bytes, alignment);
    } else if (p == free_.head()) {
      report_misuse(misuse::double_free, name(), p, bytes, alignment);
    } else {
      this->on_deallocate(bytes);
      free_.push(p, block_size_);
    }
  }

  // Hot members first: the fast paths touch only free_ and one entry of fits_; free_ and the
  // entries for alignments up to 16 lie in the object's first 64 bytes.
  detail::free_list free_;
  std::size_t block_size_;
  std::size_t block_alignment_;
  detail::fit_table fits_;
  detail::carver carver_; // the rest of the chunk being carved
  detail::chunk_list chunks_;
  std::size_t carved_ = 0;   // blocks ever carved since the last reset() or release()
  std::size_t capacity_ = 0; // blocks in all chunks
  std::size_t chunk_count_ = 0;
  detail::chunk_growth growth_;
  Upstream upstream_;
};

} // namespace MEMKIT_ABI
} // namespace memkit
