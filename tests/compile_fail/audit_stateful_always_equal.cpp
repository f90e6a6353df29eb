// SPDX-License-Identifier: BSL-1.0
// compile_fail/audit_stateful_always_equal.cpp: a stateful pool allocator that claims every
// instance is interchangeable and does not propagate on move assignment (the container bug of
// docs/background.md#stateful-always-equal) is rejected by memkit::audit; the fixed twin
// (is_always_equal false, propagating) passes.
#include <cstddef>
#include <memory>
#include <type_traits>

#include <memkit/audit.hpp>

struct pool_resource {
  void* free_list = nullptr;
};

template <class T>
struct pool_allocator {
  using value_type = T;
#ifdef MEMKIT_COMPILE_FAIL
  using is_always_equal = std::true_type;
#else
  using is_always_equal = std::false_type;
  using propagate_on_container_move_assignment = std::true_type;
#endif

  explicit pool_allocator(pool_resource& r) noexcept : resource(&r) {}
  template <class U>
  pool_allocator(const pool_allocator<U>& other) noexcept : resource(other.resource) {}

  T* allocate(std::size_t n) { return std::allocator<T>().allocate(n); }
  void deallocate(T* p, std::size_t n) noexcept { std::allocator<T>().deallocate(p, n); }

  friend bool operator==(const pool_allocator& a, const pool_allocator& b) noexcept {
    return a.resource == b.resource;
  }
  friend bool operator!=(const pool_allocator& a, const pool_allocator& b) noexcept {
    return !(a == b);
  }

  pool_resource* resource;
};

static_assert(memkit::audit<pool_allocator<int>>());
