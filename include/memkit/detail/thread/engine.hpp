// SPDX-License-Identifier: BSL-1.0
// memkit/detail/thread/engine.hpp: what both thread-caching resources (thread_cached.hpp) and the
// global replacement (src/) run on: the allocation and free paths over the parts of this folder.
#pragma once

// Glossary (docs/threads.md tells the whole story):
// - block: what a caller gets; lies in a *chunk* (64 KiB, aligned to its size, chunk.hpp) of one
//   size *class*, or alone in a *large region* (large.hpp).
// - heap: one thread's cache (heap.hpp). Per class it has a *current* chunk, which allocation pops,
//   and a *partial* list of the others not full (free blocks, or blocks not carved yet); a chunk
//   with every block out is *floating* (on no list) until one comes back; wholly free chunks are
//   kept as *spares* up to a bound.
// - pin: the current chunk's `used` counts one extra, so it never looks empty while current.
// - depot: what heaps share, behind one lock (depot.hpp): wholly free chunks of any class, the
//   chunk map, large regions, every heap. *decay* (decay.hpp) is when its memory goes back.
// - remote free: a block freed by a thread whose heap does not own it. It is added to a *batch*
//   for its owner (remote.hpp's remote_cache), the batch is *posted* to the owner's
//   remote_queue with one CAS, and the owner *takes* the queue whole when it runs dry. Up to a
//   bound per class, the freeing thread first *keeps* it instead (heap::foreign), and hands it out
//   again before carving new memory: a *foreign* block.
// - bind / unbind: a thread gets a heap on its first call (thread/registry.hpp); at its exit the
//   heap is *abandoned*, chunks with live blocks included, and *adopted* whole by the next new
//   thread; meanwhile others *reclaim* what was freed to it.
// - shared heap: serves threads that cannot have a heap of their own, under a lock.

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <mutex>
#include <new>
#include <utility>

#include "../../config.hpp"
#include "../../error.hpp"
#include "../../resource.hpp"
#include "../../stats.hpp"
#include "../base/align.hpp"
#include "../base/assert.hpp"
#include "../base/poison.hpp"
#include "chunk.hpp"
#include "depot.hpp"
#include "heap.hpp"
#include "registry.hpp"
#include "remote.hpp"

