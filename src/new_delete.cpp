// SPDX-License-Identifier: BSL-1.0
// src/new_delete.cpp: every replaceable operator new and delete, in one object file so a program
// that links any of them links all (memkit::new_delete and libmemkit-preload.so).
#include <cstddef>
#include <new>

#include "heap.hpp"
#include "trace.hpp"

namespace mr = memkit::replacement;

namespace {

// [new.delete.single]: try; on failure call the new_handler and try again; without a handler,
// throw bad_alloc. The allocator itself never throws: the exception object comes from the
// runtime's own emergency path, not from inside a half-done allocation.
// `k` is what a trace records; both are inlined into the operator, whose caller a trace records
// (trace.hpp).
// operator new's loop (the new_handler, the exception) out of line, so the fast path keeps no
// register across a call and tail-calls this, as malloc's does (malloc.cpp).
MEMKIT_NOINLINE void* new_slow(std::size_t bytes, std::size_t alignment, mr::trace_kind k,
                               const void* caller) {
  for (;;) {
    if (void* p = mr::allocate_slow_at(bytes, alignment, k, caller); p != nullptr) {
      return p;
    }
    std::new_handler handler = std::get_new_handler();
    if (handler == nullptr) {
      throw std::bad_alloc();
    }
    handler();
  }
}

MEMKIT_NOINLINE void* new_slow_or_null(std::size_t bytes, std::size_t alignment, mr::trace_kind k,
                                       const void* caller) noexcept {
  try {
    return new_slow(bytes, alignment, k, caller);
  } catch (...) {
    return nullptr;
  }
}

// The entry point's caller is read here, inlined into it (trace.hpp).
MEMKIT_ALWAYS_INLINE void* new_or_throw(std::size_t bytes, std::size_t alignment,
                                        mr::trace_kind k) {
  if (void* p = mr::allocate_fast(bytes, alignment); MEMKIT_LIKELY(p != nullptr)) {
    return p;
  }
  return new_slow(bytes, alignment, k, MEMKIT_CALLER());
}

MEMKIT_ALWAYS_INLINE void* new_or_null(std::size_t bytes, std::size_t alignment,
                                       mr::trace_kind k) noexcept {
  if (void* p = mr::allocate_fast(bytes, alignment); MEMKIT_LIKELY(p != nullptr)) {
    return p;
  }
  return new_slow_or_null(bytes, alignment, k, MEMKIT_CALLER());
}

} // namespace

#define MEMKIT_EXPORT __attribute__((visibility("default")))
#define MEMKIT_KIND(name) mr::trace_kind::name

MEMKIT_EXPORT void* operator new(std::size_t n) {
  return new_or_throw(n, mr::malloc_alignment, MEMKIT_KIND(operator_new));
}
MEMKIT_EXPORT void* operator new[](std::size_t n) {
  return new_or_throw(n, mr::malloc_alignment, MEMKIT_KIND(operator_new_array));
}
MEMKIT_EXPORT void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  return new_or_null(n, mr::malloc_alignment, MEMKIT_KIND(operator_new_nothrow));
}
MEMKIT_EXPORT void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  return new_or_null(n, mr::malloc_alignment, MEMKIT_KIND(operator_new_array_nothrow));
}
MEMKIT_EXPORT void* operator new(std::size_t n, std::align_val_t a) {
  return new_or_throw(n, static_cast<std::size_t>(a), MEMKIT_KIND(operator_new_aligned));
}
MEMKIT_EXPORT void* operator new[](std::size_t n, std::align_val_t a) {
  return new_or_throw(n, static_cast<std::size_t>(a), MEMKIT_KIND(operator_new_array_aligned));
}
MEMKIT_EXPORT void* operator new(std::size_t n, std::align_val_t a,
                                 const std::nothrow_t&) noexcept {
  return new_or_null(n, static_cast<std::size_t>(a), MEMKIT_KIND(operator_new_aligned_nothrow));
}
MEMKIT_EXPORT void* operator new[](std::size_t n, std::align_val_t a,
                                   const std::nothrow_t&) noexcept {
  return new_or_null(n, static_cast<std::size_t>(a),
                     MEMKIT_KIND(operator_new_array_aligned_nothrow));
}

// Sized forms free by the block's own header: a wrong size cannot move a block to another class
// (debug mode reports it). The size and alignment passed are recorded in a trace.
MEMKIT_EXPORT void operator delete(void* p) noexcept {
  mr::free_at(p, MEMKIT_KIND(operator_delete));
}
MEMKIT_EXPORT void operator delete[](void* p) noexcept {
  mr::free_at(p, MEMKIT_KIND(operator_delete_array));
}
MEMKIT_EXPORT void operator delete(void* p, const std::nothrow_t&) noexcept {
  mr::free_at(p, MEMKIT_KIND(operator_delete_nothrow));
}
MEMKIT_EXPORT void operator delete[](void* p, const std::nothrow_t&) noexcept {
  mr::free_at(p, MEMKIT_KIND(operator_delete_array_nothrow));
}
MEMKIT_EXPORT void operator delete(void* p, std::size_t n) noexcept {
  mr::free_at(p, MEMKIT_KIND(operator_delete_sized), n);
}
MEMKIT_EXPORT void operator delete[](void* p, std::size_t n) noexcept {
  mr::free_at(p, MEMKIT_KIND(operator_delete_array_sized), n);
}
MEMKIT_EXPORT void operator delete(void* p, std::align_val_t a) noexcept {
  mr::free_at(p, MEMKIT_KIND(operator_delete_aligned), 0, static_cast<std::size_t>(a));
}
MEMKIT_EXPORT void operator delete[](void* p, std::align_val_t a) noexcept {
  mr::free_at(p, MEMKIT_KIND(operator_delete_array_aligned), 0, static_cast<std::size_t>(a));
}
MEMKIT_EXPORT void operator delete(void* p, std::align_val_t a, const std::nothrow_t&) noexcept {
  mr::free_at(p, MEMKIT_KIND(operator_delete_aligned_nothrow), 0, static_cast<std::size_t>(a));
}
MEMKIT_EXPORT void operator delete[](void* p, std::align_val_t a, const std::nothrow_t&) noexcept {
  mr::free_at(p, MEMKIT_KIND(operator_delete_array_aligned_nothrow), 0,
              static_cast<std::size_t>(a));
}
MEMKIT_EXPORT void operator delete(void* p, std::size_t n, std::align_val_t a) noexcept {
  mr::free_at(p, MEMKIT_KIND(operator_delete_sized_aligned), n, static_cast<std::size_t>(a));
}
MEMKIT_EXPORT void operator delete[](void* p, std::size_t n, std::align_val_t a) noexcept {
  mr::free_at(p, MEMKIT_KIND(operator_delete_array_sized_aligned), n, static_cast<std::size_t>(a));
}
