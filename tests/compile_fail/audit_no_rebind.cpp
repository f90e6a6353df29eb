// SPDX-License-Identifier: BSL-1.0
// compile_fail/audit_no_rebind.cpp: a pool allocator parameterized by a block count
// (docs/background.md#pool-allocator-rebind) has a non-type template parameter the automatic rebind
// cannot replace, so node containers cannot rebind it; memkit::audit says so. The twin declares
// `rebind` and passes.
#include <cstddef>
#include <memory>

#include <memkit/audit.hpp>

template <class T, std::size_t BlockCount>
struct pool_allocator {
  using value_type = T;
#ifndef MEMKIT_COMPILE_FAIL
  template <class U>
  struct rebind {
    using other = pool_allocator<U, BlockCount>;
  };
  pool_allocator() = default;
  template <class U>
  pool_allocator(const pool_allocator<U, BlockCount>&) noexcept {}
#endif

  T* allocate(std::size_t n) { return std::allocator<T>().allocate(n); }
  void deallocate(T* p, std::size_t n) noexcept { std::allocator<T>().deallocate(p, n); }
  friend bool operator==(const pool_allocator&, const pool_allocator&) noexcept { return true; }
  friend bool operator!=(const pool_allocator&, const pool_allocator&) noexcept { return false; }
};

static_assert(memkit::audit<pool_allocator<int, 64>>());
