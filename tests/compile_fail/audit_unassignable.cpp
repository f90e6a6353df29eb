// SPDX-License-Identifier: BSL-1.0
// compile_fail/audit_unassignable.cpp: an allocator that propagates on move assignment but holds
// its resource by reference cannot be assigned, so containers cannot propagate it; memkit::audit
// says so. The twin holds a pointer and passes.
#include <cstddef>
#include <memory>
#include <type_traits>

#include <memkit/audit.hpp>

struct arena {
  char* top = nullptr;
};

template <class T>
struct arena_allocator {
  using value_type = T;
  using propagate_on_container_move_assignment = std::true_type;

  explicit arena_allocator(arena& a) noexcept : resource(holder(a)) {}
  template <class U>
  arena_allocator(const arena_allocator<U>& other) noexcept : resource(other.resource) {}

  T* allocate(std::size_t n) { return std::allocator<T>().allocate(n); }
  void deallocate(T* p, std::size_t n) noexcept { std::allocator<T>().deallocate(p, n); }
  friend bool operator==(const arena_allocator& a, const arena_allocator& b) noexcept {
    return address(a.resource) == address(b.resource);
  }
  friend bool operator!=(const arena_allocator& a, const arena_allocator& b) noexcept {
    return !(a == b);
  }

#ifdef MEMKIT_COMPILE_FAIL
  static arena& holder(arena& a) noexcept { return a; }
  static const arena* address(const arena& a) noexcept { return &a; }
  arena& resource;
#else
  static arena* holder(arena& a) noexcept { return &a; }
  static const arena* address(const arena* a) noexcept { return a; }
  arena* resource;
#endif
};

static_assert(memkit::audit<arena_allocator<int>>());
