// SPDX-License-Identifier: BSL-1.0
// src/new_delete.cpp: every replaceable operator new and delete, in one object file so a program
// that links any of them links all (memkit::new_delete and libmemkit-preload.so).
#include <cstddef>
#include <new>

#include "heap.hpp"

namespace mr = memkit::replacement;

namespace {

// [new.delete.single]: try; on failure call the new_handler and try again; without a handler,
// throw bad_alloc. The allocator itself never throws: the exception object comes from the
// runtime's own emergency path, not from inside a half-done allocation.
void* new_or_throw(std::size_t bytes, std::size_t alignment) {
  for (;;) {
    if (void* p = mr::allocate(bytes, alignment); MEMKIT_LIKELY(p != nullptr)) {
      return p;
    }
    std::new_handler handler = std::get_new_handler();
    if (handler == nullptr) {
      throw std::bad_alloc();
    }
    handler();
  }
}

void* new_or_null(std::size_t bytes, std::size_t alignment) noexcept {
  try {
    return new_or_throw(bytes, alignment);
  } catch (...) {
    return nullptr;
  }
}

} // namespace

#define MEMKIT_EXPORT __attribute__((visibility("default")))

MEMKIT_EXPORT void* operator new(std::size_t n) { return new_or_throw(n, mr::malloc_alignment); }
MEMKIT_EXPORT void* operator new[](std::size_t n) { return new_or_throw(n, mr::malloc_alignment); }
MEMKIT_EXPORT void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  return new_or_null(n, mr::malloc_alignment);
}
MEMKIT_EXPORT void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  return new_or_null(n, mr::malloc_alignment);
}
MEMKIT_EXPORT void* operator new(std::size_t n, std::align_val_t a) {
  return new_or_throw(n, static_cast<std::size_t>(a));
}
MEMKIT_EXPORT void* operator new[](std::size_t n, std::align_val_t a) {
  return new_or_throw(n, static_cast<std::size_t>(a));
}
MEMKIT_EXPORT void* operator new(std::size_t n, std::align_val_t a,
                                 const std::nothrow_t&) noexcept {
  return new_or_null(n, static_cast<std::size_t>(a));
}
MEMKIT_EXPORT void* operator new[](std::size_t n, std::align_val_t a,
                                   const std::nothrow_t&) noexcept {
  return new_or_null(n, static_cast<std::size_t>(a));
}

// Sized forms free by the block's own header: a wrong size cannot move a block to another class
// (debug mode reports it).
MEMKIT_EXPORT void operator delete(void* p) noexcept { mr::free(p); }
MEMKIT_EXPORT void operator delete[](void* p) noexcept { mr::free(p); }
MEMKIT_EXPORT void operator delete(void* p, const std::nothrow_t&) noexcept { mr::free(p); }
MEMKIT_EXPORT void operator delete[](void* p, const std::nothrow_t&) noexcept { mr::free(p); }
MEMKIT_EXPORT void operator delete(void* p, std::size_t n) noexcept { mr::free_sized(p, n); }
MEMKIT_EXPORT void operator delete[](void* p, std::size_t n) noexcept { mr::free_sized(p, n); }
MEMKIT_EXPORT void operator delete(void* p, std::align_val_t) noexcept { mr::free(p); }
MEMKIT_EXPORT void operator delete[](void* p, std::align_val_t) noexcept { mr::free(p); }
MEMKIT_EXPORT void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  mr::free(p);
}
MEMKIT_EXPORT void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  mr::free(p);
}
MEMKIT_EXPORT void operator delete(void* p, std::size_t n, std::align_val_t) noexcept {
  mr::free_sized(p, n);
}
MEMKIT_EXPORT void operator delete[](void* p, std::size_t n, std::align_val_t) noexcept {
  mr::free_sized(p, n);
}
