// SPDX-License-Identifier: BSL-1.0
// src/heap.hpp: the engine of memkit's global replacement (docs/REPLACEMENT.md): one process-wide
// thread_cached resource over memory mapped from the OS, the runtime options, and the inline fast
// paths that malloc.cpp and new_delete.cpp share.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>

#include "memkit/config.hpp"
#include "memkit/thread_cached.hpp"
#include "os_upstream.hpp"

// Everything here is internal to the library or program it is built into: hidden, so the fast
// paths reach fast_arena, heap_storage and the rest directly rather than through the GOT.
#pragma GCC visibility push(hidden)

namespace memkit::replacement {

/// malloc's alignment on x86-64 and AArch64 glibc: every block is aligned to 16.
inline constexpr std::size_t malloc_alignment = 16;

/// The process's heap: thread_cached's machinery with every class up to 8 KiB, over os_upstream.
/// Its sizeless free finds the header of a block in the chunk arena by masking the block's address
/// (free_fast), and any other's through the chunk map, which also tells a pointer the replacement
/// never handed out from one of its own without reading memory at the pointer.
class global_heap final : public thread_cached<os_upstream> {
public:
  global_heap() noexcept;

  /// \returns the header of the chunk or large region holding `p`, or null: not memkit's.
  detail::thread::chunk* find(const void* p) const noexcept { return engine_.find(p); }

  /// \returns the bytes usable in the block at `p`, whose header is `c` (find).
  static std::size_t usable(const detail::thread::chunk* c) noexcept {
    return engine::usable_size(c);
  }

  /// Frees the block at `p`, whose header is `c` (find).
  void free_found(void* p, detail::thread::chunk* c) noexcept { engine_.free(p, c, usable(c)); }

  using thread_heap = typename engine::heap;

  /// \returns the calling thread's heap, or null (none yet, or its exit began).
  thread_heap* current_heap() const noexcept { return engine_.current_heap(); }

  /// \returns a block of `bytes` (the smallest class if 0) from the current chunk of `t`, the
  /// calling thread's heap (current_heap()), or null if that chunk has no free block or `bytes`
  /// is above every class. The fast path of malloc.
  MEMKIT_ALWAYS_INLINE static void* pop_small(thread_heap& t, std::size_t bytes) noexcept {
    if (bytes <= detail::table_class_limit) {
      return engine::pop_small(t, bytes);
    }
    if (bytes <= detail::thread::max_class_size) {
      return engine::pop_current(t, detail::class_index(bytes), bytes);
    }
    return nullptr;
  }

  /// free_found with `t`, the calling thread's heap (current_heap()).
  MEMKIT_ALWAYS_INLINE void free_from(void* p, detail::thread::chunk* c, thread_heap* t) noexcept {
    engine_.free(p, c, t, usable(c));
  }

  /// \effects calls `f` on each exiting thread before its heap is given up.
  void on_detach(void (*f)() noexcept) noexcept { engine_.on_unbind(f); }

  /// \returns whether the block at `p`, whose header is `c` (find), now holds `bytes` where it
  /// is: when they fit its class, or its region's mapped size for a large block (whose usable
  /// size becomes `bytes`), and fill at least half of it (a block shrunk further moves, so its
  /// memory is not held).
  bool resize_in_place(void* p, detail::thread::chunk* c, std::size_t bytes) noexcept {
    if (c->cls != detail::thread::large_class) {
      return bytes <= c->block_size && bytes >= c->block_size / 2;
    }
    if (p != c->blocks) {
      return false;
    }
    const auto offset = static_cast<std::size_t>(c->blocks - detail::thread::base_of(c));
    const std::size_t room = os_upstream::region_size(c->bytes) - offset;
    if (bytes > room || bytes < room / 2) {
      return false;
    }
    c->size = bytes; // the region stays as mapped: c->bytes still names it
    return true;
  }

  /// \returns a block of `bytes` aligned to `alignment`, any power of two (above a page the block
  /// gets a region of its own, its header found only through the map), or null.
  void* allocate_any(std::size_t bytes, std::size_t alignment) noexcept {
    if (alignment <= page_size) {
      return try_allocate(bytes, alignment);
    }
    return engine_.allocate_large(bytes, alignment);
  }

