// SPDX-License-Identifier: BSL-1.0
// src/heap.cpp: the global replacement's heap (heap.hpp, docs/REPLACEMENT.md) and the slow paths
// of its entry points: making the heap, counting, debug mode, foreign blocks, trimming.
#include "heap.hpp"

#include <atomic>
#include <cstdlib>

#include "internal.hpp"
#include "memkit/error.hpp"
#include "memkit/replacement.h"

namespace memkit::replacement {

std::atomic<process_heap*> the_process_heap{nullptr};
unsigned the_mode = mode_fast;
std::atomic<std::uintptr_t> fast_arena{no_arena};
alignas(process_heap) unsigned char process_heap_storage[sizeof(process_heap)];

namespace {

void* allocate_in(process_heap& h, std::size_t bytes, std::size_t alignment) noexcept {
  return (the_mode & mode_debug) != 0 ? debug_allocate(h, bytes, alignment)
                                      : h.allocate_any(bytes, alignment);
}

// allocate_slow past its first step.
MEMKIT_NOINLINE void* allocate_from_engine(std::size_t bytes, std::size_t alignment) noexcept {
  process_heap* h = the_process_heap.load(std::memory_order_acquire);
  if (h == nullptr) {
    h = make_process_heap();
  }
  void* p = allocate_in(*h, bytes, alignment);
  if (p == nullptr && bytes <= h->max_size()) {
    // Before a request fails (and operator new calls the new_handler), what memkit holds for
    // later goes back: the quarantine, the free chunks' pages and the region heap's free spans,
    // which a limit (RLIMIT_DATA) may be what refused it.
    if ((the_mode & mode_debug) != 0) {
      drain_quarantine(*h);
    }
    h->trim();
    p = allocate_in(*h, bytes, alignment);
  }
  if (the_mode == mode_fast) {
    // The engine has bound a heap to this thread now, unless its exit began.
    keep_heap(h->current_heap());
  }
  if (p != nullptr && (the_mode & mode_stats) != 0) {
    count_allocation(usable_size_of(p));
  }
  return p;
}

} // namespace

void* allocate_slow(std::size_t bytes, std::size_t alignment) noexcept {
  // allocate_fast's miss, first: a block the thread kept from another heap, in a function small
  // enough to need no registers saved (me.heap is set only once the process heap is made).
  if (has_heap() && alignment <= malloc_alignment) {
    if (void* p = made_process_heap().pop_foreign(*me.heap, bytes); p != nullptr) {
      return p;
    }
  }
  return allocate_from_engine(bytes, alignment);
}

void free_slow(void* p) noexcept {
  process_heap* h = the_process_heap.load(std::memory_order_acquire);
  if (p == nullptr) {
    return;
  }
  detail::thread::chunk* c = h != nullptr ? h->find(p) : nullptr;
  if (c == nullptr) {
    free_foreign(p);
    return;
  }
  if ((the_mode & mode_stats) != 0) {
    count_deallocation(usable_size_of(p));
  }
  if ((the_mode & mode_debug) != 0) {
    debug_free(*h, p);
  } else {
    h->free_found(p, c);
  }
  if (--me.frees_until_tick == 0) {
    tick_slow(*h);
  }
}

void free_sized_slow(void* p, std::size_t bytes) noexcept {
  process_heap* h = the_process_heap.load(std::memory_order_acquire);
  if ((the_mode & mode_debug) != 0 && p != nullptr && h != nullptr && h->find(p) != nullptr) {
    std::size_t size = 0;
    if (!debug_check(*h, p, size)) {
      return;
    }
    if (size != (bytes == 0 ? 1 : bytes)) {
      report_misuse(misuse::size_mismatch, heap_name, p, bytes, 0);
      return;
    }
  }
  free_slow(p);
}

std::size_t trim() noexcept {
  process_heap* h = the_process_heap.load(std::memory_order_acquire);
  if (h == nullptr) {
    return 0;
  }
  return h->trim();
}

void tick_slow(process_heap& h) noexcept {
  me.frees_until_tick = frees_per_tick;
  h.tick();
}

void tick_and_free(process_heap& h, void* p) noexcept {
  if (!has_heap()) {
    // A thread that only frees so far: the engine binds it a heap as it frees, which me keeps.
    h.free_found(p, detail::thread::chunk_of(p));
    keep_heap(h.current_heap());
    return;
  }
  tick_slow(h);
  free_in_arena(h, p);
}

void free_foreign(void* p) noexcept {
  count_foreign_free();
  release_foreign(p);
}

// A program linked with memkit::new_delete may run under a preloaded malloc (memkit's own,
// jemalloc's): glibc's __libc_free would abort on that malloc's blocks.
__attribute__((weak)) void release_foreign(void* p) noexcept { ::free(p); }

std::size_t usable_size_of(const void* p) noexcept {
  process_heap& h = *the_process_heap.load(std::memory_order_relaxed);
  if ((the_mode & mode_debug) != 0) {
    // The header is checked before its size is believed: realloc copies that many bytes.
    return debug_size(h, const_cast<void*>(p));
  }
  return process_heap::usable(h.find(p));
}

} // namespace memkit::replacement

using memkit::replacement::the_process_heap;

extern "C" __attribute__((visibility("default"))) int memkit_owns(const void* p) {
  memkit::replacement::process_heap* h = the_process_heap.load(std::memory_order_acquire);
  return h != nullptr && h->owns(p) ? 1 : 0;
}
