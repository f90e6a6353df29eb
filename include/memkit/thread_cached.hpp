// SPDX-License-Identifier: BSL-1.0
// memkit/thread_cached.hpp: thread-caching resources (docs/threads.md): a per-thread heap in
// front of a shared depot of chunks, for any size (thread_cached) or one block size
// (thread_cached_pool).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "config.hpp"
#include "detail/base/align.hpp"
#include "detail/size_class.hpp"
#include "detail/thread/engine.hpp"
#include "error.hpp"
#include "resource.hpp"
#include "stats.hpp"
#include "upstream.hpp"

namespace memkit {
inline namespace MEMKIT_ABI {

/// Tuning of the thread-caching resources (docs/threads.md).
struct thread_cached_options {
  /// Any-size form: requests up to this size come from size classes (rounded up to a class and
  /// clamped to [16, 8192]); larger ones get a region of their own from the upstream.
  std::size_t max_class_size = 4096;
  /// Wholly free chunks a thread's heap keeps for reuse before it hands more to the shared depot;
  /// the bound on what a cache holds beyond the chunks its live blocks are in. 4 chunks, 256 KiB,
  /// let a thread that frees and reallocates a few chunks' worth in a loop stay off the lock.
  std::size_t cached_chunks = 4;
  /// Blocks a thread collects for one other heap before posting them with one atomic operation.
  /// A contended CAS is a cache-line transfer between cores; spread over 64 blocks it is a small
  /// part of a remote free (`memkit-bench --workloads mt-producer-consumer-2t`).
  std::size_t batch_blocks = 64;
};

namespace detail {

/// What both thread-caching resources offer alike, over their engine.
template <class Upstream, std::size_t Bins>
class thread_cached_base {
protected:
  using engine = thread::engine<Upstream, Bins>;

  thread_cached_base(const char* name, const std::uint32_t* class_sizes, std::size_t class_count,
                     const thread_cached_options& options, Upstream&& upstream) noexcept
      : engine_(name, class_sizes, class_count, options.cached_chunks, options.batch_blocks,
                std::move(upstream)) {}

public:
  /// Any thread may call it (docs/threads.md, "Memory model"): synchronized<> adds no lock.
  static constexpr bool thread_safe = true;

  thread_cached_base(const thread_cached_base&) = delete;
  thread_cached_base& operator=(const thread_cached_base&) = delete;

  const char* name() const noexcept { return engine_.name(); }

  /// Returns `p` without its size, as `free(p)` does: the chunk header has it.
  /// \requires `p` is a live block of this resource (checked at MEMKIT_DEBUG >= 1).
  void deallocate(void* p) noexcept {
    if (p == nullptr) {
      return;
    }
    if constexpr (deallocate_checks) {
      if (!engine_.check_free(p, 0, 0, engine::any_class)) {
        return;
      }
    }
    engine_.free(p, engine::usable_size(p));
  }

  /// \returns the bytes usable at `p`, at least the size it was allocated with: its class size,
  /// or a large block's size. O(1). \requires `p` is a live block of this resource.
  std::size_t usable_size(const void* p) const noexcept { return engine::usable_size(p); }

  /// \returns whether `p` points into memory this resource manages. O(1), any thread.
  bool owns(const void* p) const noexcept { return engine_.owns(p); }

  /// \effects returns every chunk, large block and heap to the upstream; threads that used the
  /// resource take fresh heaps if they use it again. \requires no other thread uses it meanwhile.
  void release() noexcept { engine_.release(); }

  /// \returns the per-thread heaps made so far (reused after their threads exit).
  std::size_t heap_count() const noexcept { return engine_.heap_count(); }

  /// \returns the counters of docs/statistics.md (all zero unless MEMKIT_STATISTICS is 1);
  /// `fallbacks` counts allocations served without a thread cache (the shared heap).
  statistics stats() const noexcept { return engine_.stats(); }

  Upstream& upstream() noexcept { return engine_.upstream(); }

protected:
  ~thread_cached_base() = default;

  engine engine_;
};

} // namespace detail

/// Serves any size from per-thread heaps of size classes (docs/concepts.md; the classes are
/// multipool's, detail/size_class.hpp), so the common allocate and deallocate touch only the
/// calling thread's state; the engine of the global replacement. How it works, what it costs and
/// when to pick it: docs/threads.md.
///
/// - Ownership: every block lies in a 64 KiB chunk aligned to its size whose header names the
///   owning heap and the class, so `deallocate(p)` needs no size and finds the owner in O(1).
///   Requests above `max_class_size()` get a region of their own (a chunk header, then the block),
///   returned to the upstream when freed.
/// - Remote frees: a block freed on another thread is kept by that thread's heap if it allocates
///   the block's class (up to 64 KiB a class, handed out before new memory is carved, and sent home
///   every 64 times the thread runs out of a class if none was handed out meanwhile), or collected
///   with others for the same owner and posted as one chain with one CAS; the owner takes its
///   whole queue with one exchange when its free list runs dry (detail/thread/remote.hpp).
/// - Bounds: a heap keeps at most `cached_chunks` wholly free chunks; the rest go to a depot,
///   shared under a lock, that every heap takes chunks from before the upstream is asked.
/// - Thread exit: the thread's pending batches are posted, its free chunks go to the depot, and
///   its heap, with the chunks still holding live blocks and its queue, waits for the next new
///   thread to adopt it; until then other threads take what was freed to it before they ask the
///   upstream. Heaps live as long as the resource, so `heap_count()` stays at the peak number of
///   threads that used it at once.
///
/// Memory model: `allocate`, `try_allocate`, `deallocate`, `owns`, `usable_size` and `stats` may
/// be called from any threads at once, on any blocks (a block is freed by one thread, once, after
/// it was handed to that thread by any synchronising means). `owns(p)` and `usable_size(p)` must
/// not race with the free of the block holding `p`. `release()` and destruction require that no
/// other thread uses the resource during the call; threads that used it may still be running (or
/// exit meanwhile) and get a fresh heap if they use it again after `release()`. The upstream is
/// called only under the resource's lock, so it need not be thread-safe.
///
/// Misuse detected at `MEMKIT_DEBUG` >= 1 (reported, then ignored), in O(1): a pointer in no
/// chunk of this resource or not at a block's start (foreign_pointer), a size or alignment that
/// maps to another class (size_mismatch), the block at the head of its chunk's free list or of the
/// thread's outgoing batch, or any block of a wholly free chunk (double_free). Level 3 also walks
/// the chunk's free list and the outgoing batches.
template <class Upstream = malloc_resource>
class thread_cached : public detail::thread_cached_base<Upstream, detail::thread::any_size_bins> {
  static_assert(is_resource_v<Upstream>,
                "thread_cached<U>: U must implement the resource interface");
  using front = detail::thread_cached_base<Upstream, detail::thread::any_size_bins>;
  using front::engine_;

public:
  /// \effects enrolls the resource in the thread registry; obtains nothing.
  explicit thread_cached(Upstream upstream = {}, thread_cached_options options = {}) noexcept
      : front("memkit::thread_cached", detail::thread::any_size_classes.sizes, class_count(options),
              options, std::move(upstream)),
        last_class_byte_(last_class_byte(options)),
        last_direct_byte_(last_class_byte_ < detail::table_class_limit
                              ? last_class_byte_
                              : static_cast<std::uint16_t>(detail::table_class_limit - 1)),
        class_count_(class_count(options)) {}

  using front::deallocate;
  using front::name;

  /// \returns the largest size that can ever succeed (room is left for a large block's header).
  std::size_t max_size() const noexcept { return unbounded_size - page_size; }
  /// \returns page_size.
  std::size_t max_alignment() const noexcept { return page_size; }
  /// \returns the largest request served from a size class.
  std::size_t max_class_size() const noexcept { return std::size_t{last_class_byte_} + 1; }
  std::size_t class_count() const noexcept { return class_count_; }

  /// \returns a block of `bytes` (1 if 0) aligned to `alignment`.
  /// \throws bad_alignment, bad_size or out_of_memory (docs/concepts.md, "Errors").
  void* allocate(std::size_t bytes, std::size_t alignment = default_alignment) {
    return detail::allocate_or_throw(*this, bytes, alignment);
  }

  /// \returns a block of `bytes` (1 if 0) aligned to `alignment`, or null.
  void* try_allocate(std::size_t bytes, std::size_t alignment = default_alignment) noexcept {
    // Inline only for the sizes of the direct table, most of a program's: the rest of the
    // classes take one call more, and the inlined path stays small enough to be inlined. The
    // constructor clamps the bound: the table index stays in range even for a constant request
    // above it, which the compiler would otherwise warn of (-Warray-bounds).
    MEMKIT_ASSUME(last_direct_byte_ < detail::table_class_limit);
    if (MEMKIT_LIKELY(bytes - 1 <= last_direct_byte_ &&
                      detail::is_alignment_within(alignment, detail::class_granularity))) {
      return engine_.allocate_small(bytes);
    }
    return allocate_unusual(bytes, alignment);
  }

  /// Returns `p` to its owner (this thread's heap, or another's in a batch).
  /// \requires `bytes` and `alignment` are those `p` was allocated with (checked at MEMKIT_DEBUG
  /// >= 1 as far as the class goes).
  void deallocate(void* p, std::size_t bytes, std::size_t alignment = default_alignment) noexcept {
    if (p == nullptr) {
      return;
    }
    if constexpr (deallocate_checks) {
      if (!detail::is_valid_alignment(alignment) || alignment > page_size) {
        report_misuse(misuse::alignment_mismatch, name(), p, bytes, alignment);
        return;
      }
      if (!engine_.check_free(p, bytes, alignment, class_for(bytes, alignment))) {
        return;
      }
    }
    engine_.free(p, bytes);
  }

private:
  static std::size_t class_count(const thread_cached_options& o) noexcept {
    return detail::class_index(std::size_t{last_class_byte(o)} + 1) + 1;
  }

  static std::uint16_t last_class_byte(const thread_cached_options& o) noexcept {
    std::size_t n =
        o.max_class_size < detail::class_granularity ? detail::class_granularity : o.max_class_size;
    n = n > detail::thread::max_class_size ? detail::thread::max_class_size : n;
    return static_cast<std::uint16_t>(detail::class_size(detail::class_index(n)) - 1);
  }

  /// \returns the class serving (bytes, alignment), or large_class for a region of its own.
  /// Allocation and the deallocate check agree through this.
  /// \requires `alignment` is a power of two up to page_size.
  std::size_t class_for(std::size_t bytes, std::size_t alignment) const noexcept {
    std::size_t n = bytes == 0 ? 1 : bytes;
    if (alignment > detail::class_granularity) {
      n = detail::round_up(n, alignment);
      if (n == 0) {
        return detail::thread::large_class;
      }
    }
    return n - 1 <= last_class_byte_ ? detail::class_index(n) : detail::thread::large_class;
  }

  // Requests above the direct table's sizes, over-aligned ones, large ones and impossible ones.
  MEMKIT_NOINLINE void* allocate_unusual(std::size_t bytes, std::size_t alignment) noexcept {
    if (!detail::is_valid_alignment(alignment) || alignment > page_size || bytes > max_size()) {
      return engine_.fail();
    }
    const std::size_t cls = class_for(bytes, alignment);
    if (cls < class_count_) {
      return engine_.allocate(cls, bytes);
    }
    return engine_.allocate_large(bytes, alignment);
  }

  // max_class_size() - 1, below thread::max_class_size, in 16 bits as multipool keeps it.
  const std::uint16_t last_class_byte_;
  const std::uint16_t last_direct_byte_; ///< the last request try_allocate serves inline
  const std::size_t class_count_;
};

/// Serves blocks of one size from per-thread heaps: thread_cached's machinery with a single class
/// (docs/threads.md), for the fixed-size objects a pool would hold when threads share them.
/// `block_size` is rounded up to a multiple of `block_alignment` and of 16; blocks up to 8 KiB
/// (an eighth of a chunk) and alignments up to page_size are served. Memory model and misuse
/// detection as thread_cached's; a size above block_size() is a size_mismatch, an alignment above
/// block_alignment() an alignment_mismatch.
template <class Upstream = malloc_resource>
class thread_cached_pool : public detail::thread_cached_base<Upstream, 1> {
  static_assert(is_resource_v<Upstream>,
                "thread_cached_pool<U>: U must implement the resource interface");
  using front = detail::thread_cached_base<Upstream, 1>;
  using front::engine_;

public:
  using front::deallocate;
  using front::name;

  /// \effects a resource of `block_size`-byte blocks aligned to `block_alignment`; obtains
  /// nothing. \throws bad_alignment if `block_alignment` is not a power of two or above
  /// page_size, bad_size if the rounded block size is above 8 KiB.
  explicit thread_cached_pool(std::size_t block_size,
                              std::size_t block_alignment = default_alignment,
                              Upstream upstream = {}, thread_cached_options options = {})
      : front("memkit::thread_cached_pool",
              std::array<std::uint32_t, 1>{checked_block_size(block_size, block_alignment)}.data(),
              1, options, std::move(upstream)),
        block_size_(static_cast<std::uint32_t>(engine_.class_size(0))),
        block_alignment_(block_alignment < detail::class_granularity ? detail::class_granularity
                                                                     : block_alignment) {}

  std::size_t max_size() const noexcept { return block_size_; }
  std::size_t max_alignment() const noexcept { return block_alignment_; }
  std::size_t block_size() const noexcept { return block_size_; }
  std::size_t block_alignment() const noexcept { return block_alignment_; }

  void* allocate(std::size_t bytes, std::size_t alignment = default_alignment) {
    return detail::allocate_or_throw(*this, bytes, alignment);
  }

  /// \returns a block for a request of at most block_size() bytes and block_alignment(), or null.
  void* try_allocate(std::size_t bytes, std::size_t alignment = default_alignment) noexcept {
    if (MEMKIT_LIKELY(bytes <= block_size_ &&
                      detail::is_alignment_within(alignment, block_alignment_))) {
      return engine_.allocate(0, bytes);
    }
    return engine_.fail();
  }

  void deallocate(void* p, std::size_t bytes, std::size_t alignment = default_alignment) noexcept {
    if (p == nullptr) {
      return;
    }
    if constexpr (deallocate_checks) {
      if (bytes > block_size_) {
        report_misuse(misuse::size_mismatch, name(), p, bytes, alignment);
        return;
      }
      if (!detail::is_alignment_within(alignment, block_alignment_)) {
        report_misuse(misuse::alignment_mismatch, name(), p, bytes, alignment);
        return;
      }
      if (!engine_.check_free(p, bytes, alignment, 0)) {
        return;
      }
    }
    engine_.free(p, bytes);
  }

private:
  static std::uint32_t checked_block_size(std::size_t size, std::size_t alignment) {
    if (!detail::is_valid_alignment(alignment) || alignment > page_size) {
      throw bad_alignment("memkit::thread_cached_pool", size, alignment);
    }
    const std::size_t granule =
        alignment < detail::class_granularity ? detail::class_granularity : alignment;
    const std::size_t rounded = detail::round_up(size == 0 ? 1 : size, granule);
    if (rounded == 0 || rounded > detail::thread::max_class_size) {
      throw bad_size("memkit::thread_cached_pool", size, alignment);
    }
    return static_cast<std::uint32_t>(rounded);
  }

  const std::uint32_t block_size_;
  const std::size_t block_alignment_;
};

} // namespace MEMKIT_ABI
} // namespace memkit
