// SPDX-License-Identifier: BSL-1.0
// memkit/detail/base/os.hpp: every operating-system call memkit makes, behind one small internal
// API. Linux only: mmap/munmap/madvise, the page size, a coarse clock, the kernel's
// transparent-huge-page reports, and the thread-exit hook. The strategies above this file contain
// no system calls and no platform #ifdefs.
#pragma once

#if !defined(__linux__)
#error "memkit/detail/base/os.hpp: only Linux is supported (mmap, madvise, /proc/self/smaps)"
#endif

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <pthread.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "../../config.hpp"
#include "align.hpp"

namespace memkit {
inline namespace MEMKIT_ABI {
namespace detail::os {

/// \returns the size of a regular page, queried once: it is fixed for the life of the process.
inline std::size_t page_size() noexcept {
  static const std::size_t size = [] {
    const long s = ::sysconf(_SC_PAGESIZE);
    return s > 0 ? static_cast<std::size_t>(s) : std::size_t{4096};
  }();
  return size;
}

/// A POSIX thread-specific key: its destructor runs at the exit of every thread whose value for
/// it is not null (detail/thread/registry.hpp's exit hook).
using thread_key = ::pthread_key_t;

/// \effects makes `key`, whose destructor `on_exit` runs at each thread's exit with the thread's
/// value. \returns false when the process ran out of keys.
inline bool make_thread_key(thread_key& key, void (*on_exit)(void*)) noexcept {
  return ::pthread_key_create(&key, on_exit) == 0;
}

/// \effects sets the calling thread's value of `key`.
inline void set_thread_value(thread_key key, const void* value) noexcept {
  ::pthread_setspecific(key, value);
}

/// \returns `bytes` of fresh zeroed read-write anonymous memory, or null.
inline void* map(std::size_t bytes) noexcept {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

/// Returns `[p, p + bytes)` to the kernel. \requires the range is whole pages obtained from map().
inline void unmap(void* p, std::size_t bytes) noexcept { ::munmap(p, bytes); }

/// \returns `bytes` of address space no access is allowed to, charged to no memory limit (even
/// under strict overcommit) until commit() makes parts of it usable; or null.
inline void* reserve(std::size_t bytes) noexcept {
  void* p = ::mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

/// \effects makes `[p, p + bytes)` of a reserve()d range read-write, zero-filled.
/// \returns whether the kernel did it (it may refuse under strict overcommit).
inline bool commit(void* p, std::size_t bytes) noexcept {
  return ::mprotect(p, bytes, PROT_READ | PROT_WRITE) == 0;
}

/// \returns `bytes` of fresh anonymous memory aligned to `alignment`, or null: map() or, with
/// `reserved`, reserve(). mmap only promises page alignment, so this maps
/// `alignment - page_size()` extra bytes and unmaps the unaligned head and the unused tail; the
/// result is one mapping that unmap(p, bytes) returns.
/// \requires `bytes` and `alignment` are multiples of page_size(), `alignment` a power of two.
inline void* map_aligned(std::size_t bytes, std::size_t alignment, bool reserved = false) noexcept {
  const std::size_t slack = alignment - page_size();
  if (bytes > static_cast<std::size_t>(-1) - slack) {
    return nullptr;
  }
  const std::size_t total = bytes + slack;
  auto* base = static_cast<char*>(reserved ? reserve(total) : map(total));
  if (base == nullptr) {
    return nullptr;
  }
  const std::size_t head = padding_for(base, alignment);
  const std::size_t tail = total - head - bytes;
  if (head != 0) {
    unmap(base, head);
  }
  if (tail != 0) {
    unmap(base + head + bytes, tail);
  }
  return base + head;
}

/// Gives the physical pages of `[p, p + bytes)` back to the kernel and keeps the range mapped:
/// it reads as zeros when next touched (MADV_DONTNEED on private anonymous memory).
/// \returns whether the kernel did it. \requires the range is whole pages obtained from map().
inline bool decommit(void* p, std::size_t bytes) noexcept {
  return ::madvise(p, bytes, MADV_DONTNEED) == 0;
}

/// Writes into `resident[i]`, for each of the `pages` pages from `p`, whether it is in memory (bit
/// 0, mincore(2)): a page that is not reads as zeros or comes back from swap when touched.
/// \returns whether the kernel answered. \requires `p` is aligned to page_size().
inline bool residency(void* p, std::size_t pages, unsigned char* resident) noexcept {
  return ::mincore(p, pages * page_size(), resident) == 0;
}

/// Gives the physical pages of `[p, p + bytes)` back to the kernel and makes the range
/// inaccessible, so it is no longer charged to RLIMIT_DATA and any access faults; commit() makes
/// it usable again, zero-filled. \returns whether the kernel did both.
/// \requires the range is whole pages obtained from map() or commit().
inline bool release(void* p, std::size_t bytes) noexcept {
  return ::madvise(p, bytes, MADV_DONTNEED) == 0 && ::mprotect(p, bytes, PROT_NONE) == 0;
}

/// \returns a monotonic clock in milliseconds, at the kernel tick's resolution (a few ms) and the
/// cost of a vDSO read: for delays, not for measurements.
inline std::uint64_t now_ms() noexcept {
  timespec t{};
  ::clock_gettime(CLOCK_MONOTONIC_COARSE, &t);
  return static_cast<std::uint64_t>(t.tv_sec) * 1000 +
         static_cast<std::uint64_t>(t.tv_nsec) / 1000000;
}

/// Asks the kernel to back `[p, p + bytes)` with transparent huge pages when it faults the memory
/// in. \returns whether the kernel accepted the advice (false when THP is not built in); the
/// memory works either way, with regular pages.
inline bool advise_huge_pages(void* p, std::size_t bytes) noexcept {
#if defined(MADV_HUGEPAGE)
  return ::madvise(p, bytes, MADV_HUGEPAGE) == 0;
#else
  (void)p;
  (void)bytes;
  return false;
#endif
}

/// The system-wide transparent-huge-page policy, from /sys/kernel/mm/transparent_hugepage/enabled.
enum class thp_policy {
  always,      ///< every large enough anonymous mapping may get huge pages
  madvise,     ///< only regions advised with MADV_HUGEPAGE
  never,       ///< no transparent huge pages at all
  unavailable, ///< the kernel has no THP support (file missing) or the file could not be parsed
};

/// \returns the current policy: the word in brackets, e.g. "always [madvise] never".
inline thp_policy read_thp_policy() noexcept {
  std::FILE* f = std::fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
  if (f == nullptr) {
    return thp_policy::unavailable;
  }
  char line[128] = {};
  const bool read = std::fgets(line, sizeof line, f) != nullptr;
  std::fclose(f);
  const char* open = read ? std::strchr(line, '[') : nullptr;
  if (open == nullptr) {
    return thp_policy::unavailable;
  }
  if (std::strncmp(open, "[always]", 8) == 0) {
    return thp_policy::always;
  }
  if (std::strncmp(open, "[madvise]", 9) == 0) {
    return thp_policy::madvise;
  }
  if (std::strncmp(open, "[never]", 7) == 0) {
    return thp_policy::never;
  }
  return thp_policy::unavailable;
}

/// \returns how many bytes of `[p, p + bytes)` the kernel backs with transparent huge pages, from
/// the AnonHugePages lines of the mappings (VMAs) that cover the range in /proc/self/smaps. Each
/// VMA's count is capped at its overlap with the range: the kernel reports per VMA, so if it merged
/// the range with an adjacent mapping that also has huge pages, the result is an upper bound.
/// Untouched memory has no pages yet and counts 0. Reads a procfs file: a diagnostic, not a hot
/// path.
inline std::size_t anon_huge_page_bytes(const void* p, std::size_t bytes) noexcept {
  std::FILE* f = std::fopen("/proc/self/smaps", "r");
  if (f == nullptr) {
    return 0;
  }
  const std::uintptr_t first = address(p);
  const std::uintptr_t last = first + bytes;
  std::size_t overlap = 0; // of the VMA whose fields are being read with the range
  std::size_t total = 0;
  bool line_start = true;
  // Long lines (file paths) arrive in pieces; only a piece that starts a line is parsed.
  char line[256];
  while (std::fgets(line, sizeof line, f) != nullptr) {
    const bool starts = line_start;
    line_start = std::strchr(line, '\n') != nullptr;
    if (!starts) {
      continue;
    }
    char* end = nullptr;
    const unsigned long long lo = std::strtoull(line, &end, 16);
    if (end != line && *end == '-') { // a VMA header: "lo-hi perms offset dev inode [path]"
      const unsigned long long hi = std::strtoull(end + 1, nullptr, 16);
      const std::uintptr_t a = lo > first ? static_cast<std::uintptr_t>(lo) : first;
      const std::uintptr_t b = hi < last ? static_cast<std::uintptr_t>(hi) : last;
      overlap = a < b ? static_cast<std::size_t>(b - a) : 0;
      continue;
    }
    if (overlap != 0 && std::strncmp(line, "AnonHugePages:", 14) == 0) {
      const std::size_t kib = std::strtoull(line + 14, nullptr, 10);
      const std::size_t huge = kib * 1024;
      total += huge < overlap ? huge : overlap;
    }
  }
  std::fclose(f);
  return total;
}

} // namespace detail::os
} // namespace MEMKIT_ABI
} // namespace memkit
