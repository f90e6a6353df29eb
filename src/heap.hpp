// SPDX-License-Identifier: BSL-1.0
// src/heap.hpp: the process heap of memkit's global replacement (docs/REPLACEMENT.md): the
// thread-caching engine over memory mapped from the OS, the runtime options, and the inline fast
// paths that malloc.cpp and new_delete.cpp share.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>

#include "memkit/config.hpp"
#include "memkit/detail/thread/engine.hpp"
#include "os_upstream.hpp"

// Everything here is internal to the library or program it is built into: hidden, so the fast
// paths reach fast_arena, process_heap_storage and the rest directly rather than through the GOT.
#pragma GCC visibility push(hidden)

namespace memkit::replacement {

/// malloc's alignment on x86-64 and AArch64 glibc: every block is aligned to 16.
inline constexpr std::size_t malloc_alignment = 16;

// Names: the *process heap* (process_heap, one object, made in process_heap_storage and
// published through the_process_heap) serves every entry point; a *thread heap* (thread_heap,
// the engine's detail::thread::heap) is one thread's cache of it, found in me.heap. "The heap"
// in this folder's comments is the process heap.

/// A thread's heap of the process heap: the engine's per-thread cache (detail/thread/heap.hpp).
using thread_heap = detail::thread::heap<detail::thread::any_size_bins>;

/// The process heap: the thread-caching engine (detail/thread/engine.hpp) with every class up to
/// 8 KiB, over os_upstream, held as a member: src/ is one of the engine's clients, as
/// thread_cached is. Its sizeless free finds the header of a block in the chunk arena by masking
/// the block's address (free_fast), and any other's through the chunk map, which also tells a
/// pointer the replacement never handed out from one of its own without reading memory at the
/// pointer.
class process_heap {
public:
  using engine_type = detail::thread::engine<os_upstream, detail::thread::any_size_bins>;

  process_heap() noexcept;

  /// \returns the header of the chunk or large region holding `p`, or null: not memkit's.
  detail::thread::chunk* find(const void* p) const noexcept { return engine_.find(p); }

  /// \returns whether `p` points into memory of this heap (memkit_owns).
  bool owns(const void* p) const noexcept { return engine_.owns(p); }

  /// \returns the bytes usable in the block at `p`, whose header is `c` (find).
  static std::size_t usable(const detail::thread::chunk* c) noexcept {
    return engine_type::usable_size(c);
  }

  /// Frees the block at `p`, whose header is `c` (find).
  void free_found(void* p, detail::thread::chunk* c) noexcept { engine_.free(p, c, usable(c)); }

  /// \returns the calling thread's heap, or null (none yet, or its exit began).
  thread_heap* current_heap() const noexcept { return engine_.current_heap(); }

  /// \returns a block of `bytes` (the smallest class if 0) from the current chunk of `t`, the
  /// calling thread's heap (current_heap()), or, up to table_class_limit, from the blocks of other
  /// heaps `t` keeps; null if there is none or `bytes` is above every class. The fast path of
  /// malloc.
  MEMKIT_ALWAYS_INLINE static void* pop_small(thread_heap& t, std::size_t bytes) noexcept {
    if (bytes <= detail::table_class_limit) {
      if (void* const p = engine_type::pop_small(t, bytes); MEMKIT_LIKELY(p != nullptr)) {
        return p;
      }
      return engine_type::pop_foreign_small(t, bytes);
    }
    if (bytes <= detail::thread::max_class_size) {
      return engine_type::pop_current(t, detail::class_index(bytes), bytes);
    }
    return nullptr;
  }

  /// \returns a block of `bytes`, above table_class_limit, that `t`, the calling thread's heap
  /// (current_heap()), kept when another heap's block was freed on this thread (the engine's
  /// pop_foreign), or null: what malloc tries first when pop_small finds the current chunk empty
  /// (pop_small itself looked for smaller ones).
  void* pop_foreign(thread_heap& t, std::size_t bytes) noexcept {
    if (bytes <= detail::table_class_limit || bytes > detail::thread::max_class_size) {
      return nullptr;
    }
    return engine_.pop_foreign(t, detail::class_index(bytes), bytes);
  }

  /// free_found with `t`, the calling thread's heap (current_heap()).
  MEMKIT_ALWAYS_INLINE void free_from(void* p, detail::thread::chunk* c, thread_heap* t) noexcept {
    engine_.free(p, c, t, usable(c));
  }

  /// \effects calls `f` on each exiting thread before its heap is given up.
  void on_detach(void (*f)() noexcept) noexcept { engine_.on_unbind(f); }

