// SPDX-License-Identifier: BSL-1.0
// memkit/unique.hpp: `allocate_unique`, a `std::unique_ptr` whose deleter destroys the object and
// then returns its memory to the allocator (or memkit resource) it came from, in that order
// (docs/background.md#destroy-then-deallocate).
#pragma once

#include <memory>
#include <type_traits>
#include <utility>

#include "allocator.hpp"
#include "config.hpp"
#include "resource.hpp"

namespace memkit {
inline namespace MEMKIT_ABI {

namespace detail {

/// Stores an allocator without making a stateless one cost a byte (so a `unique_ptr` with an
/// `allocator_delete` over a stateless allocator stays one pointer wide).
template <class A, bool = std::is_empty_v<A> && !std::is_final_v<A>>
class allocator_holder : private A {
public:
  explicit allocator_holder(const A& a) noexcept : A(a) {}
  A& get() noexcept { return *this; }
  const A& get() const noexcept { return *this; }
};

template <class A>
class allocator_holder<A, false> {
public:
  explicit allocator_holder(const A& a) noexcept : a_(a) {}
  A& get() noexcept { return a_; }
  const A& get() const noexcept { return a_; }

private:
  A a_;
};

} // namespace detail

/// A `std::unique_ptr` deleter that destroys the object and deallocates it through `Alloc`, in
/// that order: a pairing easy to get wrong by hand, where a forgotten destructor leaks what the
/// object owned.
///
/// It deliberately does not convert from a deleter for a derived type: deallocating a derived
/// object through its base would return the wrong size to the resource.
/// \requires `Alloc`'s pointer type is `value_type*`.
template <class Alloc>
class allocator_delete : private detail::allocator_holder<Alloc> {
  using traits = std::allocator_traits<Alloc>;
  static_assert(std::is_same_v<typename traits::pointer, typename traits::value_type*>,
                "memkit::allocator_delete: fancy pointers are not supported");

public:
  using allocator_type = Alloc;
  using value_type = typename traits::value_type;

  /// \effects keeps a copy of `a`.
  explicit allocator_delete(const Alloc& a) noexcept : detail::allocator_holder<Alloc>(a) {}

  /// \effects destroys `*p`, then returns its memory with `deallocate(p, 1)`.
  void operator()(value_type* p) noexcept {
    traits::destroy(this->get(), p);
    traits::deallocate(this->get(), p, 1);
  }

  const Alloc& get_allocator() const noexcept { return this->get(); }
};

/// The `unique_ptr` type `allocate_unique<T>(alloc, ...)` returns for allocator type `Alloc`.
template <class T, class Alloc>
using unique_ptr_for = std::unique_ptr<
    T, allocator_delete<typename std::allocator_traits<Alloc>::template rebind_alloc<T>>>;

/// \returns a `unique_ptr` owning a `T` constructed from `args` (through
/// `allocator_traits::construct`, so a `std::pmr::polymorphic_allocator` passes itself on to an
/// allocator-aware `T`) in memory from `alloc` rebound to `T`.
/// \throws whatever allocation or `T`'s constructor throws; nothing leaks then.
template <class T, class Alloc, class... Args,
          class = std::enable_if_t<!is_resource_v<Alloc> && !std::is_array_v<T>>>
unique_ptr_for<T, Alloc> allocate_unique(const Alloc& alloc, Args&&... args) {
  static_assert(!std::is_const_v<T>, "memkit::allocate_unique<T>: T must not be const");
  using rebound = typename std::allocator_traits<Alloc>::template rebind_alloc<T>;
  using traits = std::allocator_traits<rebound>;
  rebound a(alloc);
  T* p = traits::allocate(a, 1);
  try {
    traits::construct(a, p, std::forward<Args>(args)...);
  } catch (...) {
    traits::deallocate(a, p, 1);
    throw;
  }
  return unique_ptr_for<T, Alloc>(p, allocator_delete<rebound>(a));
}

/// \returns as above, with the memory from the memkit resource `r` (through
/// `memkit::allocator<T, Resource>`), which must outlive the pointer.
template <class T, class Resource, class... Args,
          class = std::enable_if_t<is_resource_v<Resource> && !std::is_array_v<T>>>
unique_ptr_for<T, allocator<T, Resource>> allocate_unique(Resource& r, Args&&... args) {
  return allocate_unique<T>(allocator<T, Resource>(r), std::forward<Args>(args)...);
}

} // namespace MEMKIT_ABI
} // namespace memkit
