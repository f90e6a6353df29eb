// SPDX-License-Identifier: BSL-1.0
// src/malloc.cpp: the C allocation functions of libmemkit-preload.so, with glibc's contracts
// (docs/REPLACEMENT.md, "Contracts").
#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include <dlfcn.h>

#include "heap.hpp"
#include "memkit/detail/base/align.hpp"
#include "memkit/detail/base/os.hpp"
#include "trace.hpp"

extern "C" void* __libc_realloc(void* p, std::size_t bytes); // glibc's own realloc
extern "C" void __libc_free(void* p);                        // and free

namespace memkit::replacement {

// This library's `free` is memkit's: a block it did not hand out was glibc's (heap.hpp).
void release_foreign(void* p) noexcept { __libc_free(p); }

namespace {

MEMKIT_NOINLINE void* allocate_slow_or_enomem(std::size_t bytes, std::size_t alignment,
                                              trace_kind k, const void* caller) noexcept {
  void* p = allocate_slow_at(bytes, alignment, k, caller);
  if (p == nullptr) {
    errno = ENOMEM;
  }
  return p;
}

// The fast path returns a block or nothing, so it needs no errno and no register kept across a
// call: the slow path is a tail call. The entry point's kind and caller are for a trace
// (trace.hpp, which says why the caller is read here); the realloc family's inner calls pass none
// and are recorded as the realloc.
MEMKIT_ALWAYS_INLINE void* allocate_or_enomem(std::size_t bytes, std::size_t alignment,
                                              trace_kind k = untraced) noexcept {
  if (void* p = allocate_fast(bytes, alignment); MEMKIT_LIKELY(p != nullptr)) {
    return p;
  }
  return allocate_slow_or_enomem(bytes, alignment, k, MEMKIT_CALLER());
}

bool is_power_of_two(std::size_t a) noexcept { return a != 0 && (a & (a - 1)) == 0; }

// glibc's memalign: alignments up to malloc's are malloc; above half the address space, EINVAL;
// any other alignment that is not a power of two is rounded up to one.
// Inlined, so that its caller is the entry point's (trace.hpp).
MEMKIT_ALWAYS_INLINE void* memalign_like_glibc(std::size_t alignment, std::size_t bytes,
                                               trace_kind k) noexcept {
  if (alignment <= malloc_alignment) {
    return allocate_or_enomem(bytes, malloc_alignment, k);
  }
  constexpr std::size_t largest = (static_cast<std::size_t>(-1) >> 1) + 1;
  if (alignment > largest) {
    errno = EINVAL;
    return nullptr;
  }
  std::size_t a = alignment;
  while (!is_power_of_two(a)) {
    a += a & (0 - a); // add the lowest set bit until one bit is left
  }
  return allocate_or_enomem(bytes, a, k);
}

// glibc's malloc_usable_size, for blocks glibc handed out before memkit took over.
std::size_t glibc_usable_size(void* p) noexcept {
  using fn = std::size_t (*)(void*);
  static const fn next = reinterpret_cast<fn>(::dlsym(RTLD_NEXT, "malloc_usable_size"));
  return next != nullptr ? next(p) : 0;
}

/// From this size on, calloc writes only the pages of a block that are in memory, and gives the
/// others back instead (they then read as zeros when touched, whether they were never touched or
/// are in swap): a block this large lies in a region of its own, just mapped or kept with old
/// contents (os_upstream.hpp). A kept region's pages are resident, and writing them costs less
/// than the page faults a program that uses its block would take on pages given back (`git log
/// -p` callocs blocks of 1 and 2 MiB again and again: docs/REPLACEMENT.md); pages never touched
/// stay untouched for a program that uses a part of a large zeroed block.
constexpr std::size_t zero_by_pages_from = std::size_t{1} << 20;

/// Zeroes the whole pages of `[pages, pages + bytes)` as zero() says, a window of pages at a time.
void zero_pages(char* pages, std::size_t bytes) noexcept {
  constexpr std::size_t window = 1024; // pages a residency query covers
  unsigned char resident[window];
  const std::size_t page = detail::os::page_size(); // mincore's unit
  for (std::size_t done = 0; done < bytes;) {
    char* const at = pages + done;
    const std::size_t n = std::min(window, (bytes - done) / page);
    if (n == 0) { // less than one of the OS's pages, where they are larger than page_size
      std::memset(at, 0, bytes - done);
      return;
    }
    if (!detail::os::residency(at, n, resident)) {
      std::memset(at, 0, n * page);
    } else {
      for (std::size_t i = 0; i < n;) {
        std::size_t j = i + 1;
        while (j < n && (resident[j] & 1) == (resident[i] & 1)) {
          ++j;
        }
        char* const run = at + i * page;
        const std::size_t run_bytes = (j - i) * page;
        if ((resident[i] & 1) != 0 || !detail::os::decommit(run, run_bytes)) {
          std::memset(run, 0, run_bytes);
        }
        i = j;
      }
    }
    done += n * page;
  }
}

void zero(void* p, std::size_t bytes) noexcept {
  if (bytes < zero_by_pages_from || (the_mode & mode_debug) != 0) { // its guards share pages
    std::memset(p, 0, bytes);
    return;
  }
  auto* const first = static_cast<char*>(p);
  char* const last = first + bytes;
  char* const pages = first + detail::padding_for(first, page_size);
  char* const pages_end = last - detail::address(last) % page_size;
  std::memset(first, 0, static_cast<std::size_t>(pages - first));
  zero_pages(pages, static_cast<std::size_t>(pages_end - pages));
  std::memset(pages_end, 0, static_cast<std::size_t>(last - pages_end));
}

bool multiply_overflows(std::size_t a, std::size_t b, std::size_t* product) noexcept {
  return __builtin_mul_overflow(a, b, product);
}

} // namespace
} // namespace memkit::replacement

