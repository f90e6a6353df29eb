// SPDX-License-Identifier: BSL-1.0
// memkit/detail/thread_cache_engine.hpp: what both thread-caching resources (thread_cached.hpp)
// are made of: per-thread heaps, remote frees in batches, the shared depot, thread exit.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <new>
#include <utility>

#include "../config.hpp"
#include "../error.hpp"
#include "../resource.hpp"
#include "../stats.hpp"
#include "align.hpp"
#include "assert.hpp"
#include "poison.hpp"
#include "remote_queue.hpp"
#include "thread_depot.hpp"
#include "thread_heap.hpp"
#include "thread_registry.hpp"

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

/// Largest class a chunk serves: at least 8 blocks a chunk, so the header and the tail waste at
/// most an eighth.
inline constexpr std::size_t tc_max_class_size = tc_chunk_size / 8;

/// The machinery of docs/threads.md, "thread_cached": `Bins` size classes whose sizes the resource
/// sets; the resource maps requests to classes and checks them.
template <class Upstream, std::size_t Bins>
class tc_engine {
public:
  using heap = tc_heap<Bins>;
  /// `expected_class` of `screen` for a free without a size.
  static constexpr std::size_t any_class = static_cast<std::size_t>(-1);

  tc_engine(const char* name, const std::uint32_t* class_sizes, std::size_t class_count,
            const thread_cached_options& o, Upstream&& upstream) noexcept
      : name_(name), class_count_(class_count), cached_chunks_(o.cached_chunks),
        batch_blocks_(o.batch_blocks == 0 ? 1 : o.batch_blocks), depot_(std::move(upstream)) {
    for (std::size_t i = 0; i < class_count; ++i) {
      class_size_[i] = class_sizes[i];
    }
    key_ = thread_registry::get().enroll(this, &detach_thunk);
  }

  tc_engine(const tc_engine&) = delete;
  tc_engine& operator=(const tc_engine&) = delete;

  ~tc_engine() {
    thread_registry::get().withdraw(key_);
    release_all();
  }

  std::size_t class_size(std::size_t cls) const noexcept { return class_size_[cls]; }

  /// The allocation fast path: pop the current chunk's free list of the calling thread's heap.
  MEMKIT_ALWAYS_INLINE void* allocate_class(std::size_t cls, std::size_t bytes) noexcept {
    return allocate_class_in(my_heap(), cls, bytes);
  }

  /// allocate_class for a request of at most table_class_limit bytes, in the any-size form.
  MEMKIT_ALWAYS_INLINE void* allocate_direct(std::size_t bytes) noexcept {
    heap* const h = my_heap();
    if (MEMKIT_LIKELY(h != nullptr)) {
      if (void* const p = pop_direct(*h, bytes); MEMKIT_LIKELY(p != nullptr)) {
        return p;
      }
    }
    return allocate_class_slow(h, table_class_index(bytes), bytes);
  }

  /// allocate_class with the calling thread's heap already found (current_heap(), or null).
  MEMKIT_ALWAYS_INLINE void* allocate_class_in(heap* h, std::size_t cls,
                                               std::size_t bytes) noexcept {
    if (MEMKIT_LIKELY(h != nullptr)) {
      if (void* const p = pop_class(*h, cls, bytes); MEMKIT_LIKELY(p != nullptr)) {
        return p;
      }
    }
    return allocate_class_slow(h, cls, bytes);
  }

  /// The allocation fast path alone: a block of class `cls` from the current chunk of `h`, the
  /// calling thread's heap, or null when that chunk's free list is empty (allocate_class_in then
  /// refills it).
  MEMKIT_ALWAYS_INLINE static void* pop_class(heap& h, std::size_t cls,
                                              std::size_t bytes) noexcept {
    return pop_from(h, h.bins[cls].current, bytes);
  }

  /// pop_class with the current chunk found through the heap's direct table: a size up to
  /// table_class_limit, in the any-size form.
  MEMKIT_ALWAYS_INLINE static void* pop_direct(heap& h, std::size_t bytes) noexcept {
    static_assert(heap::direct_steps != 0, "the any-size form's classes only");
    tc_chunk* const c = h.direct[(bytes + class_granularity - 1) / class_granularity];
    MEMKIT_ASSERT_INTERNAL(c == h.bins[table_class_index(bytes)].current);
    return pop_from(h, c, bytes);
  }

