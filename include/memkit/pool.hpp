// memkit/pool.hpp: a growable pool of fixed-size blocks, carved lazily from chunks that double.
#pragma once

#include <cstddef>
#include <new>
#include <utility>

#include "config.hpp"
#include "detail/align.hpp"
#include "detail/fit_table.hpp"
#include "detail/poison.hpp"
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
  /// Blocks in the first chunk obtained on demand; 0 is served as 1. 32 is boost::pool's default
  /// first chunk (`next_size`), so the two grow in the same steps when benchmarked against each
  /// other, and a pool that serves a handful of objects takes only a small chunk.
  std::size_t first_chunk_blocks = 32;
  /// Cap on the chunk size as it doubles; raised to `first_chunk_blocks` if below it. 4096 blocks
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
/// Each chunk keeps its bookkeeping (next chunk, block count) in a two-word header at its end,
/// after the last block, so the blocks start at the chunk's start with no alignment padding even
/// for page-aligned blocks; a chunk of n blocks is `n * block_size() + 2 * sizeof(void*)` bytes
/// aligned to `block_alignment()`, and goes back to the upstream with exactly that size and
/// alignment.
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
  /// block size overflows.
  explicit pool(std::size_t block_size, std::size_t block_alignment = default_alignment,
                Upstream upstream = {})
      : pool(pool_options{block_size, block_alignment}, std::move(upstream)) {}

  /// \effects a pool configured by `options`; obtains `options.reserved_blocks` blocks, if any,
  /// as a single chunk.
  /// \throws bad_alignment, bad_size as above; out_of_memory if the reservation fails.
  explicit pool(const pool_options& options, Upstream upstream = {})
      : block_size_(checked_block_size(options)),
        block_alignment_(options.block_alignment < alignof(node) ? alignof(node)
                                                                 : options.block_alignment),
        fits_(block_size_, block_alignment_),
        first_chunk_blocks_(options.first_chunk_blocks == 0 ? 1 : options.first_chunk_blocks),
        max_chunk_blocks_(options.max_chunk_blocks < first_chunk_blocks_
                              ? first_chunk_blocks_
                              : options.max_chunk_blocks),
        next_chunk_blocks_(first_chunk_blocks_), upstream_(std::move(upstream)) {
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
      if (MEMKIT_UNLIKELY(p == nullptr || p == free_ || !fits_(bytes, alignment))) {
        deallocate_slow(p, bytes, alignment);
        return;
      }
    } else if (p == nullptr) {
      return;
    }
    this->on_deallocate(bytes);
    push(p);
  }

  /// \returns whether `p` points into a chunk's blocks (handed out, free or not yet carved).
  /// O(chunk_count()): walks the chunk list; the hot paths never call it.
  bool owns(const void* p) const noexcept {
    for (const chunk* c = head_; c != nullptr; c = c->next) {
      if (detail::in_range(p, blocks_begin(c), c->blocks * block_size_)) {
        return true;
      }
    }
    return false;
  }

  /// \returns whether at least `n` blocks can be handed out without any upstream call, obtaining
  /// one more chunk if needed (of the missing blocks, or the next growth step if larger). On
  /// failure nothing changes. O(min(n, free blocks)): free blocks are counted only if the blocks
  /// not yet carved fall short.
  bool try_reserve(std::size_t n) noexcept {
    const std::size_t uncarved = capacity_ - carved_;
    if (n <= uncarved) {
      return true;
    }
    const std::size_t available = uncarved + count_free(n - uncarved);
    if (n <= available) {
      return true;
    }
    const std::size_t missing = n - available;
    chunk* c = obtain(missing > next_chunk_blocks_ ? missing : next_chunk_blocks_, missing);
    if (c == nullptr) {
      return false;
    }
    append(c);
    return true;
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
    if constexpr (detail::poisoning) {
      for (const chunk* c = head_; c != nullptr; c = c->next) {
        detail::poison(blocks_begin(c), c->blocks * block_size_);
      }
    }
    this->on_reset();
    free_ = nullptr;
    carved_ = 0;
    cursor_ = head_;
    bump_ = head_ != nullptr ? blocks_begin(head_) : nullptr;
  }

  /// \effects returns every chunk to the upstream and starts over from first_chunk_blocks.
  /// \requires no block is still in use (they become invalid).
  void release() noexcept {
    for (chunk* c = head_; c != nullptr;) {
      chunk* next = c->next;
      const std::size_t area = c->blocks * block_size_;
      detail::unpoison_kept(blocks_begin(c), area);
      upstream_.deallocate(blocks_begin(c), area + sizeof(chunk), block_alignment_);
      this->on_upstream_deallocate(area + sizeof(chunk));
      c = next;
    }
    this->on_reset();
    free_ = nullptr;
    carved_ = 0;
    bump_ = nullptr;
    cursor_ = head_ = tail_ = nullptr;
    capacity_ = 0;
    chunk_count_ = 0;
    next_chunk_blocks_ = first_chunk_blocks_;
  }

  /// \returns the blocks in all chunks obtained, in use or not.
  std::size_t capacity() const noexcept { return capacity_; }
  /// \returns the blocks handed out and not yet returned. O(free blocks): it walks the free list,
  /// because a counter updated by every allocate and deallocate made a 32-byte alloc/free loop
  /// 15-40% slower (a read-modify-write of one more word in a loop that otherwise moves two
  /// pointers).
  std::size_t in_use() const noexcept { return carved_ - count_free(carved_); }
  /// \returns the chunks currently held from the upstream.
  std::size_t chunk_count() const noexcept { return chunk_count_; }

  /// \returns the counters of docs/statistics.md (all zero unless MEMKIT_STATISTICS is 1).
  using detail::stats_recorder<pool<Upstream>>::stats;

  Upstream& upstream() noexcept { return upstream_; }
  const Upstream& upstream() const noexcept { return upstream_; }