  /// \returns whether the block at `p`, whose header is `c` (find), now holds `bytes` where it
  /// is: when they fit its class, or its chunk or region for a large block (whose usable size
  /// becomes `bytes`), and fill at least half of a class or region (a block shrunk further moves,
  /// so its memory is not held); a large block alone in a chunk stays while too large for a class,
  /// and one in a region of the region heap grows into the free address space after it.
  bool resize_in_place(void* p, detail::thread::chunk* c, std::size_t bytes) noexcept {
    namespace dt = detail::thread;
    if (MEMKIT_UNLIKELY(c->bytes > dt::chunk_size)) {
      return resize_region_in_place(p, c, bytes);
    }
    // A small block and a large block alone in a chunk are judged alike, with no branch on which
    // it is: a program that grows buffers of both kinds at random (a string builder's) would
    // mispredict such a branch about every other call. A large block's header has a block_size
    // of 0, so a mask selects each bound (compilers turn the conditional form into the branch).
    const bool large = c->cls == dt::large_class;
    MEMKIT_ASSERT_INTERNAL(!large || c->block_size == 0);
    const std::size_t large_mask = 0 - static_cast<std::size_t>(large);
    const auto room = static_cast<std::size_t>(dt::base_of(c) + dt::chunk_size - c->blocks);
    const std::size_t most = c->block_size | (room & large_mask);
    const std::size_t least = c->block_size / 2 | ((dt::max_class_size + 1) & large_mask);
    if ((bytes > most) | (bytes < least) | (large & (p != c->blocks))) {
      return false;
    }
    if constexpr (detail::poisoning) {
      if (large) {
        repoison(p, c, bytes);
      }
    }
    // A large block's usable size becomes `bytes`; a small chunk's header is left unwritten (the
    // store goes to `unused`), as other threads read it.
    std::size_t unused = 0;
    *(large ? &c->size : &unused) = bytes;
    return true;
  }

  /// \returns the largest request that can ever succeed (room is left for a large block's
  /// header).
  static constexpr std::size_t max_size() noexcept { return unbounded_size - page_size; }

  /// \returns a block of `bytes` (1 if 0) aligned to `alignment`, any power of two (above a page
  /// the block gets a region of its own, its header found only through the map), or null.
  /// Requests that fit a class after rounding to the alignment come from it; others, a region.
  void* allocate_any(std::size_t bytes, std::size_t alignment) noexcept {
    if (bytes > max_size()) {
      return engine_.fail();
    }
    if (alignment <= page_size) {
      std::size_t n = bytes == 0 ? 1 : bytes;
      if (alignment > detail::class_granularity) {
        n = detail::round_up(n, alignment); // no overflow: n <= max_size()
      }
      if (n <= detail::thread::max_class_size) {
        return engine_.allocate(detail::class_index(n), bytes);
      }
    }
    return engine_.allocate_large(bytes, alignment);
  }

  /// \returns whether `p` is the start of a block this heap handed out and has not seen freed, as
  /// far as O(1) checks tell (the chunk map, the block grid, the free-list heads): debug mode.
  bool screen(void* p) const noexcept {
    return engine_.check_free(p, 0, 0, engine_type::any_class);
  }

  /// \effects gives back to the OS every wholly free chunk's pages and every free span of the
  /// region heap.
  /// \returns the bytes given back.
  std::size_t trim() noexcept { return engine_.trim(); }

  /// \effects gives back what has waited for the delay (os_upstream::delay_ms()).
  void tick() noexcept { engine_.tick(); }

  /// \returns the thread heaps made so far (the stats line's `heaps`).
  std::size_t heap_count() const noexcept { return engine_.heap_count(); }

  os_upstream& upstream() noexcept { return engine_.upstream(); }

  /// Takes every lock of the heap (fork, and reading the upstream's counters); unlock_all frees
  /// them.
  void lock_all() noexcept { engine_.prepare_fork(); }
  void unlock_all() noexcept { engine_.after_fork(); }

private:
  // resize_in_place for a large block in a region of its own, which grows where it lies when
  // the address space after it is free (os_upstream::grow_region).
  bool resize_region_in_place(void* p, detail::thread::chunk* c, std::size_t bytes) noexcept {
    const auto offset = static_cast<std::size_t>(c->blocks - detail::thread::base_of(c));
    const std::size_t room = os_upstream::region_size(c->bytes) - offset;
    if (p != c->blocks || bytes < room / 2 || (bytes > room && !engine_.grow_large(c, bytes))) {
      return false;
    }
    repoison(p, c, bytes);
    c->size = bytes; // the region stays as mapped: c->bytes still names it
    return true;
  }