  /// The allocation fast path for chunk `c`, the current chunk of a class of `h`.
  MEMKIT_ALWAYS_INLINE static void* pop_from(heap& h, tc_chunk* c, std::size_t bytes) noexcept {
    if (MEMKIT_LIKELY(!c->free.empty())) {
      void* const p = c->free.pop();
      ++c->used;
      // The whole block is handed out, not just `bytes`: usable_size() promises every byte of
      // the class is writable, as malloc_usable_size(3) does. Poisoning therefore catches
      // overruns past the class size, not within it.
      unpoison(p, c->block_size);
      h.counters.on_allocate(bytes);
      return p;
    }
    return nullptr;
  }

  /// The free fast path: a block of a chunk the calling thread's heap owns goes on that chunk's
  /// free list; anything else (another heap's block, a large block, no heap yet) goes out of line.
  MEMKIT_ALWAYS_INLINE void deallocate_block(void* p, std::size_t bytes) noexcept {
    deallocate_in(p, tc_chunk_of(p), bytes);
  }

  /// deallocate_block with the header of `p`'s chunk or large region already found (`find`).
  MEMKIT_ALWAYS_INLINE void deallocate_in(void* p, tc_chunk* c, std::size_t bytes) noexcept {
    deallocate_from(p, c, my_heap(), bytes);
  }

  /// deallocate_in with the calling thread's heap already found: `h` is current_heap(). Null only
  /// when none is bound: the call then binds one, which the caller must use from then on (a null
  /// passed again would bind yet another heap).
  MEMKIT_ALWAYS_INLINE void deallocate_from(void* p, tc_chunk* c, heap* h,
                                            std::size_t bytes) noexcept {
    if (MEMKIT_LIKELY(h != nullptr && c->owner == h)) {
      h->counters.on_deallocate(bytes);
      c->free.push(p, c->block_size);
      // The current chunk of a class is pinned (used counts one extra), so a free-allocate
      // ping-pong on one block never lands here.
      if (MEMKIT_UNLIKELY(--c->used == 0 || !c->in_bin)) {
        settle(*h, c, false);
      }
      return;
    }
    deallocate_other(p, c, h, bytes);
  }

  /// \returns a region of its own for `bytes` aligned to `alignment` (at most page_size), or null.
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

