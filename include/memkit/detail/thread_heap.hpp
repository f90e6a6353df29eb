// SPDX-License-Identifier: BSL-1.0
// memkit/detail/thread_heap.hpp: the per-thread heap of thread_cached.hpp and the chunk header
// that names a block's owner: the data, and the operations that touch only one heap.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "../config.hpp"
#include "../stats.hpp"
#include "align.hpp"
#include "assert.hpp"
#include "free_list.hpp"
#include "poison.hpp"
#include "remote_queue.hpp"
#include "size_class.hpp"

namespace memkit {
inline namespace MEMKIT_ABI {
namespace detail {

/// Every chunk of a thread-caching resource is `tc_chunk_size` bytes aligned to its size, so the
/// header of the chunk holding any block is found by masking the block's address: O(1), no search
/// (mimalloc's segments and pages, "Free List Sharding in Action", section 3). 64 KiB is
/// multipool's chunk (multipool.hpp): 16 blocks of the largest default class, 4090 of the smallest.
inline constexpr unsigned tc_chunk_shift = 16;
inline constexpr std::size_t tc_chunk_size = std::size_t{1} << tc_chunk_shift;

/// The class index a large block's header carries.
inline constexpr std::uint32_t tc_large_class = ~std::uint32_t{0};

/// The header at the base of every chunk. The first cache line is read by any thread that frees a
/// block of the chunk and written only while the chunk has no live block (when a heap formats it),
/// so those reads need no synchronisation of their own: the freeing thread got the block, through
/// whatever hand-over the program used, after the header was written. The second line is the
/// owner's alone; keeping it apart stops the owner's frees from invalidating the line remote
/// freers read.
struct alignas(cache_line_size) tc_chunk {
  // Read by any thread holding a block of the chunk.
  void* owner = nullptr; ///< the owning heap; null in the depot and for large blocks
  std::uint32_t cls = 0; ///< size class, or tc_large_class
  std::uint32_t block_size = 0;
  char* blocks = nullptr;        ///< first block (small) or the block (large)
  std::size_t bytes = 0;         ///< obtained from the upstream: tc_chunk_size, or a large region
  std::size_t size = 0;          ///< large: the bytes requested (0 counts as 1)
  tc_chunk* link_next = nullptr; ///< every small chunk (release), or the large blocks
  tc_chunk* link_prev = nullptr; ///< large blocks only
  std::uint64_t freed_at = 0;    ///< in the depot: when it came (ms), 0 once decommitted

  // The owner's.
  alignas(cache_line_size) free_list free; ///< local free list
  char* bump = nullptr;                    ///< next block never handed out
  char* end = nullptr;                     ///< end of the blocks
  std::uint32_t used = 0;                  ///< blocks handed out and not freed to this chunk
  std::uint32_t capacity = 0;
  tc_chunk* prev = nullptr; ///< the owner's partial list, its spares, or the depot
  tc_chunk* next = nullptr;
  bool in_bin = false; ///< current or on the partial list; false when full or spare
};
static_assert(sizeof(tc_chunk) == 2 * cache_line_size);

/// Where in its chunk a header sits: headers are coloured, `tc_colors` places a header apart, by
/// the chunk's address. Chunks are aligned to 64 KiB, so uncoloured headers would all fall in the
/// same two sets of every cache whose way is 64 KiB or less (L1's 4 KiB, and so on): a thread
/// using more classes than L1 has ways (mt-local's 16 on a 12-way L1) then missed L1 on a header
/// line about once every two calls (cachegrind: 928 k misses in 2 M calls, 74 k with the
/// colours; docs/threads.md, "How a block finds its owner"). Consecutive chunks take
/// consecutive colours, so 16 chunks' headers fill 32 distinct sets; the cost is up to 1,920
/// bytes of a chunk's blocks (960 on average, 1.5 %).
inline constexpr std::size_t tc_colors = 16;
/// The bytes from a chunk's base that its header may reach: the blocks begin at or after it.
inline constexpr std::size_t tc_header_room = tc_colors * sizeof(tc_chunk);
static_assert(tc_header_room <= page_size, "a chunk's header lies in its first page");

/// \returns the header of the chunk (or large region) at `base`, 64 KiB-aligned; null for null.
inline tc_chunk* tc_header_at(void* base) noexcept {
  return reinterpret_cast<tc_chunk*>(static_cast<char*>(base) + (address(base) >> tc_chunk_shift) %
                                                                    tc_colors * sizeof(tc_chunk));
}

/// \returns the base of the chunk or large region whose header is `c` (a header lies in the
/// first tc_header_room bytes of a 64 KiB-aligned base).
inline char* tc_base_of(const tc_chunk* c) noexcept {
  return reinterpret_cast<char*>(address(c) & ~(tc_chunk_size - 1));
}

/// \returns the header of the chunk holding `p`. \requires `p` came from a thread-caching
/// resource (the chunk map screens other pointers first where that is checked).
inline tc_chunk* tc_chunk_of(const void* p) noexcept {
  return tc_header_at(reinterpret_cast<void*>(address(p) & ~(tc_chunk_size - 1)));
}

/// What every heap's empty bins point at, so the allocation fast path tests only the free list:
/// its free list is null and it has nothing to carve. Read by all threads, written by none.
inline tc_chunk tc_empty_chunk{};

/// Blocks freed on this thread for one other heap, posted as one batch.
struct tc_outgoing {
  void* dest = nullptr;
  free_chain chain;
};

/// Per-heap counters (docs/statistics.md), written only by the heap's current thread with relaxed
/// atomic stores (no read-modify-write) and summed by `stats()` from any thread.
#if MEMKIT_STATISTICS
struct tc_counters {
  std::atomic<std::size_t> allocations{0};
  std::atomic<std::size_t> deallocations{0};
  std::atomic<std::size_t> bytes{0}; ///< allocated minus freed here, modulo 2^N
  std::atomic<std::size_t> blocks{0};

  static void bump(std::atomic<std::size_t>& c, std::size_t by) noexcept {
    c.store(c.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
  }
  void on_allocate(std::size_t n) noexcept {
    bump(allocations, 1);
    bump(bytes, n);
    bump(blocks, 1);
  }
  void on_deallocate(std::size_t n) noexcept {
    bump(deallocations, 1);
    bump(bytes, 0 - n);
    bump(blocks, 0 - std::size_t{1});
  }
  void add_to(statistics& s) const noexcept {
    s.allocations += allocations.load(std::memory_order_relaxed);
    s.deallocations += deallocations.load(std::memory_order_relaxed);
    s.bytes_in_use += bytes.load(std::memory_order_relaxed);
    s.blocks_in_use += blocks.load(std::memory_order_relaxed);
  }
};
#else
struct tc_counters {
  void on_allocate(std::size_t) noexcept {}
  void on_deallocate(std::size_t) noexcept {}
  void add_to(statistics&) const noexcept {}
};
#endif

/// One thread's cache for one resource: per size class a current chunk and a list of partially
/// used ones (each chunk keeps its own free list, mimalloc's free-list sharding), up to
/// `cached_chunks` wholly free chunks of any class, the outgoing batches of blocks freed here for
/// other heaps, and the queue other threads post this heap's blocks to.
///
/// Every member but `remote` is touched only by the heap's current thread, or by whoever holds the
/// resource's lock while the heap has no thread (abandoned, being adopted or scavenged). Heaps are
/// never destroyed while their resource lives, so a pointer to one in a chunk header stays valid.
template <std::size_t Bins>
struct tc_heap {
  /// The only member other threads write: on its own cache line.
  alignas(cache_line_size) remote_queue remote;

  struct bin {
    tc_chunk* current = &tc_empty_chunk;
    tc_chunk* partial = nullptr; ///< doubly linked through prev/next; current is not on it
  };
  /// Destinations a heap batches frees for at once: a small direct-mapped table, as snmalloc's
  /// remote cache hashes destinations into a few buckets (src/snmalloc/mem/remotecache.h).
  static constexpr std::size_t outgoing_slots = 8;

  alignas(cache_line_size) bin bins[Bins];
  /// In the any-size form (the classes of size_class.hpp): for each 16-byte step of sizes up to
  /// table_class_limit, the current chunk of its class, kept equal to that bin's by set_current.
  /// The allocation fast path finds its chunk from the size in one load, rather than a load of
  /// the class table and then one of the bin, as mimalloc's heap has a page per word size
  /// (pages_free_direct).
  static constexpr std::size_t direct_steps = Bins > class_index(table_class_limit)
                                                  ? table_class_limit / class_granularity + 1
                                                  : 0;
  tc_chunk* direct[direct_steps == 0 ? 1 : direct_steps];
  tc_outgoing outgoing[outgoing_slots];
  tc_chunk* spare = nullptr; ///< wholly free chunks kept, linked through next
  std::size_t spare_count = 0;
  std::size_t pending = 0;           ///< blocks waiting in `outgoing`
  tc_heap* next_heap = nullptr;      ///< every heap of the resource
  tc_heap* next_abandoned = nullptr; ///< heaps whose thread exited
  bool abandoned = false;
  tc_counters counters;

  tc_heap() noexcept {
    for (tc_chunk*& d : direct) {
      d = &tc_empty_chunk;
    }
  }

  /// \effects makes `c` the current chunk of class `cls`.
  void set_current(std::size_t cls, tc_chunk* c) noexcept {
    bins[cls].current = c;
    if constexpr (direct_steps != 0) {
      if (cls <= class_index(table_class_limit)) {
        const std::size_t last = class_size(cls) / class_granularity;
        for (std::size_t s = cls == 0 ? 0 : class_size(cls - 1) / class_granularity + 1; s <= last;
             ++s) {
          direct[s] = c;
        }
      }
    }
  }

  /// \returns the slot batching frees for `dest`.
  tc_outgoing& outgoing_for(const void* dest) noexcept {
    // Heaps are cache-line aligned: the bits above the line offset tell them apart.
    return outgoing[(address(dest) / cache_line_size) % outgoing_slots];
  }

  void link_partial(tc_chunk* c) noexcept {
    bin& b = bins[c->cls];
    c->prev = nullptr;
    c->next = b.partial;
    if (b.partial != nullptr) {
      b.partial->prev = c;
    }
    b.partial = c;
    c->in_bin = true;
  }

  void unlink_partial(tc_chunk* c) noexcept {
    bin& b = bins[c->cls];
    if (c->prev != nullptr) {
      c->prev->next = c->next;
    } else {
      b.partial = c->next;
    }
    if (c->next != nullptr) {
      c->next->prev = c->prev;
    }
    c->prev = c->next = nullptr;
    c->in_bin = false;
  }

  /// \returns whether `p` is already on its chunk's free list or waiting in an outgoing batch,
  /// walking both: the exhaustive double-free test of `MEMKIT_DEBUG` 3. \requires `c` is owned
  /// by this heap when `local`.
  bool holds_free(const tc_chunk* c, const void* p, bool local) const noexcept {
    if (local) {
      for (const void* f = c->free.head(); f != nullptr; f = free_list::next(f)) {
        if (f == p) {
          return true;
        }
      }
    }
    for (const tc_outgoing& o : outgoing) {
      for (const void* f = o.chain.first; f != nullptr; f = free_list::next(f)) {
        if (f == p) {
          return true;
        }
        if (f == o.chain.last) {
          break;
        }
      }
    }
    return false;
  }
};

} // namespace detail
} // namespace MEMKIT_ABI
} // namespace memkit
