// SPDX-License-Identifier: BSL-1.0
// memkit/detail/thread/depot.hpp: what the per-thread heaps of a thread-caching resource share:
// wholly free chunks, the upstream, the chunk map, large regions and the pool of heaps.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <new>
#include <type_traits>
#include <utility>

#include "../../config.hpp"
#include "../../stats.hpp"
#include "../base/assert.hpp"
#include "../base/poison.hpp"
#include "../chunk_map.hpp"
#include "chunk.hpp"
#include "decay.hpp"
#include "large.hpp"

namespace memkit {
inline namespace MEMKIT_ABI {
namespace detail {
namespace thread {

/// The shared side of docs/threads.md's thread_cached, behind one mutex that the allocation and
/// free fast paths never take. It holds:
/// - the depot proper: chunks whose blocks are all free, of any class, that heaps hand back above
///   their bound and take before a new chunk is obtained, given back to the OS by `decay`;
/// - every chunk and large region obtained from the upstream (for `release`), and the chunk map
///   that finds them from an address;
/// - every heap, and the list of heaps whose thread exited, waiting to be adopted whole.
///
/// Every member requires `mutex()` held, except `find` (lock-free, detail/chunk_map.hpp) and
/// `release`, which requires quiescence. The upstream is called only from here, hence only under
/// the mutex: it need not be thread-safe.
template <class Upstream, class Heap>
class depot {
public:
  static constexpr bool decommits = decay<Upstream>::enabled;

  explicit depot(Upstream&& upstream) noexcept : upstream_(std::move(upstream)) {}
  depot(const depot&) = delete;
  depot& operator=(const depot&) = delete;
  ~depot() { MEMKIT_ASSERT_INTERNAL(chunks_ == nullptr && large_.empty()); }

  std::mutex& mutex() const noexcept { return mutex_; }

  /// \effects takes `c`, a chunk with no live block and on no heap's list.
  void push(chunk* c) noexcept {
    c->owner = nullptr;
    c->next = free_;
    free_ = c;
    decay_.on_enter(c, upstream_);
    tick(c->freed_at);
  }

  /// \returns a wholly free chunk, last of class `cls` if one is near the top (link_for_class),
  /// or null (also when its decommitted pages cannot be recommitted).
  chunk* pop(std::uint32_t cls) noexcept {
    tick();
    chunk** const link = link_for_class(&free_, cls);
    chunk* c = *link;
    if (c != nullptr) {
      if (!decay<Upstream>::on_leave(c, upstream_)) {
        return nullptr;
      }
      *link = c->next;
    }
    return c;
  }

  /// \effects gives back what waited long enough (decay.hpp), if it is time; what every call that
  /// takes or returns memory does. `now` 0: read the clock.
  void tick(std::uint64_t now = 0) noexcept {
    if (decay_.due(now)) {
      decay_.purge(free_, upstream_, now, false);
    }
  }

  /// \effects gives back every wholly free chunk's pages at once (`everything`), or those that
  /// waited long enough. \returns the bytes given back; 0 unless the upstream decommits.
  std::size_t purge(std::uint64_t now, bool everything) noexcept {
    return decay_.purge(free_, upstream_, now, everything);
  }

  /// \returns a new chunk from the upstream, aligned to its size and recorded in the map, or null.
  chunk* obtain() noexcept {
    void* base = counted_.try_allocate(chunk_size, chunk_size);
    if (base == nullptr) {
      return nullptr;
    }
    auto* c = ::new (header_at(base)) chunk{};
    c->bytes = chunk_size;
    if (!map_.insert(counted_, base, chunk_size)) {
      counted_.deallocate(base, chunk_size, chunk_size);
      return nullptr;
    }
    c->link_next = chunks_;
    chunks_ = c;
    return c;
  }

  /// \returns a block of `n` bytes aligned to `alignment` alone in a chunk if it fits one, else
  /// in a region of its own (large.hpp); or null.
  void* allocate_large(std::size_t n, std::size_t alignment) noexcept {
    if (large_regions::fits_chunk(n, alignment)) {
      chunk* c = pop(large_class);
      if (c == nullptr && (c = obtain()) == nullptr) {
        return nullptr;
      }
      return large_regions::place_in_chunk(c, n, alignment);
    }
    tick();
    return large_.allocate(n, alignment, counted_, map_);
  }

  /// \effects takes back the chunk of large block header `c`, or gives its region back to the
  /// upstream.
  void free_large(chunk* c) noexcept {
    if (large_regions::in_chunk(c)) {
      poison(c->blocks, c->size);
      push(c);
      return;
    }
    tick();
    large_.free(c, counted_, map_);
  }

  /// \returns whether large block header `c`, in a region of its own, now holds `n` bytes at its
  /// block, its region grown where it lies if needed (large_regions::grow).
  bool grow_large(chunk* c, std::size_t n) noexcept {
    MEMKIT_ASSERT_INTERNAL(c->is_large() && !large_regions::in_chunk(c));
    return large_regions::grow(c, n, counted_, map_);
  }

  /// How many abandoned heaps, newest first, adopt_or_make compares.
  static constexpr std::size_t adoption_scan = 8;

  /// \returns an exited thread's heap, whole, or a new one; null if none could be made. A thread
  /// that binds by freeing a block of `owner`, an exited thread's heap, adopts that one: the block
  /// is freed where it lies and reused there (a thread of leak-on-exit frees first what a thread of
  /// the round before left, and allocates after). Otherwise, of the newest `adoption_scan`, a
  /// thread that binds by allocating (`allocating`) adopts the heap with the most current chunks,
  /// and one that binds by freeing a running thread's block the heap with the fewest: a thread that
  /// only frees (xmalloc's consumers) would otherwise hold an exited producer's chunks, and the
  /// blocks freed into them, where no thread allocates, while the next producers took new ones.
  Heap* adopt_or_make(const Heap* owner = nullptr, bool allocating = true) noexcept {
    Heap** pick = nullptr;
    if (owner != nullptr && owner->abandoned) {
      for (pick = &abandoned_; *pick != owner;) {
        pick = &(*pick)->next_abandoned;
      }
    } else {
      std::size_t best = 0;
      std::size_t seen = 0;
      for (Heap** a = &abandoned_; *a != nullptr && seen < adoption_scan;
           a = &(*a)->next_abandoned, ++seen) {
        const std::size_t n = (*a)->current_chunks();
        if (pick == nullptr || (allocating ? n > best : n < best)) {
          pick = a;
          best = n;
        }
      }
    }
    if (pick != nullptr) {
      Heap* const h = *pick;
      *pick = h->next_abandoned;
      h->abandoned = false;
      return h;
    }
    void* p = counted_.try_allocate(sizeof(Heap), alignof(Heap));
    if (p == nullptr) {
      return nullptr;
    }
    Heap* const h = ::new (p) Heap;
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
      chunk* c = h.bins[cls].current;
      if (c != &empty_chunk && c->used == 1) {
        c->used = 0;
        c->in_bin = false;
        h.set_current(cls, &empty_chunk);
        push(c);
      }
    }
    while (chunk* c = h.pop_spare()) {
      push(c);
    }
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
  void add_upstream_counts(statistics& s) const noexcept { upstream_counts_.add_to(s); }

  /// \returns the chunk or large-region header covering `p`, or null. Lock-free.
  chunk* find(const void* p) const noexcept { return header_at(map_.find(p)); }

  /// \effects every chunk, region, heap and map node goes back to the upstream.
  /// \requires quiescence; the mutex held or not.
  void release() noexcept {
    for (chunk* c = chunks_; c != nullptr;) {
      chunk* const next = c->link_next;
      unpoison_kept(base_of(c), chunk_size);
      counted_.deallocate(base_of(c), chunk_size, chunk_size);
      c = next;
    }
    large_.release(counted_);
    for (Heap* h = heaps_; h != nullptr;) {
      Heap* const next = h->next_heap;
      h->~Heap();
      counted_.deallocate(h, sizeof(Heap), alignof(Heap));
      h = next;
    }
    map_.release(counted_);
    chunks_ = free_ = nullptr;
    heaps_ = abandoned_ = nullptr;
    heap_count_ = 0;
  }

  Upstream& upstream() noexcept { return upstream_; }

private:
  // The upstream as the depot's parts see it, every call counted (docs/statistics.md).
  struct counted_upstream {
    static constexpr bool hands_out_zeroed = detail::hands_out_zeroed<Upstream>::value;
    depot& d;
    void* try_allocate(std::size_t bytes, std::size_t alignment) noexcept {
      void* p = d.upstream_.try_allocate(bytes, alignment);
      if (p != nullptr) {
        d.upstream_counts_.on_upstream_allocate(bytes);
      }
      return p;
    }
    void deallocate(void* p, std::size_t bytes, std::size_t alignment) noexcept {
      d.upstream_.deallocate(p, bytes, alignment);
      d.upstream_counts_.on_upstream_deallocate(bytes);
    }
    template <class U = Upstream, std::enable_if_t<grows_regions<U>::value, int> = 0>
    bool grow_region(void* p, std::size_t bytes, std::size_t new_bytes) noexcept {
      if (!d.upstream_.grow_region(p, bytes, new_bytes)) {
        return false;
      }
      d.upstream_counts_.on_upstream_grow(new_bytes - bytes);
      return true;
    }
  };

  mutable std::mutex mutex_;
  chunk* free_ = nullptr;   ///< the depot proper: wholly free chunks, any class
  chunk* chunks_ = nullptr; ///< every small chunk, through link_next
  large_regions large_;
  Heap* heaps_ = nullptr;     ///< every heap
  Heap* abandoned_ = nullptr; ///< heaps whose thread exited
  std::size_t heap_count_ = 0;
  decay<Upstream> decay_;
  /// Only the upstream counters move (under the mutex).
  counters_if_enabled<plain_cell> upstream_counts_;
  chunk_map<chunk_shift> map_;
  Upstream upstream_;
  counted_upstream counted_{*this};
};

} // namespace thread
} // namespace detail
} // namespace MEMKIT_ABI
} // namespace memkit