  // The caller of a large block resized in place owns exactly the new bytes (a chunk's memory
  // may be poisoned from earlier use).
  static void repoison(void* p, const detail::thread::chunk* c, std::size_t bytes) noexcept {
    if (bytes > c->size) {
      detail::unpoison(static_cast<char*>(p) + c->size, bytes - c->size);
    } else {
      detail::poison(static_cast<char*>(p) + bytes, c->size - bytes);
    }
  }

  engine_type engine_;
};

/// MEMKIT_OPTIONS, read once when the heap is made (docs/REPLACEMENT.md, "Options").
enum mode : unsigned {
  mode_fast = 0,
  mode_stats = 1, ///< stats:1 — count every call, print one JSON line at exit
  mode_debug = 2, ///< debug:1 — guarded blocks, quarantine, double/invalid free and overrun checks
  mode_trace = 4, ///< trace:PATH — record every call to a trace file (trace.cpp)
};

/// Made on the first call of any entry point; never destroyed (free may be called after exit
/// began, from destructors and thread-exit code).
extern std::atomic<process_heap*> the_process_heap;
/// The modes of MEMKIT_OPTIONS; 0 keeps every entry point on its fast path.
extern unsigned the_mode;
/// Where free's fast path looks: the base of the heap's arena (os_upstream) when the_mode is
/// mode_fast, else `no_arena`, an address no arena_size bytes from which any pointer is.
inline constexpr std::uintptr_t no_arena = 0 - os_upstream::arena_size;
extern std::atomic<std::uintptr_t> fast_arena;

/// debug:1's quarantine holds at most this many bytes of freed blocks unless MEMKIT_OPTIONS says
/// otherwise (quarantine:BYTES).
inline constexpr std::size_t default_quarantine_bytes = std::size_t{64} << 20;

/// What MEMKIT_OPTIONS asks for.
struct runtime_options {
  unsigned mode = mode_fast;
  std::size_t quarantine_bytes = default_quarantine_bytes;
  /// stats:PATH: the file the stats line is appended to; empty: the program's stderr.
  char stats_path[1024] = {};
  /// trace:PATH: the trace file; stack:N: return addresses recorded per call site.
  char trace_path[1024] = {};
  unsigned stack_depth = 1;
  /// decay:MS: how long freed memory stays before it goes back to the OS
  /// (os_upstream::set_delay_ms).
  std::uint64_t decay_ms = os_upstream::default_delay_ms;
};

/// \returns the options MEMKIT_OPTIONS `text` asks for ("stats:1,debug:1,quarantine:16m"; null:
/// none), reporting on stderr every item it does not know or whose value it cannot take.
runtime_options parse_options(const char* text) noexcept;
process_heap* make_process_heap() noexcept;
void* allocate_slow(std::size_t bytes, std::size_t alignment) noexcept;
void free_slow(void* p) noexcept;
void free_sized_slow(void* p, std::size_t bytes) noexcept;
/// \effects gives back to the OS every cached region (malloc_trim). \returns the bytes given.
std::size_t trim() noexcept;
/// Frees a block memkit did not hand out (glibc's, allocated before the replacement took over, or
/// the program's malloc's under memkit::new_delete), counting it: release_foreign.
void free_foreign(void* p) noexcept;
/// Hands `p`, a block memkit did not hand out, to the program's `free`: whatever malloc the program
/// runs on (glibc's or a preloaded one) for memkit::new_delete. The preload library, whose `free`
/// is memkit's own, replaces this weak definition with glibc's `__libc_free` (malloc.cpp).
void release_foreign(void* p) noexcept;
/// \returns the bytes usable at `p`, a live block of memkit's (any mode).
std::size_t usable_size_of(const void* p) noexcept;

/// The storage the_process_heap is made in: its address is a constant, so the fast paths, which run
/// only once it was made, need not load it.
extern unsigned char process_heap_storage[sizeof(process_heap)];
MEMKIT_ALWAYS_INLINE process_heap& made_process_heap() noexcept {
  return *std::launder(reinterpret_cast<process_heap*>(process_heap_storage));
}

/// Frees a thread makes between two visits to the depot (process_heap::tick): a program whose
/// threads free a peak and then run on their caches alone still sees its memory go back to the
/// OS, after the delay and at most this many frees.
inline constexpr unsigned frees_per_tick = 1024;

/// The heap in me.heap of a thread that has none (yet, or any more): a thread_heap with no chunk,
/// every current chunk the empty one, so the allocation fast path misses on it as it misses on an
/// exhausted class, with no test of its own, and no free finds its chunk owned by it. Constant-
/// initialized and never written.
inline thread_heap no_heap;

/// What the fast paths keep per thread, in one initial-exec TLS object (one address lookup for
/// both fields), `inline` and constant-initialized, so no TLS wrapper call guards it.
struct thread_state {
  /// The calling thread's heap of the_process_heap, found here in one load rather than through the
  /// thread registry's binding table: set by the slow path once the engine bound one, in mode_fast
  /// only (so it also says the heap is made and the fast paths may run), no_heap until then and
  /// again once the engine's detach listener dropped it as the thread exits (keep_heap).
  thread_heap* heap = &no_heap;
  /// Frees until the next tick; in mode_fast, 1 while `heap` is no_heap, so that the free fast
  /// path, which counts first, takes tick_and_free then and needs no test of its own for a heap.
  unsigned frees_until_tick = 1;
};
inline thread_local thread_state me;

/// \returns whether the calling thread has a heap in me.heap.
inline bool has_heap() noexcept { return me.heap != &no_heap; }

/// \effects makes `t` (null: none) the calling thread's heap in `me`, keeping the count's promise:
/// 1 while there is none, a whole tick's count once there is one again.
inline void keep_heap(thread_heap* t) noexcept {
  if (!has_heap() || t == nullptr) {
    me.frees_until_tick = t != nullptr ? frees_per_tick : 1;
  }
  me.heap = t != nullptr ? t : &no_heap;
}

/// \returns a block of `bytes` (1 if 0) aligned to `alignment` from the calling thread's cache,
/// or null: then allocate_slow.
MEMKIT_ALWAYS_INLINE void* allocate_fast(std::size_t bytes, std::size_t alignment) noexcept {
  if (MEMKIT_LIKELY(alignment <= malloc_alignment)) {
    return process_heap::pop_small(*me.heap, bytes);
  }
  return nullptr;
}

/// \returns a block of `bytes` (1 if 0) aligned to `alignment` (a power of two), or null.
MEMKIT_ALWAYS_INLINE void* allocate(std::size_t bytes, std::size_t alignment) noexcept {
  if (void* p = allocate_fast(bytes, alignment); MEMKIT_LIKELY(p != nullptr)) {
    return p;
  }
  return allocate_slow(bytes, alignment);
}

void tick_slow(process_heap& h) noexcept;

/// \returns whether `p` lies in the arena and the_mode is mode_fast: then it is a block of a
/// chunk, whose header is found by masking its address (chunk_of).
MEMKIT_ALWAYS_INLINE bool in_fast_arena(const void* p) noexcept {
  return detail::address(p) - fast_arena.load(std::memory_order_relaxed) < os_upstream::arena_size;
}

/// Frees `p`, in_fast_arena, on a thread whose heap is in me.heap, without counting the free for
/// the tick.
MEMKIT_ALWAYS_INLINE void free_in_arena(process_heap& h, void* p) noexcept {
  thread_heap* const t = me.heap;
  MEMKIT_ASSERT_INTERNAL(t != &no_heap);
  MEMKIT_ASSUME(t != nullptr);
  h.free_from(p, detail::thread::chunk_of(p), t);
}

/// The free that ends a tick's count, or the first one on a thread without a heap in me.heap:
/// ticks (tick_slow) and frees `p` (in_fast_arena), or frees it through the engine, which binds
/// the thread a heap.
void tick_and_free(process_heap& h, void* p) noexcept;

/// Frees `p` if in_fast_arena. \returns whether it did; if not, free_slow.
MEMKIT_ALWAYS_INLINE bool free_fast(void* p) noexcept {
  if (MEMKIT_LIKELY(in_fast_arena(p))) {
    // No arena lies within arena_size of address 0: null always takes free_slow.
    MEMKIT_ASSUME(p != nullptr);
    process_heap& h = made_process_heap();
    // Counted first, so that whatever the free calls out of line is its last act: a jump, and
    // the fast path saves no register for a call that returns into it. A count left above 0
    // also says me.heap holds a heap (thread_state).
    if (MEMKIT_UNLIKELY(--me.frees_until_tick == 0)) {
      tick_and_free(h, p);
    } else {
      free_in_arena(h, p);
    }
    return true;
  }
  return false;
}

/// Frees `p` whatever handed it out (memkit or, before memkit took over, glibc); null is a no-op.
MEMKIT_ALWAYS_INLINE void free(void* p) noexcept {
  if (!free_fast(p)) {
    free_slow(p);
  }
}

/// free(p) for a sized delete: the size is checked in debug mode, ignored otherwise.
MEMKIT_ALWAYS_INLINE void free_sized(void* p, std::size_t bytes) noexcept {
  if (!free_fast(p)) {
    free_sized_slow(p, bytes);
  }
}

} // namespace memkit::replacement

#pragma GCC visibility pop
