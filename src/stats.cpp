// SPDX-License-Identifier: BSL-1.0
// src/stats.cpp: stats:1 (docs/REPLACEMENT.md, "Options"): per-thread counter slots, the JSON
// line, written without allocating at exit, only to the stderr the program started with or to
// stats:PATH, and memkit_stats_json.
#include <atomic>
#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.hpp"
#include "memkit/replacement.h"
#include "memkit/stats.hpp"
#include "memkit/version.hpp"

namespace memkit::replacement {

void write_all(int fd, const char* s, std::size_t n) noexcept {
  while (n != 0) {
    const ssize_t w = ::write(fd, s, n);
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

void write_stderr(const char* s) noexcept { write_all(STDERR_FILENO, s, std::strlen(s)); }

namespace {

// Threads count into one of these by a slot taken on their first call: no line is written by two
// threads unless more threads than slots run, and then the atomics keep the sums exact. The
// library's counters (memkit/stats.hpp, its field list and its one implementation), counted
// whatever MEMKIT_STATISTICS is: stats:1 is chosen at run time. bytes_in_use sums modulo 2^N: a
// slot's goes below zero when its thread frees another's blocks.
struct alignas(cache_line_size) counter_slot {
  detail::counters<detail::shared_cell, false> calls;
  detail::shared_cell large; ///< large_allocations: those above every class
};
constexpr std::size_t counter_slots = 64;
counter_slot counters[counter_slots];
std::atomic<std::size_t> next_counter_slot{0};
detail::shared_cell foreign_frees;
thread_local std::size_t my_counter_slot = counter_slots;

counter_slot& my_counters() noexcept {
  if (my_counter_slot == counter_slots) {
    my_counter_slot = next_counter_slot.fetch_add(1, std::memory_order_relaxed) % counter_slots;
  }
  return counters[my_counter_slot];
}

} // namespace

void count_allocation(std::size_t usable) noexcept {
  counter_slot& s = my_counters();
  s.calls.on_allocate(usable);
  if (usable > detail::thread::max_class_size) {
    s.large.add(1);
  }
}

void count_deallocation(std::size_t usable) noexcept { my_counters().calls.on_deallocate(usable); }

namespace {

// Which file descriptor 2 was when the program started (its first allocation, or this library's
// constructor if that came first): the stats line goes there only while descriptor 2 is still
// that file, never into one the program opened after closing its stderr.
std::atomic<bool> stderr_remembered{false};
bool stderr_known = false;
dev_t stderr_device = 0;
ino_t stderr_inode = 0;

} // namespace

void remember_stderr() noexcept {
  if (stderr_remembered.exchange(true, std::memory_order_acq_rel)) {
    return;
  }
  struct stat st {};
  if (::fstat(STDERR_FILENO, &st) == 0) {
    stderr_device = st.st_dev;
    stderr_inode = st.st_ino;
    stderr_known = true;
  }
}

namespace {

__attribute__((constructor)) void remember_stderr_at_start() noexcept { remember_stderr(); }

bool stderr_is_the_programs() noexcept {
  struct stat st {};
  return stderr_known && ::fstat(STDERR_FILENO, &st) == 0 && st.st_dev == stderr_device &&
         st.st_ino == stderr_inode;
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
  if (chosen.stats_path[0] != '\0') {
    // O_APPEND: each process of a program that forks or runs others adds its own line.
    const int fd = ::open(chosen.stats_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0) {
      write_all(fd, line, length + 1);
      ::close(fd);
    }
  } else if (stderr_is_the_programs()) {
    write_all(STDERR_FILENO, line, length + 1);
  }
}

} // namespace

void count_foreign_free() noexcept { foreign_frees.add(1); }

std::size_t stats_json(char* out, std::size_t size) noexcept {
  statistics calls;
  std::size_t large = 0;
  for (const counter_slot& s : counters) {
    s.calls.add_to(calls);
    large += s.large.get();
  }
  std::size_t heaps = 0;
  std::size_t mapped = 0;
  std::size_t peak_mapped = 0;
  if (process_heap* h = the_process_heap.load(std::memory_order_acquire); h != nullptr) {
    heaps = h->heap_count();
    h->lock_all(); // the upstream's lock
    mapped = h->upstream().mapped();
    peak_mapped = h->upstream().peak_mapped();
    h->unlock_all();
  }
  text_writer w{out, size};
  w.put("{\"memkit\":{\"version\":\"" MEMKIT_VERSION_STRING "\"");
  w.field("allocations", calls.allocations);
  w.field("deallocations", calls.deallocations);
  w.field("bytes_in_use", calls.bytes_in_use);
  w.field("large_allocations", large);
  w.field("foreign_frees", foreign_frees.get());
  w.field("heaps", heaps);
  w.field("mapped_bytes", mapped);
  w.field("peak_mapped_bytes", peak_mapped);
  w.put("}}");
  w.terminate();
  return w.length;
}

} // namespace memkit::replacement

extern "C" __attribute__((visibility("default"))) size_t memkit_stats_json(char* buffer,
                                                                           size_t size) {
  return memkit::replacement::stats_json(buffer, size);
}