namespace mr = memkit::replacement;

#define MEMKIT_EXPORT extern "C" __attribute__((visibility("default")))

MEMKIT_EXPORT void* malloc(std::size_t bytes) noexcept {
  return mr::allocate_or_enomem(bytes, mr::malloc_alignment, mr::trace_kind::malloc);
}

MEMKIT_EXPORT void free(void* p) noexcept { mr::free_at(p, mr::trace_kind::free); }

MEMKIT_EXPORT void* calloc(std::size_t count, std::size_t size) noexcept {
  std::size_t bytes = 0;
  if (mr::multiply_overflows(count, size, &bytes)) {
    errno = ENOMEM;
    return nullptr;
  }
  void* p = mr::allocate_or_enomem(bytes, mr::malloc_alignment, mr::trace_kind::calloc);
  if (p != nullptr) {
    mr::zero(p, bytes);
  }
  return p;
}

namespace memkit::replacement {
namespace {

void* realloc_untraced(void* p, std::size_t bytes) noexcept {
  if (p == nullptr) {
    return mr::allocate_or_enomem(bytes, mr::malloc_alignment);
  }
  if (bytes == 0) { // glibc frees the block and returns null
    mr::free(p);
    return nullptr;
  }
  std::size_t usable = 0;
  if (mr::in_fast_arena(p)) { // the_mode is mode_fast: the header is found by masking
    memkit::detail::thread::chunk* const c = memkit::detail::thread::chunk_of(p);
    if (mr::made_process_heap().resize_in_place(p, c, bytes)) {
      return p;
    }
    usable = mr::process_heap::usable(c);
  } else {
    mr::process_heap* h = mr::the_process_heap.load(std::memory_order_acquire);
    memkit::detail::thread::chunk* c = h != nullptr ? h->find(p) : nullptr;
    if (c == nullptr) {
      return __libc_realloc(p, bytes); // glibc's block stays glibc's
    }
    if ((mr::the_mode & ~mr::mode_trace) == 0 && h->resize_in_place(p, c, bytes)) {
      return p;
    }
    usable = mr::usable_size_of(p);
  }
  void* q = mr::allocate_or_enomem(bytes, mr::malloc_alignment);
  if (q != nullptr) {
    std::memcpy(q, p, bytes < usable ? bytes : usable);
    mr::free(p);
  }
  return q;
}

} // namespace
} // namespace memkit::replacement

MEMKIT_EXPORT void* realloc(void* p, std::size_t bytes) noexcept {
  if (MEMKIT_UNLIKELY((mr::the_mode & mr::mode_trace) != 0)) {
    return mr::record_realloc(&mr::realloc_untraced, p, bytes, mr::trace_kind::realloc,
                              MEMKIT_CALLER());
  }
  return mr::realloc_untraced(p, bytes);
}

MEMKIT_EXPORT void* reallocarray(void* p, std::size_t count, std::size_t size) noexcept {
  std::size_t bytes = 0;
  if (mr::multiply_overflows(count, size, &bytes)) {
    errno = ENOMEM;
    return nullptr;
  }
  if (MEMKIT_UNLIKELY((mr::the_mode & mr::mode_trace) != 0)) {
    return mr::record_realloc(&mr::realloc_untraced, p, bytes, mr::trace_kind::reallocarray,
                              MEMKIT_CALLER());
  }
  return mr::realloc_untraced(p, bytes);
}

MEMKIT_EXPORT int posix_memalign(void** out, std::size_t alignment, std::size_t bytes) noexcept {
  if (alignment % sizeof(void*) != 0 || !mr::is_power_of_two(alignment)) {
    return EINVAL;
  }
  void* p = mr::allocate_at(bytes, alignment, mr::trace_kind::posix_memalign);
  if (p == nullptr) {
    return ENOMEM;
  }
  *out = p;
  return 0;
}

// glibc 2.36 implements aligned_alloc as memalign (the power-of-two check came in 2.38).
MEMKIT_EXPORT void* aligned_alloc(std::size_t alignment, std::size_t bytes) noexcept {
  return mr::memalign_like_glibc(alignment, bytes, mr::trace_kind::aligned_alloc);
}

MEMKIT_EXPORT void* memalign(std::size_t alignment, std::size_t bytes) noexcept {
  return mr::memalign_like_glibc(alignment, bytes, mr::trace_kind::memalign);
}

MEMKIT_EXPORT void* valloc(std::size_t bytes) noexcept {
  return mr::memalign_like_glibc(memkit::page_size, bytes, mr::trace_kind::valloc);
}

MEMKIT_EXPORT void* pvalloc(std::size_t bytes) noexcept {
  const std::size_t rounded = memkit::detail::round_up(bytes, memkit::page_size);
  if (rounded < bytes) {
    errno = ENOMEM;
    return nullptr;
  }
  return mr::memalign_like_glibc(memkit::page_size, rounded, mr::trace_kind::pvalloc);
}

MEMKIT_EXPORT std::size_t malloc_usable_size(void* p) noexcept {
  if (p == nullptr) {
    return 0;
  }
  mr::process_heap* h = mr::the_process_heap.load(std::memory_order_acquire);
  if (h == nullptr || h->find(p) == nullptr) {
    return mr::glibc_usable_size(p);
  }
  return mr::usable_size_of(p);
}

MEMKIT_EXPORT int malloc_trim(std::size_t) noexcept { return mr::trim() != 0 ? 1 : 0; }