  /// \returns whether `p` may be freed as a block of `expected_class` (any_class: any block),
  /// reporting the misuse otherwise. O(1) (a chunk-map lookup and the header) below
  /// `MEMKIT_DEBUG` 3, which also walks the chunk's free list and the outgoing batches.
  bool screen(void* p, std::size_t bytes, std::size_t alignment,
              std::size_t expected_class) const noexcept {
    tc_chunk* const c = depot_.find(p);
    misuse verdict = misuse::foreign_pointer;
    if (c == nullptr) {
      // not ours
    } else if (c->cls == tc_large_class) {
      if (p != c->blocks) {
        // an interior pointer
      } else if (expected_class != any_class &&
                 (expected_class != tc_large_class || (bytes == 0 ? 1 : bytes) != c->size)) {
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
    } else {
      heap* h = my_heap();
      const bool local = h != nullptr && c->owner == h;
      const tc_outgoing* o = h != nullptr ? &h->outgoing_for(c->owner) : nullptr;
      if (local && static_cast<char*>(p) >= c->bump) {
        // never handed out: not a block yet
      } else if ((local && p == c->free.head()) ||
                 (o != nullptr && o->dest == c->owner && o->chain.first == p) ||
                 (debug_level >= 3 && h != nullptr && h->holds_free(c, p, local))) {
        verdict = misuse::double_free;
      } else {
        return true;
      }
    }
    report_misuse(verdict, name_, p, bytes, alignment);
    return false;
  }

  /// \returns whether `p` points into a block this resource handed out or may hand out (a small
  /// chunk's blocks, a large block's bytes). O(1), any thread.
  bool owns(const void* p) const noexcept {
    const tc_chunk* c = depot_.find(p);
    if (c == nullptr) {
      return false;
    }
    if (c->cls == tc_large_class) {
      return in_range(p, c->blocks, c->size);
    }
    return in_range(p, c->blocks,
                    static_cast<std::size_t>(tc_base_of(c) + tc_chunk_size - c->blocks));
  }

  /// \returns the calling thread's heap, or null (none bound yet, or its exit began).
  heap* current_heap() const noexcept { return my_heap(); }

  /// Called on a thread that is exiting, before its heap is given up: for a caller that keeps its
  /// own per-thread pointer to the heap (the malloc replacement's), which must drop it then.
  using detach_listener = void (*)() noexcept;
  void on_detach(detach_listener f) noexcept { detach_listener_ = f; }

  /// \returns the header of the chunk or large region holding `p`, or null if `p` lies in no
  /// memory of this resource. Lock-free, any thread; reads no memory at `p`.
  tc_chunk* find(const void* p) const noexcept { return depot_.find(p); }

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
  /// what the upstream keeps (malloc_trim). \returns the bytes given back; 0 unless the
  /// upstream decommits (tc_depot::decommits).
  std::size_t trim() noexcept {
    const std::lock_guard<std::mutex> lock(depot_.mutex());
    return depot_.purge(os::now_ms(), true);
  }

  /// \effects gives back what has waited long enough (tc_depot::tick), as any visit to the depot
  /// does: for a caller whose threads run on their caches alone for a long time.
  void tick() noexcept {
    if constexpr (depot::decommits) {
      const std::lock_guard<std::mutex> lock(depot_.mutex());
      depot_.tick();
    }
  }

  /// \returns the bytes usable at `p`: its class size, or a large block's requested size.
  /// \requires `p` is a live block of this resource.
  static std::size_t usable_size(const void* p) noexcept {
    const tc_chunk* c = tc_chunk_of(p);
    return c->cls == tc_large_class ? c->size : c->block_size;
  }

  /// \effects every chunk, large block and heap goes back to the upstream; bindings of threads go
  /// stale (re-keyed), so each thread takes a fresh heap on its next call.
  /// \requires quiescence: no other thread uses the resource during the call.
  void release() noexcept {
    key_.id = thread_registry::get().rekey(key_);
    release_all();
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
      orphan_.add_to(s);
      depot_.for_each_heap([&](const heap& h) { h.counters.add_to(s); });
      s.failures += failures_.load(std::memory_order_relaxed);
      s.fallbacks += fallbacks_.load(std::memory_order_relaxed);
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
    if constexpr (statistics_enabled) {
      failures_.fetch_add(1, std::memory_order_relaxed);
    }
    return nullptr;
  }

private:
  heap* my_heap() const noexcept { return static_cast<heap*>(thread_registry::bound(key_)); }

  void count_allocation(std::size_t bytes) noexcept {
    if (heap* h = my_heap(); h != nullptr) {
      h->counters.on_allocate(bytes);
    } else {
      const std::lock_guard<std::mutex> lock(shared_mutex_);
      shared_.counters.on_allocate(bytes);
    }
  }

  MEMKIT_NOINLINE void* allocate_class_slow(heap* h, std::size_t cls, std::size_t bytes) noexcept {
    if (h == nullptr && (h = bind()) == nullptr) {
      // No per-thread heap: too many instances, the thread is exiting, or none could be made.
      const std::lock_guard<std::mutex> lock(shared_mutex_);
      void* p = pop_or_refill(shared_, cls);
      if (p == nullptr) {
        return fail();
      }
      if constexpr (statistics_enabled) {
        fallbacks_.fetch_add(1, std::memory_order_relaxed);
      }
      unpoison(p, class_size_[cls]);
      shared_.counters.on_allocate(bytes);
      return p;
    }
    void* p = pop_or_refill(*h, cls);
    if (p == nullptr) {
      return fail();
    }
    unpoison(p, class_size_[cls]);
    h->counters.on_allocate(bytes);
    return p;
  }

  static void* pop(tc_chunk* c) noexcept {
    ++c->used;
    return c->free.pop();
  }

  // The refill order (the thread allocates from an empty list): carve more of the current chunk;
  // post the outgoing batches and take what others posted here; a partly used chunk of the class;
  // a spare chunk; the depot; abandoned heaps' returns; the upstream.
  void* pop_or_refill(heap& h, std::size_t cls) noexcept {
    typename heap::bin& b = h.bins[cls];
    tc_chunk* c = b.current;
    if (!c->free.empty()) {
      return pop(c);
    }
    if (c->bump != c->end) {
      return extend_and_pop(c);
    }
    flush_outgoing(h);
    if (h.remote.has_posts()) {
      drain(h, false);
      if (!c->free.empty()) {
        return pop(c);
      }
    }
    if (c != &tc_empty_chunk) {
      // Full: it floats, owned but on no list, until a block of it comes back (settle).
      c->in_bin = false;
      --c->used; // unpin
      MEMKIT_ASSERT_INTERNAL(c->used == c->capacity);
    }
    h.set_current(cls, &tc_empty_chunk);
    if ((c = b.partial) != nullptr) {
      h.unlink_partial(c);
    } else if ((c = take_chunk(h, cls)) == nullptr) {
      return nullptr;
    }
    c->in_bin = true;
    ++c->used; // pin
    h.set_current(cls, c);
    return !c->free.empty() ? pop(c) : extend_and_pop(c);
  }

  // Carves up to a page's worth of blocks (at least one) onto the free list and pops the first:
  // memory is touched a page at a time, as mimalloc extends a page's free list
  // (mi_page_extend_free).
  static void* extend_and_pop(tc_chunk* c) noexcept {
    const std::size_t s = c->block_size;
    const std::size_t left = static_cast<std::size_t>(c->end - c->bump) / s;
    std::size_t n = page_size / s;
    n = n == 0 ? 1 : (n > left ? left : n);
    char* const first = c->bump;
    for (std::size_t k = n; k-- > 1;) {
      c->free.push(first + k * s, s);
    }
    c->bump += n * s;
    ++c->used;
    return first;
  }

  // A block was freed to `c`, owned by `h`, which either emptied it or found it full.
  MEMKIT_NOINLINE void settle(heap& h, tc_chunk* c, bool locked) noexcept {
    MEMKIT_ASSERT_INTERNAL(c->used <= c->capacity);
    if (c->used == 0) {
      MEMKIT_ASSERT_INTERNAL(c != h.bins[c->cls].current);
      if (c->in_bin) {
        h.unlink_partial(c);
      }
      retire(h, c, locked);
    } else if (!c->in_bin) {
      h.link_partial(c);
    }
  }

  // A wholly free chunk of `h`: kept as a spare up to the bound, else handed to the depot.
  void retire(heap& h, tc_chunk* c, bool locked) noexcept {
    MEMKIT_ASSERT_INTERNAL(c->used == 0 && c->owner == &h && h.spare_count <= cached_chunks_);
    c->in_bin = false;
    if (h.spare_count < cached_chunks_) {
      c->next = h.spare;
      h.spare = c;
      ++h.spare_count;
      return;
    }
    if (locked) {
      depot_.push(c);
    } else {
      const std::lock_guard<std::mutex> lock(depot_.mutex());
      depot_.push(c);
    }
  }

  tc_chunk* take_chunk(heap& h, std::size_t cls) noexcept {
    tc_chunk* c = h.spare;
    if (c != nullptr) {
      h.spare = c->next;
      --h.spare_count;
    } else {
      const std::lock_guard<std::mutex> lock(depot_.mutex());
      if ((c = depot_.pop()) == nullptr) {
        scavenge_locked();
        if ((c = depot_.pop()) == nullptr && (c = depot_.obtain()) == nullptr) {
          return nullptr;
        }
      }
    }
    format(c, h, cls);
    return c;
  }

  // Blocks sit at the chunk's end, at multiples of the class size from it, so each is aligned to
  // the largest power of two dividing the class size (the chunk is aligned to its size).
  void format(tc_chunk* c, heap& h, std::size_t cls) noexcept {
    const std::size_t s = class_size_[cls];
    char* const end = tc_base_of(c) + tc_chunk_size;
    const std::size_t capacity = static_cast<std::size_t>(end - reinterpret_cast<char*>(c + 1)) / s;
    c->owner = &h;
    c->cls = static_cast<std::uint32_t>(cls);
    c->block_size = static_cast<std::uint32_t>(s);
    c->blocks = end - capacity * s;
    c->bump = c->blocks;
    c->end = end;
    c->free.clear();
    c->used = 0;
    c->capacity = static_cast<std::uint32_t>(capacity);
    c->prev = c->next = nullptr;
    c->in_bin = false;
    poison(c->blocks, capacity * s);
  }

  // Takes everything other threads posted to `h` and frees each block into its chunk.
  void drain(heap& h, bool locked) noexcept {
    for (void* p = h.remote.take_all(); p != nullptr;) {
      void* const next = free_list::next(p);
      tc_chunk* c = tc_chunk_of(p);
      MEMKIT_ASSERT_INTERNAL(c->owner == &h && c->cls != tc_large_class);
      c->free.push(p, c->block_size);
      if (--c->used == 0 || !c->in_bin) {
        settle(h, c, locked);
      }
      p = next;
    }
  }

  void post(tc_outgoing& o) noexcept {
    static_cast<heap*>(o.dest)->remote.post(o.chain);
    o.chain = free_chain{};
  }

  void flush_outgoing(heap& h) noexcept {
    if (h.pending == 0) {
      return;
    }
    for (tc_outgoing& o : h.outgoing) {
      if (o.chain.count != 0) {
        post(o);
      }
    }
    h.pending = 0;
  }

  MEMKIT_NOINLINE void deallocate_other(void* p, tc_chunk* c, heap* h, std::size_t bytes) noexcept {
    if (c->cls == tc_large_class) {
      if (h != nullptr) {
        h->counters.on_deallocate(bytes);
      } else {
        orphan_deallocate(bytes);
      }
      free_large(c);
      return;
    }
    if (h == nullptr && (h = bind()) == nullptr) {
      orphan_deallocate(bytes);
      if (c->owner == &shared_) {
        const std::lock_guard<std::mutex> lock(shared_mutex_);
        c->free.push(p, c->block_size);
        if (--c->used == 0 || !c->in_bin) {
          settle(shared_, c, false);
        }
      } else {
        free_chain one;
        prepend(one, p, c->block_size);
        static_cast<heap*>(c->owner)->remote.post(one);
      }
      return;
    }
    h->counters.on_deallocate(bytes);
    tc_outgoing& o = h->outgoing_for(c->owner);
    if (o.dest != c->owner) {
      if (o.chain.count != 0) {
        h->pending -= o.chain.count;
        post(o);
      }
      o.dest = c->owner;
    }
    prepend(o.chain, p, c->block_size);
    ++h->pending;
    if (o.chain.count >= batch_blocks_) {
      h->pending -= o.chain.count;
      post(o);
    }
  }

  void orphan_deallocate(std::size_t bytes) noexcept {
    if constexpr (statistics_enabled) {
      const std::lock_guard<std::mutex> lock(shared_mutex_);
      orphan_.on_deallocate(bytes);
    }
  }

  void free_large(tc_chunk* c) noexcept {
    const std::lock_guard<std::mutex> lock(depot_.mutex());
    depot_.free_large(c);
  }

  // A heap for the calling thread: an exited thread's, adopted whole, or a new one.
  heap* bind() noexcept {
    if (key_.id == thread_registry::no_id) {
      return nullptr;
    }
    heap* h = nullptr;
    {
      const std::lock_guard<std::mutex> lock(depot_.mutex());
      if ((h = depot_.adopt_or_make()) == nullptr) {
        return nullptr;
      }
    }
    if (!thread_registry::bind(key_, h)) {
      const std::lock_guard<std::mutex> lock(depot_.mutex());
      depot_.abandon(*h);
      return nullptr;
    }
    return h;
  }

  static void detach_thunk(void* self, void* h) noexcept {
    static_cast<tc_engine*>(self)->detach(*static_cast<heap*>(h));
  }

  // Thread exit (under the registry's mutex): post what is pending, take what was posted, and
  // give the wholly free chunks to the depot. The chunks still holding live blocks stay with the
  // heap, which waits on the abandoned list for a new thread to adopt it, remote queue included.
  void detach(heap& h) noexcept {
    if (detach_listener_ != nullptr) {
      detach_listener_();
    }
    flush_outgoing(h);
    drain(h, false);
    const std::lock_guard<std::mutex> lock(depot_.mutex());
    depot_.abandon(h);
  }

  // Requires the depot's mutex, which makes the caller the one consumer of every abandoned
  // heap's queue: blocks freed to exited threads are reused before the upstream is asked for more.
  void scavenge_locked() noexcept {
    depot_.for_each_abandoned([&](heap& a) {
      if (a.remote.has_posts()) {
        drain(a, true);
      }
      depot_.take_free_chunks(a);
    });
  }

  void release_all() noexcept {
    const std::lock_guard<std::mutex> lock(depot_.mutex());
    if constexpr (statistics_enabled) {
      statistics s;
      shared_.counters.add_to(s);
      orphan_.add_to(s);
      depot_.for_each_heap([&](const heap& h) { h.counters.add_to(s); });
      retired_.allocations += s.allocations;
      retired_.deallocations += s.deallocations;
    }
    depot_.release();
    shared_.~heap();
    ::new (&shared_) heap;
    orphan_.~tc_counters();
    ::new (&orphan_) tc_counters;
  }

  // Read by every call.
  thread_registry::key key_;
  std::uint32_t class_size_[Bins] = {};
  const char* name_;
  std::size_t class_count_;
  std::size_t cached_chunks_;
  std::size_t batch_blocks_;

  // Everything shared, behind one lock the fast paths never take.
  using depot = tc_depot<Upstream, heap>;
  depot depot_;
  statistics retired_; ///< totals of heaps given back by release()
  mutable std::size_t peak_bytes_ = 0;
  mutable std::size_t peak_blocks_ = 0;

  // Threads without a heap of their own share this one under its lock.
  std::mutex shared_mutex_;
  heap shared_;
  tc_counters orphan_; ///< frees by threads without a heap (under shared_mutex_)
  std::atomic<std::size_t> failures_{0};
  std::atomic<std::size_t> fallbacks_{0};
  detach_listener detach_listener_ = nullptr;
};

} // namespace detail
} // namespace MEMKIT_ABI
} // namespace memkit
