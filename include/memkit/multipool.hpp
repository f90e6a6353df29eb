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
#include "detail/align.hpp"
#include "detail/bump.hpp"
#include "detail/poison.hpp"
#include "detail/size_class.hpp"
#include "error.hpp"
#include "resource.hpp"
#include "stats.hpp"
#include "upstream.hpp"

namespace memkit {
inline namespace MEMKIT_ABI {

/// Tuning of a `multipool`.
struct multipool_options {
  /// Requests up to this size are served from size classes (the bound is rounded up to its class
  /// and clamped to [16, detail::class_size_limit]); larger ones go straight to the upstream in
  /// heap mode and fail in static mode.
  std::size_t max_class_size = 4096;
  /// Bytes a class takes at a time (rounded down to a multiple of 16; a chunk always holds at least
  /// one block). 64 KiB holds 16 blocks of the largest default class, so the end-of-chunk header
  /// and the tail cost at most one block in 16, and stays below glibc's 128 KiB mmap threshold
  /// (mallopt(3), M_MMAP_THRESHOLD) so chunks come from the heap, not from one mmap call each.
  std::size_t chunk_size = std::size_t{64} * 1024;
};

namespace detail {

/// The blocks a multipool passed straight to its upstream, remembered so that `owns` stays exact,
/// `release` returns them and a mismatched `deallocate` is caught. Open addressing with linear
/// probing keyed by address; the table itself comes from the same upstream, and only once a large
/// request is made.
class large_block_table {
public:
  struct entry {
    void* block;
    std::size_t bytes;
    std::size_t alignment;
  };

  large_block_table() noexcept = default;
  large_block_table(const large_block_table&) = delete;
  large_block_table& operator=(const large_block_table&) = delete;

  std::size_t count() const noexcept { return count_; }
  std::size_t bytes() const noexcept { return bytes_; }

  /// \returns the entry of the block starting at `p`, or null.
  entry* find(const void* p) noexcept {
    if (count_ == 0) {
      return nullptr;
    }
    for (std::size_t i = home(p);; i = (i + 1) & (capacity_ - 1)) {
      if (slots_[i].block == p) {
        return &slots_[i];
      }
      if (slots_[i].block == nullptr) {
        return nullptr;
      }
    }
  }

  /// \returns whether `p` points into one of the blocks. O(capacity).
  bool covers(const void* p) const noexcept {
    for (std::size_t i = 0; i < capacity_; ++i) {
      const entry& e = slots_[i];
      if (e.block != nullptr && in_range(p, e.block, std::max<std::size_t>(e.bytes, 1))) {
        return true;
      }
    }
    return false;
  }

  /// Records a block; \returns false if the table could not grow (nothing recorded then).
  template <class Upstream>
  bool insert(Upstream& upstream, const entry& e) noexcept {
    // At most half full keeps linear probes short (Knuth, TAOCP 6.4: ~2.5 probes per miss).
    if ((count_ + 1) * 2 > capacity_ && !grow(upstream)) {
      return false;
    }
    place(e);
    ++count_;
    bytes_ += e.bytes;
    return true;
  }

  /// Forgets `*e`, shifting later entries back so no probe sequence is broken (Knuth's
  /// Algorithm R), which keeps the table free of tombstones.
  void erase(entry* e) noexcept {
    --count_;
    bytes_ -= e->bytes;
    const std::size_t mask = capacity_ - 1;
    auto hole = static_cast<std::size_t>(e - slots_);
    for (std::size_t j = (hole + 1) & mask; slots_[j].block != nullptr; j = (j + 1) & mask) {
      // slots_[j] may fill the hole only if the hole lies on its probe path from home to j.
      if (((j - home(slots_[j].block)) & mask) >= ((j - hole) & mask)) {
        slots_[hole] = slots_[j];
        hole = j;
      }
    }
    slots_[hole].block = nullptr;
  }

  /// Returns every recorded block to `upstream`; keeps the table.
  template <class Upstream>
  void clear(Upstream& upstream) noexcept {
    for (std::size_t i = 0; i < capacity_ && count_ != 0; ++i) {
      if (entry& e = slots_[i]; e.block != nullptr) {
        upstream.deallocate(e.block, e.bytes, e.alignment);
        e.block = nullptr;
        --count_;
      }
    }
    bytes_ = 0;
  }

  /// Returns every recorded block and the table to `upstream`.
  template <class Upstream>
  void release(Upstream& upstream) noexcept {
    clear(upstream);
    if (slots_ != nullptr) {
      upstream.deallocate(slots_, capacity_ * sizeof(entry), alignof(entry));
    }
    slots_ = nullptr;
    capacity_ = 0;
  }

private:
  static constexpr std::size_t initial_capacity = 16;

  std::size_t home(const void* p) const noexcept {
    // Fibonacci hashing (Knuth, TAOCP 6.4): the multiply spreads aligned addresses, whose low bits
    // are all zero, over the high bits taken as the slot.
    const std::uint64_t h = static_cast<std::uint64_t>(address(p)) * 0x9E3779B97F4A7C15U;
    return static_cast<std::size_t>(h >> 32) & (capacity_ - 1);
  }

  void place(const entry& e) noexcept {
    std::size_t i = home(e.block);
    while (slots_[i].block != nullptr) {
      i = (i + 1) & (capacity_ - 1);
    }
    slots_[i] = e;
  }

  template <class Upstream>
  bool grow(Upstream& upstream) noexcept {
    const std::size_t capacity = capacity_ == 0 ? initial_capacity : capacity_ * 2;
    if (capacity > unbounded_size / sizeof(entry)) {
      return false;
    }
    void* memory = upstream.try_allocate(capacity * sizeof(entry), alignof(entry));
    if (memory == nullptr) {
      return false;
    }
    entry* const old = slots_;
    const std::size_t old_capacity = capacity_;
    slots_ = static_cast<entry*>(memory);
    capacity_ = capacity;
    std::fill_n(slots_, capacity_, entry{nullptr, 0, 0});
    for (std::size_t i = 0; i < old_capacity; ++i) {
      if (old[i].block != nullptr) {
        place(old[i]);
      }
    }
    if (old != nullptr) {
      upstream.deallocate(old, old_capacity * sizeof(entry), alignof(entry));
    }
    return true;
  }

  entry* slots_ = nullptr;
  std::size_t capacity_ = 0; ///< a power of two, or 0 before the first large block
  std::size_t count_ = 0;
  std::size_t bytes_ = 0;
};

} // namespace detail

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
///   large requests and exhaustion fail.
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
  explicit multipool(Upstream upstream = {}, multipool_options options = {}) noexcept
      : multipool(options, true, nullptr, std::numeric_limits<std::size_t>::max(),
                  std::move(upstream)) {}

  /// Static mode: every block comes from [storage, storage + bytes); no upstream is ever used.
  /// Chunks are carved from the buffer one at a time, when a class first needs one.
  /// \requires the buffer stays valid and unused by others while this lives.
  multipool(void* storage, std::size_t bytes, multipool_options options = {}) noexcept
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

  /// \returns page_size, or the upstream's larger bound in heap mode (such requests pass through).
  std::size_t max_alignment() const noexcept {
    return heap_ ? std::max(page_size, upstream_.max_alignment()) : page_size;
  }

  /// \returns the largest request served from a size class: a class size.
  std::size_t max_class_size() const noexcept { return std::size_t{last_class_byte_} + 1; }

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
        for (chunk_header* h = classes_[i].chunks; h != nullptr;) {
          chunk_header* const next = h->next;
          detail::unpoison_kept(h->base,
                                static_cast<std::size_t>(reinterpret_cast<char*>(h) - h->base));
          this->on_upstream_deallocate(h->bytes); // before the header goes with the chunk
          upstream_.deallocate(h->base, h->bytes, h->alignment);
          h = next;
        }
      }
      auto upstream = counted_upstream();
      large_.release(upstream);
    } else {
      detail::poison(storage_, static_cast<std::size_t>(cursor_ - storage_));
    }
    this->on_reset();
    bins_.fill(bin{});
    classes_.fill(class_state{});
    cursor_ = storage_;
  }

  /// \effects makes every block free. Heap mode keeps the chunks (each class carves its own again)
  /// and returns large blocks to the upstream; static mode makes the whole buffer available.
  void reset() noexcept {
    if constexpr (detail::poisoning) {
      if (!heap_) {
        detail::poison(storage_, static_cast<std::size_t>(cursor_ - storage_));
      }
      for (std::size_t i = 0; i < class_count_; ++i) {
        for (const chunk_header* h = classes_[i].chunks; h != nullptr; h = h->next) {
          detail::poison(h->base,
                         static_cast<std::size_t>(reinterpret_cast<const char*>(h) - h->base));
        }
      }
    }
    bins_.fill(bin{});
    for (std::size_t i = 0; i < class_count_; ++i) {
      class_state& k = classes_[i];
      k = class_state{nullptr, nullptr, k.chunks, k.chunks};
    }
    auto upstream = counted_upstream();
    large_.clear(upstream);
    this->on_reset();
    cursor_ = storage_;
  }

  /// \returns the number of blocks allocated and not yet returned.
  std::size_t in_use() const noexcept {
    std::size_t n = large_.count();
    for (std::size_t i = 0; i < class_count_; ++i) {
      n += bins_[i].in_use;
    }
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
    void* free = nullptr;
    std::size_t in_use = 0;
  };

  /// Placed at the end of each heap-mode chunk, where the space after the last whole block
  /// usually lies, so blocks start at the chunk's aligned base.
  struct chunk_header {
    chunk_header* next;
    char* base;
    std::size_t bytes;
    std::size_t alignment;
  };

  /// Where a class carves its next block, and (heap mode) its chunks.
  struct class_state {
    char* cursor = nullptr;
    char* end = nullptr;
    chunk_header* chunks = nullptr; ///< every chunk of the class, newest first
    chunk_header* spare = nullptr;  ///< chunks not carved since the last reset()
  };

  multipool(multipool_options options, bool heap, char* storage, std::size_t span,
            Upstream&& upstream) noexcept
      : last_class_byte_(static_cast<std::uint16_t>(
            detail::class_size(detail::class_index(
                std::clamp<std::size_t>(options.max_class_size, 1, detail::class_size_limit))) -
            1)),
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

  // Free blocks stay poisoned as a whole, their link included (detail::load_hidden).
  void* pop(std::size_t i, std::size_t bytes) noexcept {
    bin& b = bins_[i];
    void* const p = b.free;
    if (MEMKIT_LIKELY(p != nullptr)) {
      b.free = detail::load_hidden<void*>(p);
      ++b.in_use;
      detail::hand_out(p, bytes);
      return p;
    }
    return carve(i, bytes);
  }

  void push(std::size_t i, void* p, std::size_t bytes, std::size_t alignment) noexcept {
    bin& b = bins_[i];
    if (MEMKIT_UNLIKELY(p == nullptr || (deallocate_checks &&
                                         (p == b.free || !detail::in_range(p, storage_, span_))))) {
      reject(p, bytes, alignment);
      return;
    }
    this->on_deallocate(bytes);
    detail::store_hidden(p, b.free, detail::class_size(i));
    b.free = p;
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

  /// Slow path of `pop`: the next block of the class's current chunk, or of a new one.
  MEMKIT_NOINLINE void* carve(std::size_t i, std::size_t bytes) noexcept {
    const std::size_t size = detail::class_size(i);
    class_state& k = classes_[i];
    if (static_cast<std::size_t>(k.end - k.cursor) < size && !next_chunk(k, size)) {
      return nullptr;
    }
    void* const p = k.cursor;
    k.cursor += size;
    ++bins_[i].in_use;
    detail::hand_out(p, bytes);
    return p;
  }

  /// Points `k` at a fresh chunk for blocks of `size` bytes. \returns false when none is left.
  bool next_chunk(class_state& k, std::size_t size) noexcept {
    const std::size_t alignment = std::min(detail::lowest_bit(size), page_size);
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
      k.cursor = base;
      k.end = cursor_;
      return true;
    }
    chunk_header* h = k.spare;
    if (h != nullptr) {
      k.spare = h->next;
    } else {
      // size and chunk_size_ are multiples of 16 and the base is 16-aligned, so is the header.
      const std::size_t bytes = std::max(chunk_size_, size + sizeof(chunk_header));
      auto* const base = static_cast<char*>(upstream_.try_allocate(bytes, alignment));
      if (base == nullptr) {
        return false;
      }
      this->on_upstream_allocate(bytes);
      h = ::new (base + bytes - sizeof(chunk_header))
          chunk_header{k.chunks, base, bytes, alignment};
      k.chunks = h;
    }
    k.cursor = h->base;
    k.end = reinterpret_cast<char*>(h);
    detail::poison(k.cursor, static_cast<std::size_t>(k.end - k.cursor));
    return true;
  }

  /// Slow path of `try_allocate`: zero size, over-alignment, invalid alignment, large requests.
  MEMKIT_NOINLINE void* allocate_unusual(std::size_t bytes, std::size_t alignment) noexcept {
    if (!detail::is_valid_alignment(alignment)) {
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
    if (!detail::is_valid_alignment(alignment)) {
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
      for (const chunk_header* h = classes_[i].chunks; h != nullptr; h = h->next) {
        if (detail::in_range(
                p, h->base, static_cast<std::size_t>(reinterpret_cast<const char*>(h) - h->base))) {
          return true;
        }
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
  detail::large_block_table large_;
  Upstream upstream_;
};

} // namespace MEMKIT_ABI
} // namespace memkit
