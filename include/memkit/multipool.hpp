// SPDX-License-Identifier: BSL-1.0
// memkit/multipool.hpp: any size from per-size-class pools, over an upstream or a caller buffer.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <new>
#include <utility>

#include "config.hpp"
#include "detail/address_table.hpp"
#include "detail/base/align.hpp"
#include "detail/base/assert.hpp"
#include "detail/base/poison.hpp"
#include "detail/bump.hpp"
#include "detail/carver.hpp"
#include "detail/chunk_list.hpp"
#include "detail/free_list.hpp"
#include "detail/size_class.hpp"
#include "error.hpp"
#include "resource.hpp"
#include "stats.hpp"
#include "upstream.hpp"

namespace memkit {
inline namespace MEMKIT_ABI {

/// Tuning of a `multipool`. Zero is an error in either field (docs/concepts.md, "Constructor
/// arguments").
struct multipool_options {
  /// Requests up to this size are served from size classes (the bound is rounded up to its class,
  /// and lowered to detail::class_size_limit if above it); larger ones go straight to the upstream
  /// in heap mode and fail in static mode.
  std::size_t max_class_size = 4096;
  /// Bytes a class takes at a time, its header included (rounded down to a multiple of 16; a chunk
  /// always holds at least one block). 64 KiB holds 16 blocks of the largest default class, so the
  /// end-of-chunk header and the tail cost at most one block in 16, and stays below glibc's 128 KiB
  /// mmap threshold (mallopt(3), M_MMAP_THRESHOLD) so chunks come from the heap, not from one mmap
  /// call each.
  std::size_t chunk_size = std::size_t{64} * 1024;
};

/// Serves any size from per-size-class pools (docs/concepts.md, "Size class"; the classes are in
/// detail/size_class.hpp). Each class recycles its blocks through an intrusive free list and
/// carves new ones lazily from its current chunk, so a steady request mix makes no upstream calls.
///
/// Two modes, chosen by the constructor:
/// - heap mode: each class takes chunks from `Upstream` when it runs dry; they go back on
///   `release()` or destruction. Requests above `max_class_size()` (or aligned beyond a page) go
///   straight to the upstream with the caller's size and alignment, and are remembered so that
///   `owns` is exact and `release` returns them too.
/// - static mode: every chunk is carved from a caller buffer and nothing else is ever touched:
///   large requests and exhaustion fail. An alignment is honoured for every size up to
///   max_class_size() only if it divides it, so max_alignment() is the largest power of two that
///   does (at most `page_size`): 1024 for a class limit of 1024, 256 for 1280.
///
/// A request for `n` bytes with alignment A > 16 is served from the class of round_up(max(n, A),
/// A). Chunks of a class of size c are aligned to lowest_bit(c) (at most `page_size`) and blocks
/// sit at multiples of c from the chunk start, so every block is aligned to lowest_bit(c), and that
/// class size is always a multiple of A. Not thread-safe. The object holds the state of every
/// possible class (about 2 KiB) so that constructing it allocates nothing.
template <class Upstream = malloc_resource>
class multipool : private detail::stats_recorder<multipool<Upstream>> {
  static_assert(is_resource_v<Upstream>, "multipool<U>: U must implement the resource interface");
  static_assert(detail::class_size_limit - 1 <= UINT16_MAX, "see last_class_byte_");

public:
  /// Heap mode. \effects allocates nothing.
  /// \throws bad_size if an option is zero (docs/concepts.md, "Constructor arguments").
  explicit multipool(Upstream upstream = {}, multipool_options options = {})
      : multipool(options, true, nullptr, std::numeric_limits<std::size_t>::max(),
                  std::move(upstream)) {}

  /// Static mode: every block comes from [storage, storage + bytes); no upstream is ever used.
  /// Chunks are carved from the buffer one at a time, when a class first needs one.
  /// \throws bad_size if an option is zero.
  /// \requires the buffer stays valid and unused by others while this lives.
  multipool(void* storage, std::size_t bytes, multipool_options options = {})
      : multipool(options, false, static_cast<char*>(storage), bytes, Upstream{}) {}

  multipool(const multipool&) = delete;
  multipool& operator=(const multipool&) = delete;

  /// \effects release(); a caller buffer goes back unpoisoned.
  ~multipool() {
    release();
    if constexpr (detail::poisoning) {
      if (!heap_) {
        detail::unpoison_kept(storage_, span_);
      }
    }
  }

  const char* name() const noexcept { return "memkit::multipool"; }

  /// \returns the upstream's max_size() in heap mode, max_class_size() in static mode.
  std::size_t max_size() const noexcept { return heap_ ? upstream_.max_size() : max_class_size(); }

  /// \returns heap mode: page_size, or the upstream's larger bound (such requests pass through);
  /// static mode: the largest power of two dividing max_class_size(), at most page_size, so that
  /// every size up to max_size() is served at every alignment up to it.
  std::size_t max_alignment() const noexcept {
    return heap_ ? std::max(page_size, upstream_.max_alignment()) : static_alignment_limit();
  }

  /// \returns the largest request served from a size class: a class size.
  std::size_t max_class_size() const noexcept { return std::size_t{last_class_byte_} + 1; }

  /// \returns static mode: the bytes of the buffer no class has taken a chunk from yet; heap mode:
  /// 0 (classes take their chunks from the upstream).
  std::size_t remaining() const noexcept {
    return heap_ ? 0 : static_cast<std::size_t>(storage_ + span_ - cursor_);
  }

  /// \returns the number of size classes in use.
  std::size_t class_count() const noexcept { return class_count_; }

  /// \returns a block of `bytes` (1 if 0) aligned to `alignment`.
  /// \throws bad_alignment, bad_size or out_of_memory (docs/concepts.md, "Errors").
  void* allocate(std::size_t bytes, std::size_t alignment = default_alignment) {
    return detail::allocate_or_throw(*this, bytes, alignment);
  }

  /// \returns a block of `bytes` (1 if 0) aligned to `alignment`, or null.
  void* try_allocate(std::size_t bytes, std::size_t alignment = default_alignment) noexcept {
    if (MEMKIT_LIKELY(is_plain(bytes, alignment))) {
      return this->record(pop(detail::class_index(bytes), bytes), bytes);
    }
    return this->record(allocate_unusual(bytes, alignment), bytes);
  }

  /// Returns a block to its class's free list (or to the upstream if it was passed through).
  /// Reported and ignored: a pointer outside the buffer (static mode) or an unknown large block
  /// (foreign_pointer), the block at the head of its class's free list (double_free), a large
  /// block with another size or alignment (size_mismatch, alignment_mismatch).
  /// \requires `bytes` and `alignment` are those `p` was allocated with.
  void deallocate(void* p, std::size_t bytes, std::size_t alignment = default_alignment) noexcept {
    if (MEMKIT_LIKELY(is_plain(bytes, alignment))) {
      push(detail::class_index(bytes), p, bytes, alignment);
    } else {
      deallocate_unusual(p, bytes, alignment);
    }
  }

  /// \returns whether `p` points into memory this pool manages. Static mode: the part of the buffer
  /// carved so far, O(1). Heap mode: exact, O(chunks + large blocks).
  bool owns(const void* p) const noexcept {
    if (!heap_) {
      return detail::in_range(p, storage_, static_cast<std::size_t>(cursor_ - storage_));
    }
    return in_chunk(p) || large_.covers(p);
  }

  /// \effects heap mode: returns every chunk and large block to the upstream; static mode: reset().
  /// Blocks still in use become invalid.
  void release() noexcept {
    if (heap_) {
      for (std::size_t i = 0; i < class_count_; ++i) {
        classes_[i].chunks.release(
            upstream_, chunk_alignment(detail::class_size(i)),
            [this](std::size_t bytes) { this->on_upstream_deallocate(bytes); });
      }
      return_large_blocks();
      auto upstream = counted_upstream();
      large_.release(upstream);
    } else {
      detail::poison(storage_, static_cast<std::size_t>(cursor_ - storage_));
    }
    this->on_reset();
    forget_blocks();
  }

  /// \effects makes every block free. Heap mode keeps the chunks (each class carves its own again)
  /// and returns large blocks to the upstream; static mode makes the whole buffer available.
  void reset() noexcept {
    if (!heap_) {
      detail::poison(storage_, static_cast<std::size_t>(cursor_ - storage_));
    }
    for (std::size_t i = 0; i < class_count_; ++i) {
      classes_[i].chunks.keep_all();
    }
    return_large_blocks();
    this->on_reset();
    forget_blocks();
  }

  /// \returns the number of blocks allocated and not yet returned.
  std::size_t in_use() const noexcept {
    std::size_t n = large_.count();
    for (std::size_t i = 0; i < class_count_; ++i) {
#if MEMKIT_DEBUG >= 2
      // Every block a class carved is either live or on its free list.
      MEMKIT_ASSERT_EXPENSIVE(bins_[i].free.count(classes_[i].carved + 1) + bins_[i].in_use ==
                              classes_[i].carved);
#endif
      n += bins_[i].in_use;
    }
    MEMKIT_ASSERT_EXPENSIVE(large_.well_formed());
    return n;
  }

  /// \returns the bytes those blocks occupy: their class sizes, plus large blocks' exact sizes.
  std::size_t bytes_in_use() const noexcept {
    std::size_t n = large_.bytes();
    for (std::size_t i = 0; i < class_count_; ++i) {
      n += bins_[i].in_use * detail::class_size(i);
    }
    return n;
  }

  /// \returns the counters of docs/statistics.md (all zero unless MEMKIT_STATISTICS is 1).
  using detail::stats_recorder<multipool<Upstream>>::stats;

private:
  /// Free-list head and live count of one class: the only state the fast paths touch.
  struct bin {
    detail::free_list free;
    std::size_t in_use = 0;
  };

  /// Where a class carves its next block, and (heap mode) its chunks, whose headers sit at their
  /// ends, where the space after the last whole block usually lies, so blocks start at the
  /// chunk's aligned base (detail/chunk_list.hpp).
  struct class_state {
    detail::carver carver;
    detail::chunk_list chunks;
#if MEMKIT_DEBUG >= 2
    std::size_t carved = 0; ///< blocks carved since the last reset(), for MEMKIT_ASSERT_INTERNAL
#endif
  };

  multipool(multipool_options options, bool heap, char* storage, std::size_t span,
            Upstream&& upstream)
      : last_class_byte_(static_cast<std::uint16_t>(
            detail::class_size(detail::class_index(checked_class_limit(options))) - 1)),
        storage_(storage), span_(span), cursor_(storage),
        class_count_(detail::class_index(max_class_size()) + 1),
        chunk_size_(options.chunk_size & ~(detail::class_granularity - 1)), heap_(heap),
        upstream_(std::move(upstream)) {
    if constexpr (detail::poisoning) {
      if (!heap_) {
        detail::poison(storage_, span_);
      }
    }
  }

  /// \returns the class limit the options ask for, lowered to class_size_limit.
  /// \throws bad_size if an option is zero.
  static std::size_t checked_class_limit(const multipool_options& o) {
    if (MEMKIT_UNLIKELY(o.max_class_size == 0 || o.chunk_size == 0)) {
      detail::throw_bad_geometry("memkit::multipool", o.max_class_size == 0 ? 0 : o.chunk_size,
                                 default_alignment);
    }
    return std::min(o.max_class_size, detail::class_size_limit);
  }

  /// Static mode's max_alignment(): the largest power of two dividing max_class_size() (class sizes
  /// are multiples of 16), at most page_size.
  std::size_t static_alignment_limit() const noexcept {
    return std::min(detail::lowest_bit(max_class_size()), page_size);
  }

  /// The alignment of the chunks of the class of `size`-byte blocks: every block of it, at a
  /// multiple of `size` from the chunk's start, has it.
  static std::size_t chunk_alignment(std::size_t size) noexcept {
    return std::min(detail::lowest_bit(size), page_size);
  }

  /// Every block free, every class carving afresh (heap mode: from its spare chunks).
  void forget_blocks() noexcept {
    bins_.fill(bin{});
    for (std::size_t i = 0; i < class_count_; ++i) {
      classes_[i].carver = {};
#if MEMKIT_DEBUG >= 2
      classes_[i].carved = 0;
#endif
    }
    cursor_ = storage_;
  }

  /// Returns every large block to the upstream.
  void return_large_blocks() noexcept {
    auto upstream = counted_upstream();
    large_.clear([&upstream](const detail::address_table::entry& e) {
      upstream.deallocate(e.block, e.bytes, e.alignment);
    });
  }

  /// Sizes and alignments the fast paths serve: 1..max_class_size() bytes, alignment a power of
  /// two up to the class granularity (every block has it).
  bool is_plain(std::size_t bytes, std::size_t alignment) const noexcept {
    return bytes - 1 <= last_class_byte_ && alignment - 1 < detail::class_granularity &&
           (alignment & (alignment - 1)) == 0;
  }

  /// \returns the class serving (bytes, alignment), or class_count_ when none does (too large, or
  /// aligned beyond what a chunk guarantees). Allocation and deallocation agree through this.
  /// \requires `alignment` is a power of two.
  std::size_t class_for(std::size_t bytes, std::size_t alignment) const noexcept {
    std::size_t n = bytes == 0 ? 1 : bytes;
    if (alignment > detail::class_granularity) {
      if (alignment > page_size) {
        return class_count_;
      }
      n = detail::round_up(n, alignment); // at least `alignment`, as n >= 1
    }
    return n - 1 <= last_class_byte_ ? detail::class_index(n) : class_count_;
  }

  void* pop(std::size_t i, std::size_t bytes) noexcept {
    bin& b = bins_[i];
    if (MEMKIT_LIKELY(!b.free.empty())) {
      void* const p = b.free.pop();
      ++b.in_use;
      detail::hand_out(p, bytes);
      return p;
    }
    return carve(i, bytes);
  }

  void push(std::size_t i, void* p, std::size_t bytes, std::size_t alignment) noexcept {
    bin& b = bins_[i];
    if (MEMKIT_UNLIKELY(
            p == nullptr ||
            (deallocate_checks && (p == b.free.head() || !detail::in_range(p, storage_, span_))))) {
      reject(p, bytes, alignment);
      return;
    }
    this->on_deallocate(bytes);
    b.free.push(p, detail::class_size(i));
    --b.in_use;
  }

  /// The misuses `push` screens out; null is not one.
  MEMKIT_NOINLINE MEMKIT_COLD void reject(void* p, std::size_t bytes,
                                          std::size_t alignment) const noexcept {
    if (p != nullptr) {
      report_misuse(detail::in_range(p, storage_, span_) ? misuse::double_free
                                                         : misuse::foreign_pointer,
                    name(), p, bytes, alignment);
    }
  }

  /// Slow path of `pop`: the class's free list is empty, so every block carved is in use. Carves
  /// the next block of the class's current chunk, or of a new one.
  MEMKIT_NOINLINE void* carve(std::size_t i, std::size_t bytes) noexcept {
    const std::size_t size = detail::class_size(i);
    class_state& k = classes_[i];
#if MEMKIT_DEBUG >= 2
    MEMKIT_ASSERT_INTERNAL(bins_[i].in_use == k.carved);
#endif
    if (!k.carver.can_carve(size) && !next_chunk(k, size)) {
      return nullptr;
    }
    void* const p = k.carver.take(size);
    ++bins_[i].in_use;
#if MEMKIT_DEBUG >= 2
    ++k.carved;
#endif
    detail::hand_out(p, bytes);
    return p;
  }

  /// Points `k` at a fresh chunk for blocks of `size` bytes. \returns false when none is left.
  bool next_chunk(class_state& k, std::size_t size) noexcept {
    const std::size_t alignment = chunk_alignment(size);
    if (!heap_) {
      char* const end = storage_ + span_;
      char* base =
          static_cast<char*>(detail::bump(cursor_, end, std::max(chunk_size_, size), alignment));
      if (base == nullptr) {
        // The last chunk takes whatever is left if a block fits, so a buffer smaller than
        // chunk_size still serves and ends with a clean exhaustion.
        base = static_cast<char*>(detail::bump(cursor_, end, size, alignment));
        if (base == nullptr) {
          return false;
        }
        cursor_ = end;
      }
      k.carver = detail::carver(base, cursor_);
      return true;
    }
    detail::chunk* c = k.chunks.take_spare();
    if (c == nullptr) {
      // size and chunk_size_ are multiples of 16 and the base is 16-aligned, so is the header.
      const std::size_t bytes = std::max(chunk_size_, size + sizeof(detail::chunk));
      if (k.chunks.obtain(upstream_, bytes - sizeof(detail::chunk), alignment) == nullptr) {
        return false;
      }
      this->on_upstream_allocate(bytes);
      c = k.chunks.take_spare();
    }
    k.carver = detail::carver(c->begin(), c->blocks_end());
    return true;
  }

  /// Slow path of `try_allocate`: zero size, over-alignment, invalid alignment, large requests.
  MEMKIT_NOINLINE void* allocate_unusual(std::size_t bytes, std::size_t alignment) noexcept {
    if (!detail::is_valid_alignment(alignment) ||
        (!heap_ && alignment > static_alignment_limit())) {
      return nullptr;
    }
    if (const std::size_t i = class_for(bytes, alignment); i < class_count_) {
      return pop(i, bytes);
    }
    if (!heap_) {
      return nullptr;
    }
    auto upstream = counted_upstream();
    void* const p = upstream.try_allocate(bytes, alignment);
    if (p != nullptr && !large_.insert(upstream, {p, bytes, alignment})) {
      upstream.deallocate(p, bytes, alignment);
      return nullptr;
    }
    return p;
  }

  /// Slow path of `deallocate`, mirroring `allocate_unusual`.
  MEMKIT_NOINLINE void deallocate_unusual(void* p, std::size_t bytes,
                                          std::size_t alignment) noexcept {
    if (p == nullptr) {
      return;
    }
    if (!detail::is_valid_alignment(alignment) ||
        (!heap_ && alignment > static_alignment_limit())) {
      report_misuse(misuse::alignment_mismatch, name(), p, bytes, alignment);
      return;
    }
    if (const std::size_t i = class_for(bytes, alignment); i < class_count_) {
      push(i, p, bytes, alignment);
      return;
    }
    auto* const e = heap_ ? large_.find(p) : nullptr;
    if (e == nullptr) {
      // Only class blocks live in the chunks or the buffer, so one of those was given a wrong size.
      const bool ours = heap_ ? in_chunk(p) : detail::in_range(p, storage_, span_);
      report_misuse(ours ? misuse::size_mismatch : misuse::foreign_pointer, name(), p, bytes,
                    alignment);
    } else if (e->bytes != bytes) {
      report_misuse(misuse::size_mismatch, name(), p, bytes, alignment);
    } else if (e->alignment != alignment) {
      report_misuse(misuse::alignment_mismatch, name(), p, bytes, alignment);
    } else {
      large_.erase(e);
      this->on_deallocate(bytes);
      counted_upstream().deallocate(p, bytes, alignment);
    }
  }

  /// The upstream, with every call counted in the statistics.
  detail::recorded_upstream<Upstream, detail::stats_recorder<multipool>>
  counted_upstream() noexcept {
    return {upstream_, *this};
  }

  /// Whether `p` lies in a heap-mode chunk. O(chunks).
  bool in_chunk(const void* p) const noexcept {
    for (std::size_t i = 0; i < class_count_; ++i) {
      if (classes_[i].chunks.contains(p)) {
        return true;
      }
    }
    return false;
  }

  // max_class_size() - 1, in 16 bits so the compiler sees that no class index computed on the
  // fast paths reaches class_count_limit (GCC's -Warray-bounds flags try_allocate(SIZE_MAX)
  // otherwise). Costs nothing: the compare loads it zero-extended.
  const std::uint16_t last_class_byte_;
  // The window deallocate accepts pointers from: the buffer in static mode, everything in heap
  // mode, so one range check screens foreign pointers without testing the mode.
  char* const storage_;
  const std::size_t span_;
  std::array<bin, detail::class_count_limit> bins_{};
  char* cursor_; ///< static mode: where the next chunk is carved from the buffer
  const std::size_t class_count_;
  const std::size_t chunk_size_;
  const bool heap_;
  std::array<class_state, detail::class_count_limit> classes_{};
  detail::address_table large_;
  Upstream upstream_;
};

} // namespace MEMKIT_ABI
} // namespace memkit
