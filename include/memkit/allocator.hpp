// SPDX-License-Identifier: BSL-1.0
// memkit/allocator.hpp: `memkit::allocator<T, Resource>`, a stateful standard allocator over any
// memkit resource (docs/concepts.md), safe to move, copy and swap between containers.
#pragma once

#include <cstddef>
#include <limits>
#include <new>
#include <type_traits>
#include <utility>

#include "config.hpp"
#include "resource.hpp"
#include "traits.hpp"

namespace memkit {
inline namespace MEMKIT_ABI {

namespace detail {

/// \returns `n * size` or throws `std::bad_array_new_length` when the product overflows, the
/// standard's answer for an impossible array length.
template <std::size_t Size>
std::size_t array_bytes(std::size_t n) {
  if (n > std::numeric_limits<std::size_t>::max() / Size) {
    throw std::bad_array_new_length();
  }
  return n * Size;
}

/// Storage for `n` objects of type `T` from resource `r`: the one allocation path of every memkit
/// standard allocator. Arrays go to `allocate_array` where the resource has one.
template <class T, class R>
T* allocate_n(R& r, std::size_t n) {
  const std::size_t bytes = array_bytes<sizeof(T)>(n);
  if constexpr (has_array_path_v<R>) {
    if (n != 1) {
      return static_cast<T*>(r.allocate_array(bytes, alignof(T)));
    }
  }
  return static_cast<T*>(r.allocate(bytes, alignof(T)));
}

/// Returns storage from `allocate_n<T>(r, n)`.
template <class T, class R>
void deallocate_n(R& r, T* p, std::size_t n) noexcept {
  if constexpr (has_array_path_v<R>) {
    if (n != 1) {
      r.deallocate_array(p, n * sizeof(T), alignof(T));
      return;
    }
  }
  r.deallocate(p, n * sizeof(T), alignof(T));
}

} // namespace detail

/// A standard allocator that takes its memory from a memkit resource it points to.
///
/// Propagation (each chosen so that no container operation can free a block through a resource
/// that did not allocate it, and tested with equal and unequal instances in containers_test.cpp):
/// - Equality means "can free each other's memory": the same resource object (or two resource
///   objects whose type says they are interchangeable, like two `malloc_resource`s).
///   `is_always_equal` is false: the allocator is stateful
///   (docs/background.md#stateful-always-equal).
/// - Move assignment propagates (`propagate_on_container_move_assignment` true): the target takes
///   the source's blocks *and* its resource, in O(1) and without throwing. The source's resource
///   must then outlive the target.
/// - Swap propagates (`propagate_on_container_swap` true): swapping containers on different
///   resources is O(1) and well defined (with false it would be undefined behaviour).
/// - Copy assignment does not propagate (`propagate_on_container_copy_assignment` false): a copy
///   copies values into the memory the target already uses, so a container bound to an arena or a
///   pool stays bound to it.
/// - Copy construction (`select_on_container_copy_construction`) keeps the source's resource:
///   there is no "default" resource to fall back to, and the copy lives where the original lives.
///
/// Scoped propagation into nested containers is not built in: wrap the allocator in
/// `std::scoped_allocator_adaptor` for that.
///
/// \requires `Resource` implements the resource interface and outlives every allocator (and every
/// container) that refers to it.
template <class T, class Resource>
class allocator {
  MEMKIT_STATIC_ASSERT_RESOURCE(Resource,
                                "memkit::allocator<T, R>: R must implement the resource interface");
  static_assert(!std::is_const_v<T> && !std::is_reference_v<T> && !std::is_function_v<T>,
                "memkit::allocator<T, R>: T must be a non-const object type");

public:
  using value_type = T;
  using resource_type = Resource;
  using size_type = std::size_t;
  using difference_type = std::ptrdiff_t;
  using propagate_on_container_copy_assignment = std::false_type;
  using propagate_on_container_move_assignment = std::true_type;
  using propagate_on_container_swap = std::true_type;
  using is_always_equal = std::false_type;

  template <class U>
  struct rebind {
    using other = allocator<U, Resource>;
  };

  /// \effects refers to `r`. Implicit, as `std::pmr::polymorphic_allocator`'s constructor from a
  /// resource is, so a container can be built from the resource: `std::list<int, A> l(pool);`.
  allocator(Resource& r) noexcept : r_(&r) {} // NOLINT(google-explicit-constructor)

  /// \effects refers to the resource `other` refers to (rebinding, as node containers do).
  template <class U>
  allocator(const allocator<U, Resource>& other) noexcept : r_(&other.resource()) {}

  /// \returns storage for `n` objects of type `T`, aligned to `alignof(T)`.
  /// \throws std::bad_array_new_length if `n * sizeof(T)` overflows; whatever the resource's
  /// `allocate` throws (`memkit::out_of_memory`, `memkit::bad_size`, `memkit::bad_alignment`).
  [[nodiscard]] T* allocate(std::size_t n) { return detail::allocate_n<T>(*r_, n); }

  /// \effects returns `p` to the resource. \requires `p` came from `allocate(n)` of an allocator
  /// equal to this one.
  void deallocate(T* p, std::size_t n) noexcept { detail::deallocate_n(*r_, p, n); }

  /// \returns the largest `n` that `allocate(n)` could ever serve.
  std::size_t max_size() const noexcept { return r_->max_size() / sizeof(T); }

  /// \returns `*this`: a copy-constructed container shares the original's resource.
  allocator select_on_container_copy_construction() const noexcept { return *this; }

  Resource& resource() const noexcept { return *r_; }

private:
  Resource* r_;
};

/// \returns whether memory from `a` can be freed through `b`.
template <class T, class U, class R>
bool operator==(const allocator<T, R>& a, const allocator<U, R>& b) noexcept {
  return &a.resource() == &b.resource() || detail::interchangeable(a.resource(), b.resource());
}

template <class T, class U, class R>
bool operator!=(const allocator<T, R>& a, const allocator<U, R>& b) noexcept {
  return !(a == b);
}

} // namespace MEMKIT_ABI
} // namespace memkit
