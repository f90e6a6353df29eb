// SPDX-License-Identifier: BSL-1.0
// src/init.cpp: the replacement's start-up (the heap made on the first call of any entry point,
// without allocating, then published) and its fork handlers.
#include <atomic>
#include <cstdlib>
#include <new>
#include <thread>

#include <pthread.h>
#include <unistd.h>

#include "internal.hpp"
#include "memkit/thread_cached.hpp"

namespace memkit::replacement {

runtime_options chosen;

namespace {

// Every lock the heap has, taken before fork and released after it in both processes, so the
// child never inherits one held by a thread it does not have. The child keeps the other threads'
// heaps as they were: their blocks stay valid and free normally; what those threads cached is
// not reused in the child.
void before_fork() noexcept {
  lock_quarantine();
  detail::thread::registry::get().prepare_fork();
  the_process_heap.load(std::memory_order_relaxed)->lock_all();
}

void after_fork() noexcept {
  the_process_heap.load(std::memory_order_relaxed)->unlock_all();
  detail::thread::registry::get().after_fork();
  unlock_quarantine();
}

/// 0 before the first call, heap_made once the heap is published, and in between the id of the
/// process whose thread makes it: a child forked meanwhile sees its parent's, and makes its own
/// heap, as it has no thread that would finish the parent's.
std::atomic<int> heap_state{0};
constexpr int heap_made = -1;

} // namespace

// The engine's tuning is thread_cached's default (thread_cached_options, docs/threads.md).
process_heap::process_heap() noexcept
    : engine_(heap_name, detail::thread::any_size_classes.sizes, detail::thread::any_size_bins,
              thread_cached_options{}.cached_chunks, thread_cached_options{}.batch_blocks,
              os_upstream{}, false) {} // it ticks every frees_per_tick frees (heap.hpp)

process_heap* make_process_heap() noexcept {
  const int me = static_cast<int>(::getpid());
  for (;;) {
    int state = heap_state.load(std::memory_order_acquire);
    if (state == heap_made) {
      return the_process_heap.load(std::memory_order_acquire);
    }
    if (state != me && heap_state.compare_exchange_strong(state, me, std::memory_order_acquire)) {
      break; // the first call of all, or this process's first since a fork that cut one short
    }
    std::this_thread::yield(); // another thread of this process makes it
  }
  // getenv allocates nothing.
  chosen = parse_options(std::getenv("MEMKIT_OPTIONS"));
  the_mode = chosen.mode;
  remember_stderr();
  auto* h = ::new (process_heap_storage) process_heap;
  h->upstream().set_delay_ms(chosen.decay_ms);
  h->on_detach([]() noexcept { keep_heap(nullptr); });
  char* const arena = h->upstream().reserve_arena();
  the_process_heap.store(h, std::memory_order_release);
  if (the_mode == mode_fast && arena != nullptr) {
    fast_arena.store(detail::address(arena), std::memory_order_relaxed);
  }
  heap_state.store(heap_made, std::memory_order_release);
  // Registering may allocate: the heap is published first, so that call is served normally. A
  // fork between the two runs no handler: a child forked then, while another thread of this
  // process held one of the heap's locks, would wait on it (a window of this one call).
  ::pthread_atfork(&before_fork, &after_fork, &after_fork);
  return h;
}

} // namespace memkit::replacement
