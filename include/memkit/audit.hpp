// SPDX-License-Identifier: BSL-1.0
// memkit/audit.hpp: compile-time checks that an allocator type is safe to give to a container,
// and that an allocator-aware element type has the constructors containers need.
#pragma once

#include <cstddef>
#include <memory>
#include <scoped_allocator>
#include <type_traits>
#include <utility>

#include "config.hpp"
#include "traits.hpp"

namespace memkit {
inline namespace MEMKIT_ABI {

namespace detail::audit_probe {

// What allocators are rebound to in the rebinding check: over-aligned and odd-sized, like a
// container's private node type, so a rebinding that only works for one size is caught.
struct alignas(16) node {
  char payload[40];
};

template <class A, class = void>
struct has_value_type : std::false_type {};
template <class A>
struct has_value_type<A, std::void_t<typename A::value_type>> : std::true_type {};

template <class A, class = void>
struct can_allocate : std::false_type {};
template <class A>
struct can_allocate<A, std::void_t<decltype(std::declval<A&>().allocate(std::size_t{}))>>
    : std::true_type {};

template <class A, class = void>
struct can_deallocate : std::false_type {};
template <class A>
struct can_deallocate<
    A, std::void_t<decltype(std::declval<A&>().deallocate(
           std::declval<typename std::allocator_traits<A>::pointer>(), std::size_t{}))>>
    : std::true_type {};

template <class A, class U, class = void>
struct rebound {
  static constexpr bool value = false;
};
template <class A, class U>
struct rebound<A, U, std::void_t<typename std::allocator_traits<A>::template rebind_alloc<U>>> {
  using type = typename std::allocator_traits<A>::template rebind_alloc<U>;
  static constexpr bool value =
      std::is_constructible_v<type, const A&> && std::is_constructible_v<A, const type&>;
};

// The propagation traits, read only once `value_type` is known to exist (allocator_traits is not
// usable otherwise).
template <class A, bool = has_value_type<A>::value>
struct propagation {
  static constexpr bool always_equal = false;
  static constexpr bool on_copy_assignment = false;
  static constexpr bool on_move_assignment = false;
  static constexpr bool on_swap = false;
};
template <class A>
struct propagation<A, true> {
  using traits = std::allocator_traits<A>;
  static constexpr bool always_equal = traits::is_always_equal::value;
  static constexpr bool on_copy_assignment = traits::propagate_on_container_copy_assignment::value;
  static constexpr bool on_move_assignment = traits::propagate_on_container_move_assignment::value;
  static constexpr bool on_swap = traits::propagate_on_container_swap::value;
};

} // namespace detail::audit_probe

/// Whether instances of allocator type `A` hold no state of their own, so that claiming
/// `is_always_equal` is plausible. Judged by `std::is_empty`; specialize it for an allocator that
/// is stateless yet not an empty class.
template <class A>
struct is_stateless_allocator : std::is_empty<A> {};

/// An adaptor is stateless when every allocator it adapts is (it stores them, so it is not empty).
template <class Outer, class... Inner>
struct is_stateless_allocator<std::scoped_allocator_adaptor<Outer, Inner...>>
    : std::conjunction<is_stateless_allocator<Outer>, is_stateless_allocator<Inner>...> {};

/// The findings of the allocator audit for `A`; `ok` is true when there is nothing to report.
/// Every member is a constant expression, usable in `static_assert` and `if constexpr`.
///
/// "Stateful" means `!is_stateless_allocator<A>`, by default "not an empty class": an allocator
/// with data members is assumed to refer to memory of its own, which makes `is_always_equal` a lie.
template <class A>
struct allocator_audit {
  static constexpr bool has_value_type = detail::audit_probe::has_value_type<A>::value;
  static constexpr bool has_allocate = detail::audit_probe::can_allocate<A>::value;
  // conjunction: the later checks need value_type and must not even be instantiated without it.
  static constexpr bool has_deallocate = std::conjunction_v<detail::audit_probe::has_value_type<A>,
                                                            detail::audit_probe::can_deallocate<A>>;
  static constexpr bool equality_comparable = has_equality_v<A>;
  static constexpr bool copyable = std::is_copy_constructible_v<A>;
  /// Node containers allocate through `rebind_alloc<Node>` built from the user's allocator.
  static constexpr bool rebinds =
      std::conjunction_v<detail::audit_probe::has_value_type<A>,
                         detail::audit_probe::rebound<A, detail::audit_probe::node>>;

  using propagation = detail::audit_probe::propagation<A>;
  static constexpr bool stateful = !is_stateless_allocator<A>::value;
  /// Claims every instance can free every other's memory while holding state.
  static constexpr bool stateful_always_equal = stateful && propagation::always_equal;
  /// docs/background.md#stateful-always-equal: move assignment keeps the target's allocator (no
  /// propagation) and, trusting `is_always_equal`, steals the source's blocks, later freeing them
  /// through the wrong instance.
  static constexpr bool unsafe_move_assignment =
      stateful_always_equal && !propagation::on_move_assignment;
  /// Propagating an allocator means assigning or swapping it: an allocator holding a reference
  /// cannot be, and the containers' move assignment and swap then fail deep inside the library.
  static constexpr bool move_propagation_unusable =
      propagation::on_move_assignment && !std::is_move_assignable_v<A>;
  static constexpr bool copy_propagation_unusable =
      propagation::on_copy_assignment && !std::is_copy_assignable_v<A>;
  static constexpr bool swap_propagation_unusable = propagation::on_swap && !std::is_swappable_v<A>;

  static constexpr bool ok = has_value_type && has_allocate && has_deallocate &&
                             equality_comparable && copyable && rebinds && !stateful_always_equal &&
                             !unsafe_move_assignment && !move_propagation_unusable &&
                             !copy_propagation_unusable && !swap_propagation_unusable;
};

/// Whether `A` passes the audit (for `static_assert` or SFINAE without diagnostics).
template <class A>
inline constexpr bool is_sound_allocator_v = allocator_audit<A>::ok;

/// Fails to compile, with one message per problem found, unless `A` is safe to give to standard
/// containers: the members containers need, a working rebind, and propagation traits that cannot
/// make a container free memory through an allocator that did not allocate it.
/// Use as `static_assert(memkit::audit<MyAllocator<int>>());`. \returns true.
template <class A>
constexpr bool audit() noexcept {
  using r = allocator_audit<A>;
  static_assert(r::has_value_type, "memkit::audit: the allocator has no value_type");
  static_assert(r::has_allocate, "memkit::audit: the allocator has no allocate(n)");
  static_assert(r::has_deallocate, "memkit::audit: the allocator has no deallocate(p, n)");
  static_assert(r::equality_comparable,
                "memkit::audit: the allocator is not equality comparable (a == b, a != b): "
                "containers compare allocators to know whether they can free each other's memory");
  static_assert(r::copyable, "memkit::audit: the allocator is not copy-constructible");
  static_assert(r::rebinds,
                "memkit::audit: the allocator cannot be rebound to another type "
                "(allocator_traits<A>::rebind_alloc<U> and converting constructors both ways): "
                "node containers (list, map, set, unordered_*) allocate nodes through it");
  static_assert(!r::stateful_always_equal,
                "memkit::audit: the allocator is stateful (not an empty class) yet declares "
                "is_always_equal = true: containers will free one instance's memory through "
                "another, corrupting the pool that receives it; declare "
                "is_always_equal = std::false_type");
  static_assert(!r::unsafe_move_assignment,
                "memkit::audit: the propagation traits make container move assignment unsafe: "
                "propagate_on_container_move_assignment is false and is_always_equal is true, so "
                "the target keeps its own allocator and later frees the source's blocks through "
                "it; declare propagate_on_container_move_assignment = std::true_type");
  static_assert(!r::move_propagation_unusable,
                "memkit::audit: propagate_on_container_move_assignment is true but the "
                "allocator cannot be move-assigned (a reference member?), so container move "
                "assignment cannot propagate it");
  static_assert(!r::copy_propagation_unusable,
                "memkit::audit: propagate_on_container_copy_assignment is true but the allocator "
                "is not copy-assignable");
  static_assert(!r::swap_propagation_unusable,
                "memkit::audit: propagate_on_container_swap is true but the allocator cannot be "
                "swapped");
  return r::ok;
}

/// The findings of the allocator-awareness audit of element type `T` with allocator `Alloc`
/// (docs/background.md#pmr-extended-constructors): a type that uses an allocator must be
/// constructible with it by default, by copy and by move, in either of the standard's two
/// conventions (allocator last, or `std::allocator_arg` first), or a `std::pmr::vector<T>` fails
/// as soon as it grows.
template <class T, class Alloc>
struct allocator_aware_audit {
  static constexpr bool uses_allocator = std::uses_allocator_v<T, Alloc>;
  static constexpr bool default_extended =
      std::is_constructible_v<T, std::allocator_arg_t, const Alloc&> ||
      std::is_constructible_v<T, const Alloc&>;
  static constexpr bool copy_extended =
      std::is_constructible_v<T, std::allocator_arg_t, const Alloc&, const T&> ||
      std::is_constructible_v<T, const T&, const Alloc&>;
  static constexpr bool move_extended =
      std::is_constructible_v<T, std::allocator_arg_t, const Alloc&, T&&> ||
      std::is_constructible_v<T, T&&, const Alloc&>;
  /// Growth moves elements only when that cannot throw; otherwise it copies them (slower).
  static constexpr bool nothrow_move_extended =
      std::is_nothrow_constructible_v<T, std::allocator_arg_t, const Alloc&, T&&> ||
      std::is_nothrow_constructible_v<T, T&&, const Alloc&>;
  static constexpr bool ok =
      uses_allocator && default_extended && copy_extended && move_extended && nothrow_move_extended;
};

/// Fails to compile, naming each missing constructor, unless `T` is properly allocator-aware for
/// `Alloc` (by default its `allocator_type`). \returns true.
template <class T, class Alloc = typename T::allocator_type>
constexpr bool audit_allocator_aware() noexcept {
  using r = allocator_aware_audit<T, Alloc>;
  static_assert(r::uses_allocator,
                "memkit::audit_allocator_aware: T does not use the allocator "
                "(std::uses_allocator<T, Alloc> is false: no matching allocator_type)");
  static_assert(r::default_extended,
                "memkit::audit_allocator_aware: T lacks an allocator-extended default constructor "
                "T(const allocator_type&)");
  static_assert(r::copy_extended,
                "memkit::audit_allocator_aware: T lacks an allocator-extended copy constructor "
                "T(const T&, const allocator_type&): a container of T cannot construct a copy "
                "of an element with its own allocator");
  static_assert(r::move_extended,
                "memkit::audit_allocator_aware: T lacks an allocator-extended move constructor "
                "T(T&&, const allocator_type&): a std::pmr::vector<T> cannot move its "
                "elements into a new buffer, so it fails to compile where it grows");
  static_assert(!r::move_extended || r::nothrow_move_extended,
                "memkit::audit_allocator_aware: T has no noexcept allocator-extended move "
                "constructor T(T&&, const allocator_type&) (the copy one stands in, or the move "
                "one may throw): vectors of T copy every element when they grow");
  return r::ok;
}

} // namespace MEMKIT_ABI
} // namespace memkit