  /// \returns whether `p` is the start of a block this heap handed out and has not seen freed, as
  /// far as O(1) checks tell (the chunk map, the block grid, the free-list heads): debug mode.
  bool screen(void* p) const noexcept { return engine_.check_free(p, 0, 0, engine::any_class); }

  /// \effects gives back to the OS every wholly free chunk's pages and every kept region.
  /// \returns the bytes given back.
  std::size_t trim() noexcept { return engine_.trim(); }

  /// \effects gives back what has waited for the delay (os_upstream::delay_ms).
  void tick() noexcept { engine_.tick(); }

  /// Takes every lock of the heap (fork, and reading the upstream's counters); unlock_all frees
  /// them.
  void lock_all() noexcept { engine_.prepare_fork(); }
  void unlock_all() noexcept { engine_.after_fork(); }
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
extern std::atomic<global_heap*> the_heap;
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
};

/// \returns the options MEMKIT_OPTIONS `text` asks for ("stats:1,debug:1,quarantine:16m"; null:
/// none), reporting on stderr every item it does not know or whose value it cannot take.
runtime_options parse_options(const char* text) noexcept;
global_heap* make_heap() noexcept;
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

/// The storage the_heap is made in: its address is a constant, so the fast paths, which run only
/// once it was made, need not load it.
extern unsigned char heap_storage[sizeof(global_heap)];
MEMKIT_ALWAYS_INLINE global_heap& made_heap() noexcept {
  return *std::launder(reinterpret_cast<global_heap*>(heap_storage));
}

/// Frees a thread makes between two visits to the depot (global_heap::tick): a program whose
/// threads free a peak and then run on their caches alone still sees its memory go back to the
/// OS, after the delay and at most this many frees.
inline constexpr unsigned frees_per_tick = 1024;

/// What the fast paths keep per thread, in one initial-exec TLS object (one address lookup for
/// both fields), `inline` and constant-initialized, so no TLS wrapper call guards it.
struct thread_state {
  /// The calling thread's heap of the_heap, found here in one load rather than through the
  /// thread registry's binding table: set by the slow path once the engine bound one, in mode_fast
  /// only (so it also says the heap is made and the fast paths may run), dropped by the engine's
  /// detach listener when the thread exits.
  global_heap::thread_heap* heap = nullptr;
  unsigned frees_until_tick = frees_per_tick;
};
inline thread_local thread_state me;

/// \returns a block of `bytes` (1 if 0) aligned to `alignment` from the calling thread's cache,
/// or null: then allocate_slow.
MEMKIT_ALWAYS_INLINE void* allocate_fast(std::size_t bytes, std::size_t alignment) noexcept {
  global_heap::thread_heap* t = me.heap;
  if (MEMKIT_LIKELY(t != nullptr && alignment <= malloc_alignment)) {
    return global_heap::pop_small(*t, bytes);
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

void tick_slow(global_heap& h) noexcept;
/// Frees `p` (header `c`) on a thread whose heap is not in me.heap yet (a thread that
/// only frees): through the engine, which binds one, then keeps that heap there.
void free_unbound(global_heap& h, void* p, detail::thread::chunk* c) noexcept;

/// Frees `p` if it lies in the arena and the_mode is mode_fast: a block of a chunk, whose header
/// is found by masking its address. \returns whether it did; if not, free_slow.
MEMKIT_ALWAYS_INLINE bool free_fast(void* p) noexcept {
  if (MEMKIT_LIKELY(detail::address(p) - fast_arena.load(std::memory_order_relaxed) <
                    os_upstream::arena_size)) {
    // No arena lies within arena_size of address 0: null always takes free_slow.
    MEMKIT_ASSUME(p != nullptr);
    global_heap& h = made_heap();
    detail::thread::chunk* const c = detail::thread::chunk_of(p);
    if (global_heap::thread_heap* t = me.heap; MEMKIT_LIKELY(t != nullptr)) {
      h.free_from(p, c, t);
    } else {
      free_unbound(h, p, c);
    }
    if (MEMKIT_UNLIKELY(--me.frees_until_tick == 0)) {
      tick_slow(h);
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
