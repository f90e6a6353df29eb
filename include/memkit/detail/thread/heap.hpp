// SPDX-License-Identifier: BSL-1.0
// memkit/detail/thread/heap.hpp: one thread's cache of a thread-caching resource, and the
// operations that touch only that heap.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "../../config.hpp"
#include "../../stats.hpp"
#include "../base/align.hpp"
#include "../base/assert.hpp"
#include "../free_list.hpp"
#include "../intrusive_list.hpp"
#include "../size_class.hpp"
#include "chunk.hpp"
#include "remote.hpp"

namespace memkit {
inline namespace MEMKIT_ABI {
namespace detail {
namespace thread {

/// Per-heap counters (docs/statistics.md; stats.hpp's one implementation), written only by the
/// heap's current thread (no read-modify-write) and summed by the engine's `stats()` from any
/// thread, which keeps the peaks of the sum.
using counters = counters_if_enabled<owned_cell, false>;

/// One thread's cache for one resource: per size class a current chunk and a list of partially
/// used ones (each chunk keeps its own free list, mimalloc's free-list sharding), up to
/// `cached_chunks` wholly free chunks of any class (the spares), the outgoing batches of blocks
/// freed here for other heaps, and the queue other threads post this heap's blocks to.
///
/// Every member but `remote` is touched only by the heap's current thread, or by whoever holds the
/// resource's lock while the heap has no thread (abandoned, being adopted or scavenged). Heaps are
/// never destroyed while their resource lives, so a pointer to one in a chunk header stays valid.
template <std::size_t Bins>
struct heap {
  /// The only member other threads write: on its own cache line.
  alignas(cache_line_size) remote_queue remote;

  using chunk_list = intrusive_list<chunk, &chunk::prev, &chunk::next>;
  struct bin {
    chunk* current = &empty_chunk;
    chunk_list partial; ///< not full, not current
  };

  alignas(cache_line_size) bin bins[Bins];
  /// In the any-size form (the classes of size_class.hpp): for each 16-byte step of sizes up to
  /// table_class_limit, the current chunk of its class, kept equal to that bin's by set_current.
  /// The allocation fast path finds its chunk from the size in one load, rather than a load of
  /// the class table and then one of the bin, as mimalloc's heap has a page per word size
  /// (pages_free_direct).
  static constexpr std::size_t direct_steps = Bins > class_index(table_class_limit)
                                                  ? table_class_limit / class_granularity + 1
                                                  : 0;
  chunk* direct[direct_steps == 0 ? 1 : direct_steps] = {};
  remote_cache outgoing;
  /// Per class, blocks of other heaps freed on this heap's thread, kept to be handed out here
  /// before the current chunk carves new memory (keep_foreign, take_foreign): as a thread cache of
  /// tcmalloc or jemalloc keeps whatever block is freed on its thread, so a thread that frees what
  /// another (or an exited) thread allocated reuses that memory instead of sending it home and
  /// touching more. Bounded per class; they go home at the thread's exit, or earlier
  /// (engine::tick) when none of their class is handed out between two ticks, as one chain.
  struct kept {
    free_list list;
    /// The first block kept, last on the list: the one whose link a post rewrites, so that the
    /// blocks go home as one chain, with no walk over them (take_foreign_chain).
    void* last = nullptr;
  };
  kept foreign[Bins];
  std::uint16_t foreign_count[Bins] = {};
  /// Per class, the most blocks kept: none while the class has no current chunk (a thread that
  /// only frees it, as a consumer does, would hold them for nothing), else set_current's `keep`.
  std::uint16_t foreign_room[Bins] = {};
  /// Per class, whether a kept block was handed out since the last scavenge (engine::tick): kept
  /// blocks of a class that is not being allocated here go home then, instead of waiting for the
  /// thread's exit (tcmalloc's thread cache gives back what stayed unused between scavenges).
  bool foreign_taken[Bins] = {};
  chunk* spare = nullptr; ///< wholly free chunks kept, linked through next
  std::size_t spare_count = 0;
  heap* next_heap = nullptr;      ///< every heap of the resource
  heap* next_abandoned = nullptr; ///< heaps whose thread exited
  bool abandoned = false;
  std::uint32_t refills = 0; ///< engine::refill's runs past the kept blocks, for its tick
  thread::counters counters;

  constexpr heap() noexcept {
    for (chunk*& d : direct) {
      d = &empty_chunk;
    }
  }

  /// \effects makes `c` the current chunk of class `cls`, and lets the heap keep up to `keep`
  /// blocks of the class that other heaps own (keep_foreign) while it is.
  void set_current(std::size_t cls, chunk* c, std::uint16_t keep = 0) noexcept {
    MEMKIT_ASSERT_INTERNAL(c != &empty_chunk || keep == 0);
    bins[cls].current = c;
    foreign_room[cls] = keep;
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

  /// \returns how many classes have a current chunk here.
  std::size_t current_chunks() const noexcept {
    std::size_t n = 0;
    for (const bin& b : bins) {
      n += b.current != &empty_chunk ? 1 : 0;
    }
    return n;
  }

  /// \effects lists `c`, no longer full, as a partly used chunk of its class.
  void link_partial(chunk* c) noexcept {
    bins[c->cls].partial.push_front(c);
    c->in_bin = true;
  }

  /// \effects takes `c` off its class's partial list.
  void unlink_partial(chunk* c) noexcept {
    bins[c->cls].partial.erase(c);
    c->in_bin = false;
  }

  /// \effects keeps `c`, a wholly free chunk, as a spare.
  void push_spare(chunk* c) noexcept {
    c->next = spare;
    spare = c;
    ++spare_count;
  }

  /// \effects keeps `p`, a free block of another heap, of class `cls` and `bytes` bytes, if it
  /// keeps fewer than the class's room (foreign_room). \returns whether it did.
  bool keep_foreign(void* p, std::size_t cls, std::size_t bytes) noexcept {
    const std::uint16_t n = foreign_count[cls];
    if (n >= foreign_room[cls]) {
      return false;
    }
    if (n == 0) {
      foreign[cls].last = p;
    }
    foreign[cls].list.push(p, bytes);
    foreign_count[cls] = static_cast<std::uint16_t>(n + 1);
    return true;
  }

  /// \returns a kept block of another heap of class `cls` (still poisoned), or null.
  void* take_foreign(std::size_t cls) noexcept {
    if (foreign[cls].list.empty()) {
      return nullptr;
    }
    --foreign_count[cls];
    foreign_taken[cls] = true;
    return foreign[cls].list.pop();
  }

  /// \returns every kept block of class `cls`, taken off, as one chain whose last link is still
  /// to be written (empty if none).
  free_chain take_foreign_chain(std::size_t cls) noexcept {
    free_chain c;
    if (foreign_count[cls] != 0) {
      c.first = foreign[cls].list.head();
      c.last = foreign[cls].last;
      c.count = foreign_count[cls];
      foreign[cls].list.clear();
      foreign_count[cls] = 0;
    }
    return c;
  }

  /// \returns a spare chunk, last of class `cls` if one is (link_for_class; the first for
  /// large_class), or null.
  chunk* pop_spare(std::uint32_t cls = large_class) noexcept {
    chunk** const link = link_for_class(&spare, cls);
    chunk* const c = *link;
    if (c != nullptr) {
      *link = c->next;
      c->next = nullptr;
      --spare_count;
    }
    return c;
  }
};

} // namespace thread
} // namespace detail
} // namespace MEMKIT_ABI
} // namespace memkit
