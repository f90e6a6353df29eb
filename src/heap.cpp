// SPDX-License-Identifier: BSL-1.0
// src/heap.cpp: the global replacement's heap, its options, its counters and its debug mode
// (heap.hpp, docs/REPLACEMENT.md).
#include "heap.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <thread>

#include <pthread.h>
#include <unistd.h>

#include "memkit/error.hpp"
#include "memkit/replacement.h"
#include "memkit/version.hpp"

extern "C" void __libc_free(void* p); // glibc's own free, exported for exactly this

namespace memkit::replacement {

std::atomic<global_heap*> the_heap{nullptr};
unsigned the_mode = mode_fast;
std::atomic<std::uintptr_t> fast_arena{no_arena};
alignas(global_heap) unsigned char heap_storage[sizeof(global_heap)];

namespace {

const char* const heap_name = "memkit::malloc";

thread_cached_options heap_options() noexcept {
  thread_cached_options o;
  o.max_class_size = detail::tc_max_class_size;
  return o;
}

// ---- Options ---------------------------------------------------------------------------------

void write_stderr(const char* s, std::size_t n) noexcept {
  while (n != 0) {
    const ssize_t w = ::write(STDERR_FILENO, s, n);
    if (w <= 0) {
      if (w < 0 && errno == EINTR) {
        continue;
      }
      return;
    }
    s += w;
    n -= static_cast<std::size_t>(w);
  }
}

void write_stderr(const char* s) noexcept { write_stderr(s, std::strlen(s)); }

// Reports an option it does not know rather than ignoring it: a typo would otherwise leave the
// user believing a check ran.
void complain(const char* what, const char* item, std::size_t length) noexcept {
  write_stderr("memkit: ");
  write_stderr(what);
  write_stderr(" \"");
  write_stderr(item, length);
  write_stderr("\" in MEMKIT_OPTIONS (known: stats:0|1, debug:0|1); ignored\n");
}

// ---- Counters (stats:1) ----------------------------------------------------------------------

// Threads count into one of these by a slot taken on their first call: no line is written by two
// threads unless more threads than slots run, and then the atomics keep the sums exact.
struct alignas(cache_line_size) counter_slot {
  std::atomic<std::size_t> allocations{0};
  std::atomic<std::size_t> deallocations{0};
  std::atomic<std::size_t> bytes_allocated{0};
  std::atomic<std::size_t> bytes_freed{0};
  std::atomic<std::size_t> large{0};
};
constexpr std::size_t counter_slots = 64;
counter_slot counters[counter_slots];
std::atomic<std::size_t> next_counter_slot{0};
std::atomic<std::size_t> foreign_frees{0};
thread_local std::size_t my_counter_slot = counter_slots;

counter_slot& my_counters() noexcept {
  if (my_counter_slot == counter_slots) {
    my_counter_slot = next_counter_slot.fetch_add(1, std::memory_order_relaxed) % counter_slots;
  }
  return counters[my_counter_slot];
}

void count_allocation(std::size_t usable) noexcept {
  counter_slot& s = my_counters();
  s.allocations.fetch_add(1, std::memory_order_relaxed);
  s.bytes_allocated.fetch_add(usable, std::memory_order_relaxed);
  if (usable > detail::tc_max_class_size) {
    s.large.fetch_add(1, std::memory_order_relaxed);
  }
}

void count_deallocation(std::size_t usable) noexcept {
  counter_slot& s = my_counters();
  s.deallocations.fetch_add(1, std::memory_order_relaxed);
  s.bytes_freed.fetch_add(usable, std::memory_order_relaxed);
}

// Appends without allocating: the stats line is written at exit, when malloc may be anywhere.
struct line_writer {
  char* out;
  std::size_t size;
  std::size_t length = 0;

