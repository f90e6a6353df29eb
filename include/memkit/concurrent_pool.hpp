// SPDX-License-Identifier: BSL-1.0
// memkit/concurrent_pool.hpp: a pool of fixed-size blocks shared by threads; allocate and
// deallocate are lock-free while blocks are available.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <new>
#include <utility>

#include "config.hpp"
#include "detail/base/align.hpp"
#include "detail/base/assert.hpp"
#include "detail/base/poison.hpp"
#include "detail/block_index.hpp"
#include "detail/carver.hpp"
#include "detail/chunk_registry.hpp"
#include "detail/fit_table.hpp"
#include "detail/tagged_stack.hpp"
#include "error.hpp"
#include "resource.hpp"
#include "stats.hpp"
#include "traits.hpp"
#include "upstream.hpp"

namespace memkit {
inline namespace MEMKIT_ABI {

/// How a `concurrent_pool` sizes its blocks and chunks. Aggregate: `concurrent_pool_options{32}`.
struct concurrent_pool_options {
  /// Bytes every block can hold; 0 is served as 1, as `allocate(0)` is.
  std::size_t block_size = 0;
  /// Alignment of every block; a power of two.
  std::size_t block_alignment = default_alignment;
  /// Bytes of every chunk obtained from the upstream, rounded up to a power of two that holds at
  /// least 16 blocks (so that growth, a lock and an upstream call, stays rare). A chunk is
  /// requested with its size as alignment, so the chunk of any block is found from its address
  /// with a mask. 32 KiB by default: glibc serves aligned_alloc(a, n) by taking n + a from the
  /// heap and giving back what lies outside the aligned block, which stays below its 128 KiB mmap
  /// threshold (M_MMAP_THRESHOLD) up to 32 KiB; a 64 KiB chunk was mapped whole at 132 KiB
  /// (heap_per_block of bench/concurrent_pool_bench.cpp: 135.6 bytes for 32-byte blocks, against
  /// 65.9 with 32 KiB chunks).
  std::size_t chunk_size = std::size_t{32} << 10;
};

/// A pool of equal blocks (docs/concepts.md) that several threads may allocate from and free to at
/// once, a free from any thread: `try_allocate`, `allocate` and `deallocate` are lock-free while
/// the pool has a free block (one compare-and-swap on a shared stack each, retried only when
/// another thread's succeeded). Only growth, when every block is in use, takes a mutex to obtain a
/// chunk from `Upstream`, which is therefore called by one thread at a time and need not be
/// thread-safe.
///
/// Layout. Chunks are `chunk_size()` bytes aligned to that size; chunk n holds blocks_per_chunk()
/// blocks from its start, then one `std::atomic<uint32_t>` link per block: the free blocks form
/// a `detail::tagged_stack` (its comment says why the links are not in the blocks and why the ABA
/// tag is sufficient), and blocks never handed out are never written. A block's handle is
/// `(n << slot_bits | slot) + 1`; `detail::chunk_registry` turns n into the chunk's start (a pop)
/// and the start into n (a free, owns), in O(1), without a lock and without reading the memory a
/// foreign pointer points to. The stack head, the growth lock with the chunk tables, and the
/// statistics counters each sit on cache lines of their own, apart from the read-only geometry.
///
/// Memory model. `allocate`, `try_allocate`, `deallocate`, `owns`, `stats` and the accessors may
/// run on any threads at once. A block freed on one thread and handed out on another: the free
/// happens-before the allocation that returns it (release push, acquire pop), so the new owner
/// never sees the old owner's writes race with its own. Handing a live block to another thread is
/// the caller's synchronization, as with `malloc`. `owns(p)` is exact for every `p` the calling
/// thread came by through synchronization (its own blocks, blocks handed to it); a chunk another
/// thread is adding at that moment may not be seen yet. `release()`, `in_use()` and destruction
/// require quiescence: no other call running, none starting. The pool declares itself
/// `thread_safe`, so `synchronized<concurrent_pool<>>` takes no lock, and releasing it is then
/// also the caller's to serialize.
///
/// Misuse detected in deallocate at MEMKIT_DEBUG >= 1, in O(1), reported (docs/bad-input.md) and
/// then ignored: a pointer that does not start one of its blocks (foreign pointer), a size above
/// block_size() (size mismatch), an alignment above block_alignment() or not a power of two
/// (alignment mismatch), and freeing a block that is free (double free), also when two frees of
/// one block race: each free claims the block by a compare-and-swap of its link from "handed out",
/// and only one can succeed.
template <class Upstream = malloc_resource>
class concurrent_pool : private detail::atomic_stats_recorder<concurrent_pool<Upstream>> {
  MEMKIT_STATIC_ASSERT_RESOURCE(Upstream,
                                "memkit::concurrent_pool<Upstream>: Upstream must be a resource");
  using handle = detail::block_handle;
  using link = std::atomic<handle>;

public:
  /// Any member but `release()` and `in_use()` may be called from several threads at once.
  static constexpr bool thread_safe = true;

  /// \effects a pool of `block_size`-byte blocks aligned to `block_alignment`; obtains nothing.
  /// \throws bad_alignment if `block_alignment` is not a power of two, bad_size if the rounded
  /// block size, or 16 of them in a chunk, would overflow (docs/concepts.md, "Constructor
  /// arguments").
  explicit concurrent_pool(std::size_t block_size, std::size_t block_alignment = default_alignment,
                           Upstream upstream = {})
      : concurrent_pool(concurrent_pool_options{block_size, block_alignment}, std::move(upstream)) {
  }

  /// \effects a pool configured by `options`; obtains nothing.
  /// \throws bad_alignment as above; bad_size as above, or if `options.chunk_size` is 0 or above
  /// 2^62 (any other chunk size is rounded up as `concurrent_pool_options` says).
  explicit concurrent_pool(const concurrent_pool_options& options, Upstream upstream = {})
      : geometry_(checked_geometry(options)), fits_(geometry_.block_size, geometry_.alignment),
        slot_of_(geometry_.block_size), upstream_(std::move(upstream)) {}

  concurrent_pool(const concurrent_pool&) = delete;
  concurrent_pool& operator=(const concurrent_pool&) = delete;

  /// \effects release(). \requires quiescence.
  ~concurrent_pool() { release(); }

  const char* name() const noexcept { return "memkit::concurrent_pool"; }
  /// \returns block_size(): every request up to it is served by one block.
  std::size_t max_size() const noexcept { return geometry_.block_size; }
  /// \returns block_alignment(); every smaller power of two is honoured too.
  std::size_t max_alignment() const noexcept { return geometry_.alignment; }

  /// \returns the block size asked for, rounded up to a multiple of block_alignment().
  std::size_t block_size() const noexcept { return geometry_.block_size; }
  /// \returns the alignment asked for, raised to at least 8 (AddressSanitizer's granule: two
  /// blocks never share one, so threads poisoning neighbouring blocks never write one shadow byte).
  std::size_t block_alignment() const noexcept { return geometry_.alignment; }
  /// \returns the bytes of every chunk, which is also its alignment.
  std::size_t chunk_size() const noexcept { return geometry_.chunk_size; }
  /// \returns the blocks in every chunk.
  std::size_t blocks_per_chunk() const noexcept { return geometry_.blocks; }
  /// \returns the chunks obtained so far.
  std::size_t chunk_count() const noexcept { return chunks_.count(); }
  /// \returns the blocks in all chunks, in use or not.
  std::size_t capacity() const noexcept { return chunk_count() * geometry_.blocks; }
  /// \returns the blocks handed out and not yet returned. O(free blocks): walks the free stack.
  /// \requires quiescence.
  std::size_t in_use() const noexcept { return capacity() - count_free(capacity()); }

  /// \returns a block of block_size() bytes.
  /// \throws bad_alignment, bad_size, out_of_memory (the upstream could not provide a chunk).
  void* allocate(std::size_t bytes, std::size_t alignment = default_alignment) {
    return detail::allocate_or_throw(*this, bytes, alignment);
  }

  /// \returns a block for a request of at most block_size() bytes and block_alignment(), or null.
  /// Pops the free stack; growth happens out of line, under the growth lock.
  void* try_allocate(std::size_t bytes, std::size_t alignment = default_alignment) noexcept {
    if (MEMKIT_UNLIKELY(!fits_(bytes, alignment))) {
      this->on_failure();
      return nullptr;
    }
    // The start of the chunk whose link the pop read last: the popped block's, if it succeeds, so
    // the block's address needs no second lookup.
    char* start = nullptr;
    handle h = stack_.pop([&](handle top) -> link& {
      start = chunk_of(top);
      return links_of(start)[slot_of(top)];
    });
    if (MEMKIT_UNLIKELY(h == detail::no_block)) {
      h = grow();
      if (h == detail::no_block) {
        this->on_failure();
        return nullptr;
      }
      start = chunk_of(h);
    }
    return hand_out(h, start, bytes);
  }

  /// Puts the block back on the free stack; `deallocate(nullptr, ...)` does nothing.
  /// \requires `p` came from this pool and is in use (checked as the class comment says).
  void deallocate(void* p, std::size_t bytes, std::size_t alignment = default_alignment) noexcept {
    if (p == nullptr) {
      return;
    }
    const located b = locate(p);
    if constexpr (deallocate_checks) {
      if (MEMKIT_UNLIKELY(b.next == nullptr || !fits_(bytes, alignment) || !claim(*b.next))) {
        detail::reject_block(name(), b.next != nullptr, p, bytes, alignment, geometry_.block_size,
                             geometry_.alignment);
        return;
      }
    }
    this->on_deallocate(bytes);
    detail::poison(p, geometry_.block_size);
    stack_.push(b.block, b.block, [&b](handle) -> link& { return *b.next; });
  }

  /// \returns whether `p` points into one of the blocks of a chunk (handed out or free). O(1).
  bool owns(const void* p) const noexcept {
    const std::uintptr_t a = detail::address(p);
    const auto* start = reinterpret_cast<const char*>(a & ~(geometry_.chunk_size - 1));
    return chunks_.find(start) != detail::chunk_registry::npos &&
           a - detail::address(start) < geometry_.blocks * geometry_.block_size;
  }

  /// \effects returns every chunk to the upstream (each with chunk_size() as size and alignment)
  /// and the chunk tables' memory; the pool starts over empty.
  /// \requires quiescence: no block is in use (they become invalid) and no other call runs.
  void release() noexcept {
    const std::lock_guard<std::mutex> lock(growth_);
    MEMKIT_ASSERT_EXPENSIVE(count_free(capacity() + 1) <= capacity());
    const std::size_t bytes = geometry_.chunk_size;
    chunks_.for_each([&](char* start) {
      detail::unpoison_kept(start, geometry_.blocks * geometry_.block_size);
      upstream_.deallocate(start, bytes, bytes);
      this->on_upstream_deallocate(bytes);
    });
    auto tables_upstream = recorded();
    chunks_.clear(tables_upstream);
    stack_.clear();
    this->on_reset();
  }

  /// \returns the counters of docs/statistics.md (all zero unless MEMKIT_STATISTICS is 1).
  using detail::atomic_stats_recorder<concurrent_pool<Upstream>>::stats;

  /// \returns the upstream. Calling it races with growth unless the caller serializes.
  Upstream& upstream() noexcept { return upstream_; }
  const Upstream& upstream() const noexcept { return upstream_; }

private:
  struct geometry {
    std::size_t block_size;
    std::size_t alignment;
    std::size_t chunk_size; // a power of two, also the chunk's alignment
    std::size_t blocks;     // per chunk
    unsigned slot_bits;     // blocks < 2^slot_bits
    std::size_t links;      // offset of the links in a chunk: blocks * block_size
    std::uint32_t max_chunks;
  };

  // A block found from its address: its handle and link, or both null for no block of ours.
  struct located {
    handle block;
    link* next;
  };

  static constexpr std::size_t min_chunk_blocks = 16;

  // The constructor rule of docs/concepts.md: a bad alignment or a geometry that cannot exist
  // (a zero chunk size included) throws; anything else is rounded up to what can be served.
  static geometry checked_geometry(const concurrent_pool_options& o) {
    constexpr std::size_t link_bytes = sizeof(link);
    // The largest chunk: a power of two no object exceeds.
    constexpr std::size_t max_chunk = (unbounded_size >> 1) + 1;
    const std::size_t alignment = o.block_alignment < 8 ? 8 : o.block_alignment;
    const std::size_t size = detail::is_valid_alignment(o.block_alignment)
                                 ? detail::round_up(o.block_size == 0 ? 1 : o.block_size, alignment)
                                 : 0;
    if (size == 0 || size > max_chunk / min_chunk_blocks - link_bytes || o.chunk_size == 0 ||
        o.chunk_size > max_chunk) {
      detail::throw_bad_geometry("memkit::concurrent_pool", o.block_size, o.block_alignment);
    }
    geometry g{};
    g.alignment = alignment;
    g.block_size = size;
    // At least `alignment`, since a block is.
    g.chunk_size = 1;
    while (g.chunk_size < o.chunk_size || g.chunk_size < min_chunk_blocks * (size + link_bytes)) {
      g.chunk_size *= 2;
    }
    g.blocks = g.chunk_size / (size + link_bytes);
    // Handles are 32 bits, so one chunk can hold at most 2^31 of them.
    if (g.blocks > (std::size_t{1} << 31)) {
      g.blocks = std::size_t{1} << 31;
    }
    g.slot_bits = 0;
    while ((std::size_t{1} << g.slot_bits) < g.blocks) {
      ++g.slot_bits;
    }
    g.links = g.blocks * g.block_size;
    // The largest handle, (n << slot_bits | slot) + 1 with slot < 2^slot_bits, stays at most
    // max_handle: n <= (max_handle - 2^slot_bits) >> slot_bits.
    const std::uint64_t slots = std::uint64_t{1} << g.slot_bits;
    g.max_chunks = static_cast<std::uint32_t>((detail::max_handle - slots) / slots + 1);
    return g;
  }

  link* links_of(char* start) const noexcept {
    return std::launder(reinterpret_cast<link*>(start + geometry_.links));
  }

  // A handle's chunk and slot: (n << slot_bits | slot) + 1.
  MEMKIT_ALWAYS_INLINE char* chunk_of(handle h) const noexcept {
    return chunks_.base((h - 1) >> geometry_.slot_bits);
  }
  MEMKIT_ALWAYS_INLINE std::size_t slot_of(handle h) const noexcept {
    return (h - 1) & ((std::uint32_t{1} << geometry_.slot_bits) - 1);
  }

  // The stack's view of the links: handle to its atomic, through the chunk table.
  auto links() const noexcept {
    return [this](handle h) -> link& { return links_of(chunk_of(h))[slot_of(h)]; };
  }

  MEMKIT_ALWAYS_INLINE void* hand_out(handle h, char* start, std::size_t bytes) noexcept {
    const std::size_t slot = slot_of(h);
    MEMKIT_ASSERT_INTERNAL(((h - 1) >> geometry_.slot_bits) < chunks_.count() &&
                           slot < geometry_.blocks && start == chunk_of(h));
    // In every build, though only the checks read it: MEMKIT_DEBUG 0 and 1 share one ABI
    // namespace, so a block allocated by code built without the checks may be freed by code built
    // with them, whose claim must find this mark. Relaxed: only this thread owns the block now,
    // and a racing double free's claim orders nothing.
    links_of(start)[slot].store(detail::handed_out, std::memory_order_relaxed);
    char* const p = start + slot * geometry_.block_size;
    detail::hand_out(p, bytes);
    this->on_allocate(bytes);
    return p;
  }

  located locate(const void* p) const noexcept {
    const std::uintptr_t a = detail::address(p);
    char* const start = reinterpret_cast<char*>(a & ~(geometry_.chunk_size - 1));
    const std::uint32_t n = chunks_.find(start);
    // slot_of_ maps an offset that does not start a block past every slot (detail/block_index).
    const std::size_t slot = slot_of_(a - detail::address(start));
    if (n == detail::chunk_registry::npos || slot >= geometry_.blocks) {
      return {detail::no_block, nullptr};
    }
    return {((n << geometry_.slot_bits) | static_cast<std::uint32_t>(slot)) + 1,
            links_of(start) + slot};
  }

  // The upstream as the chunk tables see it: their memory is counted with the chunks'.
  auto recorded() noexcept {
    using recorder = detail::atomic_stats_recorder<concurrent_pool>;
    return detail::recorded_upstream<Upstream, recorder>(upstream_, *this);
  }

  // Claims a handed-out block for its free: only one of two racing frees can.
  static bool claim(link& l) noexcept {
    handle expected = detail::handed_out;
    // Relaxed: atomicity alone decides the winner; the push that follows publishes the block.
    return l.compare_exchange_strong(expected, detail::no_block, std::memory_order_relaxed);
  }

  // The free stack is empty: under the growth lock, pop again (another thread may have grown the
  // pool or freed a block meanwhile), else obtain a chunk, keep its first block and push the rest
  // as one chain, linked in address order, with one compare-and-swap.
  MEMKIT_NOINLINE handle grow() noexcept {
    const std::lock_guard<std::mutex> lock(growth_);
    if (const handle h = stack_.pop(links()); h != detail::no_block) {
      return h;
    }
    const std::uint32_t n = chunks_.count();
    if (n == geometry_.max_chunks) {
      return detail::no_block;
    }
    const std::size_t bytes = geometry_.chunk_size;
    auto* const start = static_cast<char*>(upstream_.try_allocate(bytes, bytes));
    if (start == nullptr) {
      return detail::no_block;
    }
    if (auto tables_upstream = recorded(); !chunks_.add(tables_upstream, start)) {
      upstream_.deallocate(start, bytes, bytes);
      return detail::no_block;
    }
    this->on_upstream_allocate(bytes);
    detail::poison(start, geometry_.links);
    const handle first = (n << geometry_.slot_bits) + 1;
    const auto blocks = static_cast<std::uint32_t>(geometry_.blocks);
    link* const l = links_of(start);
    for (std::uint32_t s = 0; s < blocks; ++s) {
      ::new (static_cast<void*>(l + s)) link(s + 1 < blocks ? first + s + 1 : detail::no_block);
    }
    if (blocks > 1) {
      stack_.push(first + 1, first + blocks - 1, links());
    }
    return first;
  }

  // \returns the free blocks, counting no further than `limit`. \requires quiescence.
  std::size_t count_free(std::size_t limit) const noexcept {
    std::size_t k = 0;
    for (handle h = stack_.top(); h != detail::no_block && k < limit;
         h = links()(h).load(std::memory_order_relaxed)) {
      MEMKIT_ASSERT_INTERNAL(h != detail::handed_out &&
                             ((h - 1) >> geometry_.slot_bits) < chunks_.count());
      ++k;
    }
    return k;
  }

  // Read-only after construction: every hot path reads these, no call writes them.
  const geometry geometry_;
  const detail::fit_table fits_;
  const detail::block_index slot_of_;

  // The one word every pop and push swaps, alone on its line.
  alignas(cache_line_size) detail::tagged_stack stack_;

  // Written only while growing, the tables read by every call: apart from the stack's line.
  alignas(cache_line_size) std::mutex growth_;
  detail::chunk_registry chunks_;
  Upstream upstream_;
};

} // namespace MEMKIT_ABI
} // namespace memkit
