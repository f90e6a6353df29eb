// SPDX-License-Identifier: BSL-1.0
// memkit/detail/thread_depot.hpp: what the per-thread heaps of a thread-caching resource share:
// wholly free chunks, the upstream, large regions, the chunk map and the pool of heaps.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <new>
#include <type_traits>
#include <utility>

#include "../config.hpp"
#include "../resource.hpp"
#include "../stats.hpp"
#include "assert.hpp"
#include "chunk_map.hpp"
#include "os.hpp"
#include "poison.hpp"
#include "thread_heap.hpp"

namespace memkit {
inline namespace MEMKIT_ABI {
namespace detail {

/// The shared side of docs/threads.md's thread_cached, behind one mutex that the allocation and
/// free fast paths never take. It holds:
/// - the depot proper: chunks whose blocks are all free, of any class, that heaps hand back above
///   their bound and take before a new chunk is obtained;
/// - every chunk and large region obtained from the upstream (for `release`), and the chunk map
///   that finds them from an address;
/// - every heap, and the list of heaps whose thread exited, waiting to be adopted whole.
///
/// Every member requires `mutex()` held, except `find` (lock-free, detail/chunk_map.hpp) and
/// `release`, which requires quiescence. The upstream is called only from here, hence only under
/// the mutex: it need not be thread-safe.
/// Whether `U` can give a range's pages back to the OS and keep it mapped (`decommit(p, bytes)`),
/// and says after how long unused (`delay_ms`): the global replacement's os_upstream.
template <class U, class = void>
struct tc_decommits : std::false_type {};
template <class U>
struct tc_decommits<U, std::void_t<decltype(std::declval<U&>().decommit(nullptr, std::size_t{})),
                                   decltype(U::delay_ms)>> : std::true_type {};

template <class Upstream, class Heap>
class tc_depot {
public:
  /// Over an upstream that decommits, a chunk left in the depot for `Upstream::delay_ms` gives its
  /// pages back to the OS (all but the header's), so a program's resident memory falls after a
  /// peak; checked whenever a chunk enters or leaves the depot and whenever a large block is
  /// allocated or freed, walking the depot at most twice per delay.
  static constexpr bool decommits = tc_decommits<Upstream>::value;

  explicit tc_depot(Upstream&& upstream) noexcept : upstream_(std::move(upstream)) {}
  tc_depot(const tc_depot&) = delete;
  tc_depot& operator=(const tc_depot&) = delete;
  ~tc_depot() { MEMKIT_ASSERT_INTERNAL(chunks_ == nullptr && large_ == nullptr); }

  std::mutex& mutex() const noexcept { return mutex_; }

  /// \effects takes `c`, a chunk with no live block and on no heap's list.
  void push(tc_chunk* c) noexcept {
    c->owner = nullptr;
    c->next = free_;
    free_ = c;
    if constexpr (decommits) {
      c->freed_at = os::now_ms();
      tick(c->freed_at);
    }
  }

  /// \returns a wholly free chunk, or null.
  tc_chunk* pop() noexcept {
    tick();
    tc_chunk* c = free_;
    if (c != nullptr) {
      free_ = c->next;
    }
    return c;
  }

  /// \effects purges (below) if it is time; what every call that takes or returns memory does.
  void tick(std::uint64_t now = 0) noexcept {
    if constexpr (decommits) {
      now = now != 0 ? now : os::now_ms();
      if (now >= next_purge_) {
        purge(now, false);
      }
    }
  }

  /// \effects decommits the depot's chunks that waited `Upstream::delay_ms` since `now` (every
  /// one if `everything`), then lets the upstream give back what it keeps. \returns the bytes
  /// given back. Nothing without an upstream that decommits.
  std::size_t purge(std::uint64_t now, bool everything) noexcept {
    std::size_t given = 0;
    if constexpr (decommits) {
      for (tc_chunk* c = free_; c != nullptr; c = c->next) {
        if (c->freed_at != 0 && (everything || now - c->freed_at >= Upstream::delay_ms)) {
          // The header's page stays: it links the chunk into this list.
          upstream_.decommit(tc_base_of(c) + page_size, tc_chunk_size - page_size);
          c->freed_at = 0;
          given += tc_chunk_size - page_size;
        }
      }
      given += upstream_.purge(everything);
      next_purge_ = now + Upstream::delay_ms / 2;
    }
    return given;
  }

  /// \returns a new chunk from the upstream, aligned to its size and recorded in the map, or null.
  tc_chunk* obtain() noexcept {
    void* base = upstream_try_allocate(tc_chunk_size, tc_chunk_size);
    if (base == nullptr) {
      return nullptr;
    }
    auto* c = ::new (tc_header_at(base)) tc_chunk{};
    c->bytes = tc_chunk_size;
    if (!map_.insert(counted_, base, tc_chunk_size)) {
      upstream_deallocate(base, tc_chunk_size, tc_chunk_size);
      return nullptr;
    }
    c->link_next = chunks_;
    chunks_ = c;
    return c;
  }

  /// \returns a block of `n` bytes aligned to `alignment` (a power of two) in a region of its own,
  /// aligned to the larger of `alignment` and a chunk, right after the region's header; or null.
  /// The block lies within tc_header_room bytes, rounded up to `alignment`, of the region's base;
  /// at an alignment of a chunk or more the header is found only through `find` (tc_chunk_of
  /// would mask the block's address to the block itself).
  /// Null also for a size too large for any region.
  void* allocate_large(std::size_t n, std::size_t alignment) noexcept {
    tick();
    const std::size_t bytes = large_region(n, alignment);
    void* base = bytes == 0 ? nullptr : upstream_try_allocate(bytes, large_alignment(alignment));
    if (base == nullptr) {
      return nullptr;
    }
    auto* c = ::new (tc_header_at(base)) tc_chunk{};
    c->cls = tc_large_class;
    c->bytes = bytes;
    c->blocks = tc_base_of(c) + round_up(address(c + 1) - address(base), alignment);
    c->size = n;
    if (!map_.insert(counted_, base, c->bytes)) {
      upstream_deallocate(base, c->bytes, large_alignment(alignment));
      return nullptr;
    }
    c->link_next = large_;
    if (large_ != nullptr) {
      large_->link_prev = c;
    }
    large_ = c;
    return c->blocks;
  }

  /// \effects gives the region of large block header `c` back to the upstream.
  void free_large(tc_chunk* c) noexcept {
    tick();
    map_.erase(tc_base_of(c), c->bytes);
    if (c->link_prev != nullptr) {
      c->link_prev->link_next = c->link_next;
    } else {
      large_ = c->link_next;
    }
    if (c->link_next != nullptr) {
      c->link_next->link_prev = c->link_prev;
    }
    upstream_deallocate(tc_base_of(c), c->bytes, large_alignment(c));
  }

  /// \returns an exited thread's heap, whole, or a new one; null if none could be made.
  Heap* adopt_or_make() noexcept {
    Heap* h = abandoned_;
    if (h != nullptr) {
      abandoned_ = h->next_abandoned;
      h->abandoned = false;
      return h;
    }
    void* p = upstream_try_allocate(sizeof(Heap), alignof(Heap));
    if (p == nullptr) {
      return nullptr;
    }
    h = ::new (p) Heap;
    h->next_heap = heaps_;
    heaps_ = h;
    ++heap_count_;
    return h;
  }

  /// \effects moves `h`'s free chunks here and lists it for adoption.
  void abandon(Heap& h) noexcept {
    take_free_chunks(h);
    h.abandoned = true;
    h.next_abandoned = abandoned_;
    abandoned_ = &h;
  }

  /// \effects moves here the spares and the pinned but otherwise empty current chunks of `h`, a
  /// heap without a thread.
  void take_free_chunks(Heap& h) noexcept {
    for (std::size_t cls = 0; cls < sizeof h.bins / sizeof h.bins[0]; ++cls) {
      tc_chunk* c = h.bins[cls].current;
      if (c != &tc_empty_chunk && c->used == 1) {
        c->used = 0;
        c->in_bin = false;
        h.set_current(cls, &tc_empty_chunk);
        push(c);
      }
    }
    while (tc_chunk* c = h.spare) {
      h.spare = c->next;
      push(c);
    }
    h.spare_count = 0;
  }

  /// \effects calls `f(heap&)` for every heap waiting for adoption.
  template <class F>
  void for_each_abandoned(F&& f) noexcept {
    for (Heap* a = abandoned_; a != nullptr; a = a->next_abandoned) {
      f(*a);
    }
  }

  /// \effects calls `f(const heap&)` for every heap.
  template <class F>
  void for_each_heap(F&& f) const noexcept {
    for (const Heap* h = heaps_; h != nullptr; h = h->next_heap) {
      f(*h);
    }
  }

  std::size_t heap_count() const noexcept { return heap_count_; }

  /// \effects adds the upstream counters of docs/statistics.md to `s`.
  void add_upstream_counts(statistics& s) const noexcept {
    s.upstream_allocations += upstream_allocations_;
    s.upstream_deallocations += upstream_deallocations_;
    s.upstream_bytes_in_use = upstream_bytes_;
  }

  /// \returns the chunk or large-region header covering `p`, or null. Lock-free.
  tc_chunk* find(const void* p) const noexcept { return tc_header_at(map_.find(p)); }

  /// \effects every chunk, region, heap and map node goes back to the upstream.
  /// \requires quiescence; the mutex held or not.
  void release() noexcept {
    for (tc_chunk* c = chunks_; c != nullptr;) {
      tc_chunk* const next = c->link_next;
      unpoison_kept(tc_base_of(c), tc_chunk_size);
      upstream_deallocate(tc_base_of(c), tc_chunk_size, tc_chunk_size);
      c = next;
    }
    for (tc_chunk* c = large_; c != nullptr;) {
      tc_chunk* const next = c->link_next;
      unpoison_kept(tc_base_of(c), c->bytes);
      upstream_deallocate(tc_base_of(c), c->bytes, large_alignment(c));
      c = next;
    }
    for (Heap* h = heaps_; h != nullptr;) {
      Heap* const next = h->next_heap;
      h->~Heap();
      upstream_deallocate(h, sizeof(Heap), alignof(Heap));
      h = next;
    }
    map_.release(counted_);
    chunks_ = large_ = free_ = nullptr;
    heaps_ = abandoned_ = nullptr;
    heap_count_ = 0;
  }

  Upstream& upstream() noexcept { return upstream_; }

private:
  // The bytes a region for `n` bytes aligned to `alignment` takes, or 0 if too many.
  static std::size_t large_region(std::size_t n, std::size_t alignment) noexcept {
    const std::size_t room = round_up(tc_header_room, alignment);
    return n > unbounded_size - room ? 0 : room + n;
  }

  static std::size_t large_alignment(std::size_t alignment) noexcept {
    return alignment > tc_chunk_size ? alignment : tc_chunk_size;
  }
  // The block's offset is below a chunk unless the alignment is a chunk or more; then it is the
  // alignment.
  static std::size_t large_alignment(const tc_chunk* c) noexcept {
    return large_alignment(static_cast<std::size_t>(c->blocks - tc_base_of(c)));
  }

  void* upstream_try_allocate(std::size_t bytes, std::size_t alignment) noexcept {
    void* p = upstream_.try_allocate(bytes, alignment);
    if (p != nullptr) {
      ++upstream_allocations_;
      upstream_bytes_ += bytes;
    }
    return p;
  }
  void upstream_deallocate(void* p, std::size_t bytes, std::size_t alignment) noexcept {
    upstream_.deallocate(p, bytes, alignment);
    ++upstream_deallocations_;
    upstream_bytes_ -= bytes;
  }

  // The upstream as the chunk map sees it, every call counted.
  struct counted_upstream {
    tc_depot& d;
    void* try_allocate(std::size_t bytes, std::size_t alignment) noexcept {
      return d.upstream_try_allocate(bytes, alignment);
    }
    void deallocate(void* p, std::size_t bytes, std::size_t alignment) noexcept {
      d.upstream_deallocate(p, bytes, alignment);
    }
  };

  mutable std::mutex mutex_;
  tc_chunk* free_ = nullptr;   ///< the depot proper: wholly free chunks, any class
  tc_chunk* chunks_ = nullptr; ///< every small chunk, through link_next
  tc_chunk* large_ = nullptr;  ///< every large region
  Heap* heaps_ = nullptr;      ///< every heap
  Heap* abandoned_ = nullptr;  ///< heaps whose thread exited
  std::size_t heap_count_ = 0;
  std::uint64_t next_purge_ = 0; ///< decommitting upstreams: the earliest time to look again
  std::size_t upstream_allocations_ = 0;
  std::size_t upstream_deallocations_ = 0;
  std::size_t upstream_bytes_ = 0;
  chunk_map<tc_chunk_shift> map_;
  Upstream upstream_;
  counted_upstream counted_{*this};
};

} // namespace detail
} // namespace MEMKIT_ABI
} // namespace memkit