namespace memkit {
inline namespace MEMKIT_ABI {
namespace detail {
namespace thread {

/// The size classes of the any-size form (thread_cached and the global replacement): multipool's
/// (size_class.hpp) up to max_class_size, one bin each.
inline constexpr std::size_t any_size_bins = class_index(max_class_size) + 1;
struct class_table_sizes {
  std::uint32_t sizes[any_size_bins];
};
inline constexpr class_table_sizes any_size_classes = [] {
  class_table_sizes t{};
  for (std::size_t i = 0; i < any_size_bins; ++i) {
    t.sizes[i] = static_cast<std::uint32_t>(class_size(i));
  }
  return t;
}();

/// The machinery of docs/threads.md, "thread_cached": `Bins` size classes whose sizes the resource
/// sets; the resource maps requests to classes and checks them. Public members that take a
/// `heap*` are for a caller that keeps the calling thread's heap itself (the global replacement,
/// in one TLS load): `mine` is then `current_heap()`.
template <class Upstream, std::size_t Bins>
class engine {
public:
  using heap = thread::heap<Bins>;
  /// `expected_class` of `check_free` for a free without a size.
  static constexpr std::size_t any_class = static_cast<std::size_t>(-1);

  /// `cached_chunks`, `batch_blocks`: thread_cached_options (thread_cached.hpp).
  /// `refills_tick`: whether a heap sends home the foreign blocks it does not use every
  /// refills_per_tick refills (the resources), or the caller calls tick() itself (the global
  /// replacement, every so many frees).
  engine(const char* name, const std::uint32_t* class_sizes, std::size_t class_count,
         std::size_t cached_chunks, std::size_t batch_blocks, Upstream&& upstream,
         bool refills_tick = true) noexcept
      : name_(name), class_count_(class_count), cached_chunks_(cached_chunks),
        batch_blocks_(batch_blocks == 0 ? 1 : batch_blocks), refills_tick_(refills_tick),
        depot_(std::move(upstream)) {
    for (std::size_t i = 0; i < class_count; ++i) {
      class_size_[i] = class_sizes[i];
      const std::size_t by_bytes = foreign_bytes / class_sizes[i];
      foreign_limit_[i] = static_cast<std::uint16_t>(by_bytes < foreign_min   ? foreign_min
                                                     : by_bytes > foreign_max ? foreign_max
                                                                              : by_bytes);
    }
    key_ = registry::get().enroll(this, &unbind_thunk);
  }

  engine(const engine&) = delete;
  engine& operator=(const engine&) = delete;

  ~engine() {
    registry::get().withdraw(key_);
    give_back_everything();
  }

  std::size_t class_size(std::size_t cls) const noexcept { return class_size_[cls]; }

  // ---- Allocation: the fast paths pop the current chunk's free list; the rest is out of line.

  /// \returns a block of class `cls` for a request of `bytes`, or null.
  MEMKIT_ALWAYS_INLINE void* allocate(std::size_t cls, std::size_t bytes) noexcept {
    return allocate(my_heap(), cls, bytes);
  }

  /// allocate with the calling thread's heap already found (current_heap(), or null).
  MEMKIT_ALWAYS_INLINE void* allocate(heap* mine, std::size_t cls, std::size_t bytes) noexcept {
    if (MEMKIT_LIKELY(mine != nullptr)) {
      if (void* const p = pop_current(*mine, cls, bytes); MEMKIT_LIKELY(p != nullptr)) {
        return p;
      }
    }
    return refill_and_allocate(mine, cls, bytes);
  }

  /// allocate for a request of at most table_class_limit bytes, in the any-size form: the class
  /// and its current chunk found from the size in one load (heap::direct).
  MEMKIT_ALWAYS_INLINE void* allocate_small(std::size_t bytes) noexcept {
    heap* const mine = my_heap();
    if (MEMKIT_LIKELY(mine != nullptr)) {
      if (void* const p = pop_small(*mine, bytes); MEMKIT_LIKELY(p != nullptr)) {
        return p;
      }
    }
    return refill_and_allocate(mine, table_class_index(bytes), bytes);
  }

  /// The allocation fast path alone: a block of class `cls` from the current chunk of `mine`, or
  /// null when that chunk's free list is empty (allocate then refills it).
  MEMKIT_ALWAYS_INLINE static void* pop_current(heap& mine, std::size_t cls,
                                                std::size_t bytes) noexcept {
    return pop(mine, mine.bins[cls].current, bytes);
  }

  /// pop_current with the chunk found through the heap's direct table: a size up to
  /// table_class_limit, in the any-size form.
  MEMKIT_ALWAYS_INLINE static void* pop_small(heap& mine, std::size_t bytes) noexcept {
    static_assert(heap::direct_steps != 0, "the any-size form's classes only");
    chunk* const c = mine.direct[(bytes + class_granularity - 1) / class_granularity];
    MEMKIT_ASSERT_INTERNAL(c == mine.bins[table_class_index(bytes)].current);
    return pop(mine, c, bytes);
  }

  /// The allocation fast path's second step in the any-size form, for a caller that keeps the
  /// calling thread's heap itself, when pop_small found the current chunk empty: a foreign block
  /// of the class of `bytes` (at most table_class_limit) that `mine` keeps, or null. Inline, so a
  /// thread that allocates the blocks it freed of other heaps (a server thread taking over what
  /// an exited one allocated) pays no call for them.
  MEMKIT_ALWAYS_INLINE static void* pop_foreign_small(heap& mine, std::size_t bytes) noexcept {
    static_assert(heap::direct_steps != 0, "the any-size form's classes only");
    const std::size_t cls = table_class_index(bytes);
    return hand_out_kept(mine, cls, detail::class_size(cls), bytes);
  }

  /// The second step of refill alone, for a caller that keeps the calling thread's heap itself
  /// and whose fast path found the current chunk empty: a foreign block of class `cls` that `mine`
  /// keeps, or null (then the whole slow path).
  void* pop_foreign(heap& mine, std::size_t cls, std::size_t bytes) noexcept {
    return hand_out_kept(mine, cls, class_size_[cls], bytes);
  }

  /// \returns a region of its own for `bytes` aligned to `alignment` (at most page_size, or any
  /// power of two for a caller that finds headers through `find`), or null.
  MEMKIT_NOINLINE void* allocate_large(std::size_t bytes, std::size_t alignment) noexcept {
    const std::size_t n = bytes == 0 ? 1 : bytes;
    void* p = nullptr;
    {
      const std::lock_guard<std::mutex> lock(depot_.mutex());
      if ((p = depot_.allocate_large(n, alignment)) == nullptr) {
        return fail();
      }
    }
    count_allocation(bytes);
    return p;
  }

  /// \returns whether the large block of header `c`, in a region of its own, now holds `bytes`
  /// at its block: its region grown where it lies if it did not and the upstream can
  /// (large_regions::grow). \requires the caller owns the block.
  bool grow_large(chunk* c, std::size_t bytes) noexcept {
    const std::lock_guard<std::mutex> lock(depot_.mutex());
    return depot_.grow_large(c, bytes);
  }

  // ---- Free: a block of a chunk the calling thread's heap owns goes on that chunk's free list;
  // anything else (another heap's block, a large block, no heap yet) goes out of line.

  /// \effects frees `p`, a block of this resource allocated for `bytes`.
  MEMKIT_ALWAYS_INLINE void free(void* p, std::size_t bytes) noexcept {
    free(p, chunk_of(p), bytes);
  }

  /// free with the header of `p`'s chunk or large region already found (`find`).
  MEMKIT_ALWAYS_INLINE void free(void* p, chunk* c, std::size_t bytes) noexcept {
    free(p, c, my_heap(), bytes);
  }

  /// free with the calling thread's heap already found: `mine` is current_heap(). Null only when
  /// none is bound: the call then binds one, which the caller must use from then on (a null
  /// passed again would bind yet another heap).
  MEMKIT_ALWAYS_INLINE void free(void* p, chunk* c, heap* mine, std::size_t bytes) noexcept {
    if (MEMKIT_LIKELY(mine != nullptr && c->owner == mine)) {
      mine->counters.on_deallocate(bytes);
      free_into(*mine, c, p, false);
      return;
    }
    keep_or_free_elsewhere(p, c, mine, bytes);
  }

  /// \returns the bytes usable at `p`: its class size, or a large block's requested size.
  /// \requires `p` is a live block of this resource.
  static std::size_t usable_size(const void* p) noexcept { return usable_size(chunk_of(p)); }
  /// usable_size of the block whose header is `c`.
  static std::size_t usable_size(const chunk* c) noexcept {
    return c->is_large() ? c->size : c->block_size;
  }

  // ---- Checks and lookups.

  /// \returns whether `p` may be freed as a block of `expected_class` (any_class: any block),
  /// reporting the misuse otherwise. O(1) (a chunk-map lookup and the header) below
  /// `MEMKIT_DEBUG` 3, which also walks the chunk's free list and the outgoing batches.
  bool check_free(void* p, std::size_t bytes, std::size_t alignment,
                  std::size_t expected_class) const noexcept {
    chunk* const c = depot_.find(p);
    misuse verdict = misuse::foreign_pointer;
    if (c == nullptr) {
      // not ours
    } else if (c->is_large()) {
      if (p != c->blocks) {
        // an interior pointer
      } else if (expected_class != any_class &&
                 (expected_class != large_class || (bytes == 0 ? 1 : bytes) != c->size)) {
        verdict = misuse::size_mismatch;
      } else {
        return true;
      }
    } else if (p < c->blocks ||
               static_cast<std::size_t>(static_cast<char*>(p) - c->blocks) % c->block_size != 0) {
      // inside a chunk but not at a block
    } else if (c->owner == nullptr) {
      verdict = misuse::double_free; // the whole chunk is free, in the depot
    } else if (expected_class != any_class && expected_class != c->cls) {
      verdict = misuse::size_mismatch;
    } else if (const heap* const mine = my_heap();
               mine == c->owner && static_cast<const char*>(p) >= c->fresh.next()) {
      // never handed out: not a block yet
    } else if (is_free(p, c, mine)) {
      verdict = misuse::double_free;
    } else {
      return true;
    }
    report_misuse(verdict, name_, p, bytes, alignment);
    return false;
  }

  /// \returns whether `p` points into a block this resource handed out or may hand out (a small
  /// chunk's blocks, a large block's bytes). O(1), any thread.
  bool owns(const void* p) const noexcept {
    const chunk* c = depot_.find(p);
    if (c == nullptr) {
      return false;
    }
    if (c->is_large()) {
      return in_range(p, c->blocks, c->size);
    }
    return in_range(p, c->blocks, static_cast<std::size_t>(base_of(c) + chunk_size - c->blocks));
  }

  /// \returns the header of the chunk or large region holding `p`, or null if `p` lies in no
  /// memory of this resource. Lock-free, any thread; reads no memory at `p`.
  chunk* find(const void* p) const noexcept { return depot_.find(p); }

  /// \returns the calling thread's heap, or null (none bound yet, or its exit began).
  heap* current_heap() const noexcept { return my_heap(); }

  /// Called on a thread that is exiting, before its heap is given up: for a caller that keeps its
  /// own per-thread pointer to the heap (the malloc replacement's), which must drop it then.
  using unbind_listener = void (*)() noexcept;
  void on_unbind(unbind_listener f) noexcept { unbind_listener_ = f; }

  // ---- Memory going back, fork, release, statistics.

  /// fork(2) support (pthread_atfork in the malloc replacement): takes every lock of the engine,
  /// in the order the engine nests them, so the child inherits none held by a thread it lacks.
  void prepare_fork() noexcept {
    shared_mutex_.lock();
    depot_.mutex().lock();
  }
  /// \effects releases what prepare_fork took, in the parent and in the child.
  void after_fork() noexcept {
    depot_.mutex().unlock();
    shared_mutex_.unlock();
  }

  /// \effects gives every wholly free chunk's pages in the depot back to the upstream's OS, and
  /// what the upstream keeps (malloc_trim), after taking back what exited threads' heaps hold
  /// (reclaim_abandoned). \returns the bytes given back; 0 unless the upstream decommits
  /// (decay.hpp).
  std::size_t trim() noexcept {
    const std::lock_guard<std::mutex> lock(depot_.mutex());
    reclaim_abandoned();
    return depot_.purge(os::now_ms(), true);
  }

  /// \effects sends home the blocks of other heaps the calling thread's heap keeps of each class
  /// none was handed out of since its last tick that found blocks kept (a thread that frees what
  /// others allocated but does not allocate that class itself would hold them until its exit), and
  /// gives back what has waited long enough (decay.hpp), as any visit to the depot does: for a
  /// caller whose threads run on their caches alone for a long time, every so many frees.
  void tick() noexcept {
    if (heap* const h = my_heap(); h != nullptr) {
      send_unused_foreign_home(*h);
    }
    if constexpr (depot_type::decommits) {
      const std::lock_guard<std::mutex> lock(depot_.mutex());
      depot_.tick();
    }
  }

  /// \effects every chunk, large block and heap goes back to the upstream; bindings of threads go
  /// stale (re-keyed), so each thread takes a fresh heap on its next call.
  /// \requires quiescence: no other thread uses the resource during the call.
  void release() noexcept {
    key_.id = registry::get().rekey(key_);
    give_back_everything();
  }

  /// \returns the heaps created so far and not released: at most the peak number of threads that
  /// used the resource at once, as exited threads' heaps are adopted by new threads.
  std::size_t heap_count() const noexcept {
    const std::lock_guard<std::mutex> lock(depot_.mutex());
    return depot_.heap_count();
  }

  /// \returns the counters of docs/statistics.md summed over the heaps (exact at quiescence;
  /// peaks are the largest sums seen by stats() calls).
  statistics stats() const noexcept {
    statistics s;
    if constexpr (statistics_enabled) {
      const std::lock_guard<std::mutex> lock(depot_.mutex());
      s = retired_;
      shared_.counters.add_to(s);
      unbound_.add_to(s);
      depot_.for_each_heap([&](const heap& h) { h.counters.add_to(s); });
      events_.add_to(s);
      depot_.add_upstream_counts(s);
      peak_bytes_ = s.bytes_in_use > peak_bytes_ ? s.bytes_in_use : peak_bytes_;
      peak_blocks_ = s.blocks_in_use > peak_blocks_ ? s.blocks_in_use : peak_blocks_;
      s.peak_bytes_in_use = peak_bytes_;
      s.peak_blocks_in_use = peak_blocks_;
    }
    return s;
  }

  Upstream& upstream() noexcept { return depot_.upstream(); }
  const char* name() const noexcept { return name_; }

  /// \returns null, counting a failed request.
  void* fail() noexcept {
    events_.on_failure();
    return nullptr;
  }

private:
  using depot_type = depot<Upstream, heap>;

  heap* my_heap() const noexcept { return static_cast<heap*>(registry::bound(key_)); }

  // A foreign block of class `cls` (blocks of `block_size`) that `mine` keeps, handed out for a
  // request of `bytes`; or null.
  MEMKIT_ALWAYS_INLINE static void*
  hand_out_kept(heap& mine, std::size_t cls, std::size_t block_size, std::size_t bytes) noexcept {
    void* const p = mine.take_foreign(cls);
    if (p != nullptr) {
      unpoison(p, block_size);
      mine.counters.on_allocate(bytes);
    }
    return p;
  }

  /// The allocation fast path for chunk `c`, the current chunk of a class of `mine`.
  MEMKIT_ALWAYS_INLINE static void* pop(heap& mine, chunk* c, std::size_t bytes) noexcept {
    if (MEMKIT_LIKELY(!c->free.empty())) {
      void* const p = c->free.pop();
      ++c->used;
      // The whole block is handed out, not just `bytes`: usable_size() promises every byte of
      // the class is writable, as malloc_usable_size(3) does. Poisoning therefore catches
      // overruns past the class size, not within it.
      unpoison(p, c->block_size);
      mine.counters.on_allocate(bytes);
      return p;
    }
    return nullptr;
  }

  void count_allocation(std::size_t bytes) noexcept {
    if (heap* h = my_heap(); h != nullptr) {
      h->counters.on_allocate(bytes);
    } else {
      const std::lock_guard<std::mutex> lock(shared_mutex_);
      shared_.counters.on_allocate(bytes);
    }
  }

  // The current chunk of `cls` had no free block, or the thread has no heap yet.
  MEMKIT_NOINLINE void* refill_and_allocate(heap* h, std::size_t cls, std::size_t bytes) noexcept {
    if (h == nullptr && (h = bind_heap(nullptr, true)) == nullptr) {
      // No per-thread heap: too many instances, the thread is exiting, or none could be made.
      const std::lock_guard<std::mutex> lock(shared_mutex_);
      void* p = refill(shared_, cls);
      if (p == nullptr) {
        return fail();
      }
      events_.on_fallback();
      unpoison(p, class_size_[cls]);
      shared_.counters.on_allocate(bytes);
      return p;
    }
    void* p = refill(*h, cls);
    if (p == nullptr) {
      return fail();
    }
    unpoison(p, class_size_[cls]);
    h->counters.on_allocate(bytes);
    return p;
  }

  static void* take(chunk* c) noexcept {
    ++c->used;
    return c->free.pop();
  }

  // A block of class `cls` for `h`, whose current chunk has no free block, in this order: a kept
  // foreign block; the free blocks of the first partly used chunk of the class; carve more of the
  // current chunk; post the outgoing batches and take what others posted here; a partly used
  // chunk of the class; a spare chunk; the depot; abandoned heaps' returns; the upstream. Null
  // only if the upstream has nothing.
  void* refill(heap& h, std::size_t cls) noexcept {
    typename heap::bin& b = h.bins[cls];
    chunk* c = b.current;
    if (!c->free.empty()) {
      return take(c);
    }
    if (void* const p = h.take_foreign(cls); p != nullptr) {
      return p; // its chunk counted it as used all along
    }
    if (refills_tick_ && (++h.refills & (refills_per_tick - 1)) == 0) {
      send_unused_foreign_home(h); // none of `cls` is kept now: the others' may go
    }
    if (!c->fresh.exhausted()) {
      if (chunk* const p = b.partial.front(); p != nullptr && !p->free.empty()) {
        return switch_current(h, cls, c, p);
      }
      return carve_and_take(c);
    }
    h.outgoing.template flush<heap>();
    if (h.remote.has_posts()) {
      take_remote_frees(h, false);
      if (!c->free.empty()) {
        return take(c);
      }
    }
    const bool filled = c != &empty_chunk;
    if (filled) {
      // Full: it floats, owned but on no list, until a block of it comes back (relist), which
      // counts its `used` down from 1 (chunk.hpp's invariants).
      MEMKIT_ASSERT_INTERNAL(c->used == c->capacity + 1); // with the pin
      c->in_bin = false;
      c->used = 1;
    }
    h.set_current(cls, &empty_chunk);
    if ((c = b.partial.front()) != nullptr) {
      h.unlink_partial(c);
    } else if ((c = claim_chunk(h, cls, filled)) == nullptr) {
      return nullptr;
    }
    return make_current_and_take(h, cls, c);
  }

  // Makes `c`, a chunk of class `cls` owned by `h` and on none of its lists, the current chunk of
  // the class (pinned), and takes a block of it.
  void* make_current_and_take(heap& h, std::size_t cls, chunk* c) noexcept {
    c->in_bin = true;
    ++c->used; // pin
    h.set_current(cls, c, foreign_limit_[cls]);
    return !c->free.empty() ? take(c) : carve_and_take(c);
  }

  // `c`, the current chunk of `cls`, has no free block but blocks to carve, and `p`, the first
  // partly used chunk of the class, has free blocks: `c` joins the partly used chunks and `p`
  // becomes current, so the blocks freed on pages already touched go out before carving touches a
  // new one. Without it a heap carved its current chunk to the end while freed blocks of the class
  // waited in other chunks: memkit-bench's larson-4t had 4 to 9 % more peak RSS (docs/threads.md).
  void* switch_current(heap& h, std::size_t cls, chunk* c, chunk* p) noexcept {
    // Its carved blocks are all out (none is free), and it has the pin.
    MEMKIT_ASSERT_INTERNAL(c->used > 1);
    --c->used; // unpinned
    h.unlink_partial(p);
    h.link_partial(c);
    return make_current_and_take(h, cls, p);
  }

  // Carves the blocks that begin in the page the carver has reached (at least one) onto the free
  // list and takes the first: memory is touched a page at a time, as mimalloc extends a page's
  // free list (mi_page_extend_free), and a class with a few live blocks keeps to the page its
  // chunk's header is in. Linking the blocks writes each one's first word, so a page's worth
  // carved from the middle of a page would touch the next page too.
  static void* carve_and_take(chunk* c) noexcept {
    const std::size_t s = c->block_size;
    const std::size_t to_page_end = page_size - address(c->fresh.next()) % page_size;
    std::size_t n = 0;
    char* const first = c->fresh.take_batch(s, (to_page_end + s - 1) / s, n);
    c->free.push_run(first + s, n - 1, s);
    ++c->used;
    return first;
  }

  // \effects puts `p`, a block of `c` that `h` owns, on `c`'s free list, and relists `c` if
  // that took its count to 0. One test serves both cases that need it, as a floating chunk
  // counts down from 1 (chunk.hpp); the current chunk, pinned, never needs it, so a
  // free-allocate ping-pong on one block never leaves the fast path.
  MEMKIT_ALWAYS_INLINE void free_into(heap& h, chunk* c, void* p, bool locked) noexcept {
    c->free.push(p, c->block_size);
    if (MEMKIT_UNLIKELY(--c->used == 0)) {
      relist(h, c, locked);
    }
  }

  // The count of `c`, owned by `h`, reached 0 as a block came back: the chunk floated (every
  // block out) and has a free block now, so it goes on the partial list with its true count;
  // or it is empty and leaves its list (keep_or_return).
  MEMKIT_NOINLINE void relist(heap& h, chunk* c, bool locked) noexcept {
    MEMKIT_ASSERT_INTERNAL(c != h.bins[c->cls].current);
    if (c->in_bin) {
      h.unlink_partial(c);
    } else {
      c->used = c->capacity - 1; // every block but the one just freed is out
      if (c->used != 0) {
        h.link_partial(c);
        return;
      }
    }
    keep_or_return(h, c, locked);
  }

  // A wholly free chunk of `h`: kept as a spare up to the bound, else handed to the depot.
  void keep_or_return(heap& h, chunk* c, bool locked) noexcept {
    MEMKIT_ASSERT_INTERNAL(c->used == 0 && c->owner == &h && h.spare_count <= cached_chunks_);
    c->in_bin = false;
    if (h.spare_count < cached_chunks_) {
      h.push_spare(c);
      return;
    }
    if (locked) {
      depot_.push(c);
    } else {
      const std::lock_guard<std::mutex> lock(depot_.mutex());
      depot_.push(c);
    }
  }

  // A chunk for class `cls` of `h`: a spare, the depot's, one of abandoned heaps' freed chunks,
  // or a new one from the upstream; null if none. Unless the class `filled` its current chunk
  // (and will carve the next as deep), a chunk another class carved gives back the pages that
  // class carved (decay::on_reassign): where threads come and go and take each other's chunks,
  // a class that needs a page of a chunk otherwise holds every page of it its last class
  // touched (memkit-bench's xmalloc-4t: peak RSS 17 % lower, docs/threads.md).
  chunk* claim_chunk(heap& h, std::size_t cls, bool filled) noexcept {
    const auto last = static_cast<std::uint32_t>(cls);
    chunk* c = h.pop_spare(last);
    if (c == nullptr) {
      const std::lock_guard<std::mutex> lock(depot_.mutex());
      if ((c = depot_.pop(last)) == nullptr) {
        reclaim_abandoned();
        if ((c = depot_.pop(last)) == nullptr && (c = depot_.obtain()) == nullptr) {
          return nullptr;
        }
      }
    }
    if (!filled) {
      decay<Upstream>::on_reassign(c, static_cast<std::uint32_t>(cls));
    }
    assign(c, h, cls);
    return c;
  }

  // Makes `c`, a chunk with no live block, one of class `cls` owned by `h`, its blocks not carved.
  // Blocks sit at the chunk's end, at multiples of the class size from it, so each is aligned to
  // the largest power of two dividing the class size (the chunk is aligned to its size).
  void assign(chunk* c, heap& h, std::size_t cls) noexcept {
    const std::size_t s = class_size_[cls];
    char* const end = base_of(c) + chunk_size;
    const std::size_t capacity = static_cast<std::size_t>(end - reinterpret_cast<char*>(c + 1)) / s;
    c->owner = &h;
    c->cls = static_cast<std::uint32_t>(cls);
    c->block_size = static_cast<std::uint32_t>(s);
    c->blocks = end - capacity * s;
    c->fresh = carver(c->blocks, end);
    c->free.clear();
    c->used = 0;
    c->capacity = static_cast<std::uint32_t>(capacity);
    c->prev = c->next = nullptr;
    c->in_bin = false;
    poison(c->blocks, capacity * s);
  }

  // Takes everything other threads posted to `h` and frees each block into its chunk; a block of
  // another heap, which came in a chain of kept blocks of several owners (send_class_home), goes
  // on to its owner's batch.
  void take_remote_frees(heap& h, bool locked) noexcept {
    bool sent_on = false;
    for (void* p = h.remote.take_all(); p != nullptr;) {
      void* const next = free_list::next(p);
      chunk* c = chunk_of(p);
      MEMKIT_ASSERT_INTERNAL(!c->is_large() && c->owner != nullptr);
      if (MEMKIT_LIKELY(c->owner == &h)) {
        free_into(h, c, p, locked);
      } else {
        h.outgoing.add(static_cast<heap*>(c->owner), p, c->block_size, batch_blocks_);
        sent_on = true;
      }
      p = next;
    }
    if (sent_on) {
      h.outgoing.template flush<heap>();
    }
  }

  // A free the fast path could not do, its most common case first, in a function small enough
  // to need no registers saved: another heap's small block, of a class this heap allocates, kept
  // here (heap::foreign). Everything else is free_elsewhere's.
  MEMKIT_NOINLINE void keep_or_free_elsewhere(void* p, chunk* c, heap* mine,
                                              std::size_t bytes) noexcept {
    if (mine != nullptr && c->cls < Bins && mine->keep_foreign(p, c->cls, c->block_size)) {
      mine->counters.on_deallocate(bytes);
      return;
    }
    free_elsewhere(p, c, mine, bytes);
  }

  // A free the fast path could not do and keep_or_free_elsewhere did not keep: a large block, a
  // thread without a heap, or a block of another heap (batched for its owner, remote.hpp).
  MEMKIT_NOINLINE void free_elsewhere(void* p, chunk* c, heap* h, std::size_t bytes) noexcept {
    if (c->is_large()) {
      if (h != nullptr) {
        h->counters.on_deallocate(bytes);
      } else {
        count_unbound_free(bytes);
      }
      const std::lock_guard<std::mutex> lock(depot_.mutex());
      depot_.free_large(c);
      return;
    }
    if (h == nullptr) {
      if ((h = bind_heap(static_cast<heap*>(c->owner), false)) != nullptr) {
        // With the heap just bound: freed where it is if the block is the heap's (an adopted
        // heap's), else kept or sent on.
        free(p, c, h, bytes);
        return;
      }
      count_unbound_free(bytes);
      if (c->owner == &shared_) {
        const std::lock_guard<std::mutex> lock(shared_mutex_);
        free_into(shared_, c, p, false);
      } else {
        free_chain one;
        prepend(one, p, c->block_size);
        static_cast<heap*>(c->owner)->remote.post(one);
      }
      return;
    }
    h->counters.on_deallocate(bytes);
    h->outgoing.add(static_cast<heap*>(c->owner), p, c->block_size, batch_blocks_);
  }

  // Adds every foreign block `h` keeps to its owner's outgoing batch (reclaim_abandoned).
  void send_foreign_home(heap& h) noexcept {
    for (std::size_t cls = 0; cls < class_count_; ++cls) {
      send_class_home(h, cls);
    }
  }

  // Sends home the foreign blocks `h` keeps of each class it handed none out of since the last
  // call that found blocks kept, and posts them (tick).
  void send_unused_foreign_home(heap& h) noexcept {
    unsigned kept = 0; // whether any class keeps a block: a few vector instructions
    for (const std::uint16_t n : h.foreign_count) {
      kept |= n;
    }
    if (kept == 0) {
      return;
    }
    for (std::size_t cls = 0; cls < class_count_; ++cls) {
      if (h.foreign_count[cls] != 0 && !h.foreign_taken[cls]) {
        send_class_home(h, cls);
      }
    }
    std::fill(std::begin(h.foreign_taken), std::end(h.foreign_taken), false);
    h.outgoing.template flush<heap>();
  }

  // Sends every foreign block of class `cls` that `h` keeps home as one chain, posted to the
  // owner of the newest: no walk over them here, where they have gone cold. A block among them
  // that another heap owns is sent on by the heap that takes the chain (take_remote_frees).
  void send_class_home(heap& h, std::size_t cls) noexcept {
    if (const free_chain all = h.take_foreign_chain(cls); all.count != 0) {
      heap* const owner = static_cast<heap*>(chunk_of(all.first)->owner);
      MEMKIT_ASSERT_INTERNAL(owner != &h && owner != nullptr);
      owner->remote.post(all);
    }
  }

  // \returns whether `p`, a carved block of small chunk `c` (owned), is known free: at the head
  // of its chunk's free list, of the foreign blocks `mine` (the calling thread's heap, or null)
  // keeps of its class or of the batch `mine` holds for its owner; at MEMKIT_DEBUG 3 anywhere on
  // that list, those kept blocks or in any batch.
  static bool is_free(const void* p, const chunk* c, const heap* mine) noexcept {
    if (mine == nullptr) {
      return false;
    }
    const free_list& list = c->owner == mine ? c->free : mine->foreign[c->cls].list;
    if (p == list.head()) {
      return true;
    }
    if constexpr (debug_level >= 3) {
      for (const void* f = list.head(); f != nullptr; f = free_list::next(f)) {
        if (f == p) {
          return true;
        }
      }
    }
    return mine->outgoing.holds(c->owner, p, debug_level >= 3);
  }

  void count_unbound_free(std::size_t bytes) noexcept {
    if constexpr (statistics_enabled) {
      const std::lock_guard<std::mutex> lock(shared_mutex_);
      unbound_.on_deallocate(bytes);
    }
  }

  // A heap for the calling thread, which allocates (`allocating`) or frees a block of `owner`: an
  // exited thread's, adopted whole (depot::adopt_or_make says which), or a new one.
  heap* bind_heap(const heap* owner, bool allocating) noexcept {
    if (key_.id == registry::no_id) {
      return nullptr;
    }
    heap* h = nullptr;
    {
      const std::lock_guard<std::mutex> lock(depot_.mutex());
      if ((h = depot_.adopt_or_make(owner, allocating)) == nullptr) {
        return nullptr;
      }
    }
    if (!registry::bind(key_, h)) {
      const std::lock_guard<std::mutex> lock(depot_.mutex());
      depot_.abandon(*h);
      return nullptr;
    }
    return h;
  }

  static void unbind_thunk(void* self, void* h) noexcept {
    static_cast<engine*>(self)->unbind(*static_cast<heap*>(h));
  }

  // Thread exit (under the registry's mutex): post what is pending, take what was posted, and
  // give the wholly free chunks to the depot. The chunks still holding live blocks stay with the
  // heap, which waits on the abandoned list for a new thread to adopt it, remote queue included,
  // and so do the foreign blocks it keeps: the thread that adopts it hands them out before it
  // carves, where sent home they waited for owners that may never allocate again (larson's
  // measuring thread, which allocated the first blocks and then only waits). reclaim_abandoned
  // sends them home if memory runs short before a thread adopts the heap. They count as handed
  // out since the last tick: the adopting thread's first tick, which may come with its first free
  // (process_heap's count starts there outside its fast mode), does not send them home before
  // that thread had a tick's time to allocate them.
  void unbind(heap& h) noexcept {
    if (unbind_listener_ != nullptr) {
      unbind_listener_();
    }
    std::fill(std::begin(h.foreign_taken), std::end(h.foreign_taken), true);
    h.outgoing.template flush<heap>();
    take_remote_frees(h, false);
    const std::lock_guard<std::mutex> lock(depot_.mutex());
    depot_.abandon(h);
  }

  // Requires the depot's mutex, which makes the caller the one consumer of every abandoned
  // heap's queue and the holder of every abandoned heap: blocks freed to exited threads, and those
  // exited threads kept, are reused before the upstream is asked for more. The kept blocks go
  // home first, so that those of other abandoned heaps are back in their chunks below.
  void reclaim_abandoned() noexcept {
    depot_.for_each_abandoned([&](heap& a) {
      send_foreign_home(a);
      a.outgoing.template flush<heap>();
    });
    depot_.for_each_abandoned([&](heap& a) {
      if (a.remote.has_posts()) {
        take_remote_frees(a, true);
      }
      depot_.take_free_chunks(a);
    });
  }

  void give_back_everything() noexcept {
    const std::lock_guard<std::mutex> lock(depot_.mutex());
    if constexpr (statistics_enabled) {
      statistics s;
      shared_.counters.add_to(s);
      unbound_.add_to(s);
      depot_.for_each_heap([&](const heap& h) { h.counters.add_to(s); });
      retired_.allocations += s.allocations;
      retired_.deallocations += s.deallocations;
    }
    depot_.release();
    shared_.~heap();
    ::new (&shared_) heap;
    unbound_.clear();
  }

  // Read by every call.
  registry::key key_;
  std::uint32_t class_size_[Bins] = {};
  const char* name_;
  std::size_t class_count_;
  std::size_t cached_chunks_;
  std::size_t batch_blocks_;
  bool refills_tick_;
  /// A heap's refills (found no free or kept block of a class) between two of its ticks, when it
  /// ticks by refills: a thread that freed other threads' blocks of a class it then stops
  /// allocating gives them back while it allocates others, rather than at its exit.
  static constexpr std::uint32_t refills_per_tick = 64;
  static_assert((refills_per_tick & (refills_per_tick - 1)) == 0, "counted by masking");
  /// Per class, the foreign blocks a heap keeps: foreign_bytes' worth, within [foreign_min,
  /// foreign_max] blocks.
  static constexpr std::size_t foreign_bytes = 64 * 1024;
  static constexpr std::size_t foreign_min = 2;
  static constexpr std::size_t foreign_max = 256;
  std::uint16_t foreign_limit_[Bins] = {};

  // Everything shared, behind one lock the fast paths never take.
  depot_type depot_;
  statistics retired_; ///< totals of heaps given back by release()
  mutable std::size_t peak_bytes_ = 0;
  mutable std::size_t peak_blocks_ = 0;

  // Threads without a heap of their own share this one under its lock.
  std::mutex shared_mutex_;
  heap shared_;
  thread::counters unbound_; ///< frees by threads without a heap (under shared_mutex_)
  /// failures and fallbacks, from any thread
  counters_if_enabled<shared_cell, false> events_;
  unbind_listener unbind_listener_ = nullptr;
};

} // namespace thread
} // namespace detail
} // namespace MEMKIT_ABI
} // namespace memkit
