// SPDX-License-Identifier: BSL-1.0
// compile_fail/audit_missing_deallocate.cpp: an allocator without deallocate(p, n) is rejected by
// memkit::audit with a message naming the missing member; the twin has it and passes.
#include <cstddef>
#include <memory>

#include <memkit/audit.hpp>

template <class T>
struct counting_allocator {
  using value_type = T;
  counting_allocator() = default;
  template <class U>
  counting_allocator(const counting_allocator<U>&) noexcept {}

  T* allocate(std::size_t n) { return std::allocator<T>().allocate(n); }
#ifndef MEMKIT_COMPILE_FAIL
  void deallocate(T* p, std::size_t n) noexcept { std::allocator<T>().deallocate(p, n); }
#endif
  friend bool operator==(counting_allocator, counting_allocator) noexcept { return true; }
  friend bool operator!=(counting_allocator, counting_allocator) noexcept { return false; }
};

static_assert(memkit::audit<counting_allocator<int>>());