private:
  struct node {
    node* next;
  };
  // Lives right after a chunk's last block; blocks are multiples of block_alignment_ >=
  // alignof(node), which is enough for it.
  struct chunk {
    chunk* next; // younger chunk
    std::size_t blocks;
  };
  static_assert(alignof(chunk) <= alignof(node), "the chunk header must fit after any block");

  static std::size_t checked_block_size(const pool_options& o) {
    if (!detail::is_valid_alignment(o.block_alignment)) {
      throw bad_alignment("memkit::pool", o.block_size, o.block_alignment);
    }
    const std::size_t granule =
        o.block_alignment < alignof(node) ? alignof(node) : o.block_alignment;
    const std::size_t size =
        detail::round_up(o.block_size < sizeof(node) ? sizeof(node) : o.block_size, granule);
    if (size == 0 || size > unbounded_size) {
      throw bad_size("memkit::pool", o.block_size, o.block_alignment);
    }
    return size;
  }

  char* blocks_begin(const chunk* c) const noexcept {
    return reinterpret_cast<char*>(const_cast<chunk*>(c)) - c->blocks * block_size_;
  }

  // The fast path of allocate (Throwing) and try_allocate. allocate does not go through
  // detail::allocate_or_throw: with the pop's result and the slow path's null test merged, GCC 12
  // placed the pop behind two taken jumps, which cost ~25 % of a 32-byte alloc/free pair against
  // boost::pool (objdump and wall time of a standalone LIFO loop). Here the throwing slow path
  // never returns null, so there is nothing to merge and the pop stays inline.
  template <bool Throwing>
  void* pop_or_slow(std::size_t bytes, std::size_t alignment) noexcept(!Throwing) {
    node* n = free_;
    if (MEMKIT_LIKELY(n != nullptr && fits_(bytes, alignment))) {
      free_ = detail::load_hidden<node*>(n);
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
    if (node* n = free_; n != nullptr) {
      free_ = detail::load_hidden<node*>(n);
      detail::hand_out(n, bytes);
      return n;
    }
    // A chunk's blocks end where its header starts; with no chunk both pointers are null.
    if (bump_ == reinterpret_cast<char*>(cursor_)) {
      chunk* next = cursor_ != nullptr ? cursor_->next : head_;
      if (next == nullptr) {
        next = obtain(next_chunk_blocks_, 1);
        if (next == nullptr) {
          return nullptr;
        }
        append(next);
      }
      cursor_ = next;
      bump_ = blocks_begin(next);
    }
    void* p = bump_;
    bump_ += block_size_;
    ++carved_;
    detail::hand_out(p, bytes);
    return p;
  }

  // Obtains a chunk of `want` blocks, halving the request down to `need` while the upstream
  // refuses, so a bounded upstream is used to its last block. The next growth step doubles what
  // was obtained, up to the cap.
  chunk* obtain(std::size_t want, std::size_t need) noexcept {
    const std::size_t limit = (unbounded_size - sizeof(chunk)) / block_size_;
    for (;;) {
      if (want <= limit) {
        const std::size_t area = want * block_size_;
        if (void* p = upstream_.try_allocate(area + sizeof(chunk), block_alignment_);
            p != nullptr) {
          this->on_upstream_allocate(area + sizeof(chunk));
          capacity_ += want;
          ++chunk_count_;
          next_chunk_blocks_ = want <= max_chunk_blocks_ / 2 ? 2 * want : max_chunk_blocks_;
          detail::poison(p, area);
          return ::new (static_cast<char*>(p) + area) chunk{nullptr, want};
        }
      }
      if (want <= need) {
        return nullptr;
      }
      want = want / 2 > need ? want / 2 : need;
    }
  }

  // \returns the length of the free list, counting no further than `limit`.
  std::size_t count_free(std::size_t limit) const noexcept {
    std::size_t n = 0;
    for (const node* f = free_; f != nullptr && n < limit; f = detail::load_hidden<node*>(f)) {
      ++n;
    }
    return n;
  }

  // Free blocks stay poisoned as a whole, their link included (detail::load_hidden).
  void push(void* p) noexcept {
    detail::store_hidden(p, free_, block_size_);
    free_ = static_cast<node*>(p);
  }

  // Chunks after cursor_ in the list are never carved yet, so new ones go at the end.
  void append(chunk* c) noexcept {
    if (tail_ != nullptr) {
      tail_->next = c;
    } else {
      head_ = c;
    }
    tail_ = c;
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
    } else if (p == free_) {
      report_misuse(misuse::double_free, name(), p, bytes, alignment);
    } else {
      this->on_deallocate(bytes);
      push(p);
    }
  }

  // Hot members first: the fast paths touch only free_ and one entry of fits_; free_ and the
  // entries for alignments up to 16 lie in the object's first 64 bytes.
  node* free_ = nullptr;
  std::size_t block_size_;
  std::size_t block_alignment_;
  detail::fit_table fits_;
  char* bump_ = nullptr;     // next uncarved block of cursor_
  chunk* cursor_ = nullptr;  // the chunk being carved
  chunk* head_ = nullptr;    // oldest chunk
  chunk* tail_ = nullptr;    // youngest chunk
  std::size_t carved_ = 0;   // blocks ever carved since the last reset() or release()
  std::size_t capacity_ = 0; // blocks in all chunks
  std::size_t chunk_count_ = 0;
  std::size_t first_chunk_blocks_;
  std::size_t max_chunk_blocks_;
  std::size_t next_chunk_blocks_;
  Upstream upstream_;
};

} // namespace MEMKIT_ABI
} // namespace memkit