  void put(const char* s) noexcept {
    for (; *s != '\0'; ++s) {
      if (length + 1 < size) {
        out[length] = *s;
      }
      ++length;
    }
  }
  void put(std::size_t v) noexcept {
    char digits[24];
    std::size_t n = 0;
    do {
      digits[n++] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v != 0);
    char text[24];
    for (std::size_t i = 0; i < n; ++i) {
      text[i] = digits[n - 1 - i];
    }
    text[n] = '\0';
    put(text);
  }
  void field(const char* name, std::size_t v, bool first = false) noexcept {
    put(first ? "\"" : ",\"");
    put(name);
    put("\":");
    put(v);
  }
};

// ---- Debug mode (debug:1) --------------------------------------------------------------------

// A debug block: [guard][header][the caller's bytes][canary to the end of the engine's block].
// The header sits right before the caller's pointer; the caller's bytes start `offset` after the
// engine's block, so an alignment above 32 is kept.
constexpr std::uint32_t state_live = 0x4556494c;  // "LIVE"
constexpr std::uint32_t state_freed = 0x45455246; // "FREE"
constexpr unsigned char guard_byte = 0xfb;
constexpr unsigned char canary_byte = 0xfd;
constexpr unsigned char fresh_byte = 0xcd;
constexpr unsigned char dead_byte = 0xdd;
constexpr std::size_t guard_bytes = 16;

struct debug_header {
  std::size_t size;
  std::uint32_t offset;
  std::uint32_t state;
};
constexpr std::size_t debug_prefix = guard_bytes + sizeof(debug_header);
static_assert(debug_prefix == 32);

debug_header* header_of(void* q) noexcept {
  return reinterpret_cast<debug_header*>(static_cast<char*>(q) - sizeof(debug_header));
}

// Freed debug blocks wait here before the engine may hand them out again, so a second free of
// the same pointer finds its header still saying FREE.
constexpr std::size_t quarantine_slots = 1024;
std::mutex quarantine_mutex;
void* quarantine[quarantine_slots];
std::size_t quarantine_next = 0;

void* debug_allocate(global_heap& h, std::size_t bytes, std::size_t alignment) noexcept {
  const std::size_t offset = alignment > debug_prefix ? alignment : debug_prefix;
  const std::size_t n = bytes == 0 ? 1 : bytes;
  if (n > h.max_size() - offset - guard_bytes) {
    return nullptr;
  }
  auto* base = static_cast<char*>(h.allocate_any(offset + n + guard_bytes, alignment));
  if (base == nullptr) {
    return nullptr;
  }
  char* const q = base + offset;
  std::memset(base, guard_byte, offset - sizeof(debug_header));
  *header_of(q) = {n, static_cast<std::uint32_t>(offset), state_live};
  std::memset(q, fresh_byte, n);
  const std::size_t block = global_heap::usable(h.find(base));
  std::memset(q + n, canary_byte, block - offset - n);
  return q;
}

bool all_bytes(const char* p, std::size_t n, unsigned char b) noexcept {
  for (std::size_t i = 0; i < n; ++i) {
    if (static_cast<unsigned char>(p[i]) != b) {
      return false;
    }
  }
  return true;
}

// \returns the engine block of the debug block at `q`, after checking every guard; reports the
// misuse (default: print it and abort) and returns null otherwise.
char* debug_check(global_heap& h, void* q) noexcept {
  detail::tc_chunk* const c = h.find(q);
  auto* const cq = static_cast<char*>(q);
  if (c == nullptr || cq - debug_prefix < c->blocks) {
    report_misuse(misuse::foreign_pointer, heap_name, q, 0, 0);
    return nullptr;
  }
  const debug_header hd = *header_of(q);
  if (hd.state == state_freed) {
    report_misuse(misuse::double_free, heap_name, q, hd.size, 0);
    return nullptr;
  }
  char* const base = cq - hd.offset;
  if (hd.state != state_live || hd.offset < debug_prefix || base < c->blocks || !h.screen(base)) {
    report_misuse(misuse::foreign_pointer, heap_name, q, 0, 0);
    return nullptr;
  }
  if (!all_bytes(base, hd.offset - sizeof(debug_header), guard_byte)) {
    report_misuse(misuse::underrun, heap_name, q, hd.size, 0);
    return nullptr;
  }
  const std::size_t block = global_heap::usable(c);
  if (!all_bytes(cq + hd.size, block - hd.offset - hd.size, canary_byte)) {
    report_misuse(misuse::overrun, heap_name, q, hd.size, 0);
    return nullptr;
  }
  return base;
}

void debug_free(global_heap& h, void* q) noexcept {
  char* const base = debug_check(h, q);
  if (base == nullptr) {
    return;
  }
  debug_header* const hd = header_of(q);
  std::memset(q, dead_byte, hd->size);
  hd->state = state_freed;
  void* evicted = nullptr;
  {
    const std::lock_guard<std::mutex> lock(quarantine_mutex);
    evicted = quarantine[quarantine_next];
    quarantine[quarantine_next] = base;
    quarantine_next = (quarantine_next + 1) % quarantine_slots;
  }
  if (evicted != nullptr) {
    h.free_found(evicted, h.find(evicted));
  }
}

// ---- fork(2) ---------------------------------------------------------------------------------

// Every lock the heap has, taken before fork and released after it in both processes, so the
// child never inherits one held by a thread it does not have. The child keeps the other threads'
// heaps as they were: their blocks stay valid and free normally; what those threads cached is
// not reused in the child.
void before_fork() noexcept {
  quarantine_mutex.lock();
  detail::thread_registry::get().prepare_fork();
  the_heap.load(std::memory_order_relaxed)->lock_all();
}

void after_fork() noexcept {
  the_heap.load(std::memory_order_relaxed)->unlock_all();
  detail::thread_registry::get().after_fork();
  quarantine_mutex.unlock();
}

std::atomic<int> heap_state{0}; // 0: none, 1: being made, 2: made

std::size_t stats_json(char* out, std::size_t size) noexcept {
  std::size_t allocations = 0;
  std::size_t deallocations = 0;
  std::size_t bytes_allocated = 0;
  std::size_t bytes_freed = 0;
  std::size_t large = 0;
  for (const counter_slot& s : counters) {
    allocations += s.allocations.load(std::memory_order_relaxed);
    deallocations += s.deallocations.load(std::memory_order_relaxed);
    bytes_allocated += s.bytes_allocated.load(std::memory_order_relaxed);
    bytes_freed += s.bytes_freed.load(std::memory_order_relaxed);
    large += s.large.load(std::memory_order_relaxed);
  }
  std::size_t heaps = 0;
  std::size_t mapped = 0;
  std::size_t peak_mapped = 0;
  if (global_heap* h = the_heap.load(std::memory_order_acquire); h != nullptr) {
    heaps = h->heap_count();
    h->lock_all(); // the upstream's lock
    mapped = h->upstream().mapped();
    peak_mapped = h->upstream().peak_mapped();
    h->unlock_all();
  }
  line_writer w{out, size};
  w.put("{\"memkit\":{\"version\":\"" MEMKIT_VERSION_STRING "\"");
  w.field("allocations", allocations);
  w.field("deallocations", deallocations);
  w.field("bytes_in_use", bytes_allocated - bytes_freed);
  w.field("large_allocations", large);
  w.field("foreign_frees", foreign_frees.load(std::memory_order_relaxed));
  w.field("heaps", heaps);
  w.field("mapped_bytes", mapped);
  w.field("peak_mapped_bytes", peak_mapped);
  w.put("}}");
  if (size != 0) {
    out[w.length < size ? w.length : size - 1] = '\0';
  }
  return w.length;
}

// Runs after the program's own exit handlers and static destructors (this library's destructor
// runs last, as it was loaded or linked first), so their frees are counted.
__attribute__((destructor)) void print_stats_at_exit() noexcept {
  if ((the_mode & mode_stats) == 0) {
    return;
  }
  char line[512];
  const std::size_t n = stats_json(line, sizeof(line) - 1);
  const std::size_t length = n < sizeof(line) - 2 ? n : sizeof(line) - 2;
  line[length] = '\n';
  write_stderr(line, length + 1);
}

} // namespace

unsigned parse_options(const char* text) noexcept {
  unsigned m = mode_fast;
  for (const char* p = text; p != nullptr && *p != '\0';) {
    const char* end = std::strchr(p, ',');
    const std::size_t length = end == nullptr ? std::strlen(p) : static_cast<std::size_t>(end - p);
    const char* colon = static_cast<const char*>(std::memchr(p, ':', length));
    const std::size_t name_length = colon == nullptr ? length : static_cast<std::size_t>(colon - p);
    const char* value = colon == nullptr ? "" : colon + 1;
    const std::size_t value_length = colon == nullptr ? 0 : length - name_length - 1;
    unsigned bit = 0;
    if (name_length == 5 && std::strncmp(p, "stats", 5) == 0) {
      bit = mode_stats;
    } else if (name_length == 5 && std::strncmp(p, "debug", 5) == 0) {
      bit = mode_debug;
    }
    if (length == 0) {
      // an empty item ("a,,b" or a trailing comma) says nothing
    } else if (bit == 0) {
      complain("unknown option", p, length);
    } else if (value_length == 1 && (*value == '0' || *value == '1')) {
      m = *value == '1' ? (m | bit) : (m & ~bit);
    } else {
      complain("bad value (0 or 1) in", p, length);
    }
    p = end == nullptr ? nullptr : end + 1;
  }
  return m;
}

global_heap::global_heap() noexcept : thread_cached(os_upstream{}, heap_options()) {}

global_heap* make_heap() noexcept {
  int expected = 0;
  if (heap_state.compare_exchange_strong(expected, 1, std::memory_order_acquire)) {
    // The first call of all. getenv allocates nothing.
    the_mode = parse_options(std::getenv("MEMKIT_OPTIONS"));
    auto* h = ::new (heap_storage) global_heap;
    h->on_detach([]() noexcept { me.heap = nullptr; });
    char* const arena = h->upstream().reserve_arena();
    the_heap.store(h, std::memory_order_release);
    if (the_mode == mode_fast && arena != nullptr) {
      fast_arena.store(detail::address(arena), std::memory_order_relaxed);
    }
    heap_state.store(2, std::memory_order_release);
    // Registering may allocate: the heap is published first, so that call is served normally.
    ::pthread_atfork(&before_fork, &after_fork, &after_fork);
    return h;
  }
  while (heap_state.load(std::memory_order_acquire) != 2) {
    std::this_thread::yield();
  }
  return the_heap.load(std::memory_order_acquire);
}

void* allocate_slow(std::size_t bytes, std::size_t alignment) noexcept {
  global_heap* h = the_heap.load(std::memory_order_acquire);
  if (h == nullptr) {
    h = make_heap();
  }
  void* p = (the_mode & mode_debug) != 0 ? debug_allocate(*h, bytes, alignment)
                                         : h->allocate_any(bytes, alignment);
  if (the_mode == mode_fast) {
    // The engine has bound a heap to this thread now, unless its exit began.
    me.heap = h->current_heap();
  }
  if (p != nullptr && (the_mode & mode_stats) != 0) {
    count_allocation(usable_size_of(p));
  }
  return p;
}

void free_slow(void* p) noexcept {
  global_heap* h = the_heap.load(std::memory_order_acquire);
  if (p == nullptr) {
    return;
  }
  detail::tc_chunk* c = h != nullptr ? h->find(p) : nullptr;
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
  global_heap* h = the_heap.load(std::memory_order_acquire);
  if ((the_mode & mode_debug) != 0 && p != nullptr && h != nullptr && h->find(p) != nullptr &&
      debug_check(*h, p) != nullptr && header_of(p)->size != (bytes == 0 ? 1 : bytes)) {
    report_misuse(misuse::size_mismatch, heap_name, p, bytes, 0);
    return;
  }
  free_slow(p);
}

std::size_t trim() noexcept {
  global_heap* h = the_heap.load(std::memory_order_acquire);
  if (h == nullptr) {
    return 0;
  }
  return h->trim();
}

void free_unbound(global_heap& h, void* p, detail::tc_chunk* c) noexcept {
  h.free_found(p, c);
  me.heap = h.current_heap();
}

void tick_slow(global_heap& h) noexcept {
  me.frees_until_tick = frees_per_tick;
  h.tick();
}

void free_foreign(void* p) noexcept {
  foreign_frees.fetch_add(1, std::memory_order_relaxed);
  __libc_free(p);
}

std::size_t usable_size_of(const void* p) noexcept {
  if ((the_mode & mode_debug) != 0) {
    return header_of(const_cast<void*>(p))->size;
  }
  return global_heap::usable(the_heap.load(std::memory_order_relaxed)->find(p));
}

} // namespace memkit::replacement

using memkit::replacement::the_heap;

extern "C" __attribute__((visibility("default"))) int memkit_owns(const void* p) {
  memkit::replacement::global_heap* h = the_heap.load(std::memory_order_acquire);
  return h != nullptr && h->owns(p) ? 1 : 0;
}

extern "C" __attribute__((visibility("default"))) size_t memkit_stats_json(char* buffer,
                                                                           size_t size) {
  return memkit::replacement::stats_json(buffer, size);
}
