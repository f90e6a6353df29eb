// SPDX-License-Identifier: BSL-1.0
// memkit/traits.hpp: compile-time detection of the resource interface (docs/concepts.md, "The
// resource interface"): what a type implements, and which optional members it has. Everything that
// adapts to a resource's capabilities (decorators, adapters, the audit, the fuzz driver, the typed
// tests) asks here, so each member is detected in one place.
#pragma once

#include <cstddef>
#include <type_traits>
#include <utility>

#include "config.hpp"

#if MEMKIT_CONCEPTS
#include <concepts>
#endif

namespace memkit {
inline namespace MEMKIT_ABI {

/// Whether `R` implements the resource interface: `allocate`, `try_allocate` and `deallocate` with
/// a size and an alignment, `max_size()`, `max_alignment()` and `name()`, with `try_allocate` and
/// `deallocate` noexcept.
template <class R, class = void>
struct is_resource : std::false_type {};
template <class R>
struct is_resource<
    R, std::void_t<decltype(std::declval<R&>().allocate(std::size_t{}, std::size_t{})),
                   decltype(std::declval<R&>().try_allocate(std::size_t{}, std::size_t{})),
                   decltype(std::declval<R&>().deallocate(nullptr, std::size_t{}, std::size_t{})),
                   decltype(std::declval<const R&>().max_size()),
                   decltype(std::declval<const R&>().max_alignment()),
                   decltype(std::declval<const R&>().name())>>
    : std::bool_constant<
          noexcept(std::declval<R&>().try_allocate(std::size_t{}, std::size_t{}))&& noexcept(
              std::declval<R&>().deallocate(nullptr, std::size_t{}, std::size_t{}))> {};
template <class R>
inline constexpr bool is_resource_v = is_resource<R>::value;

/// Whether `R` answers `owns(p)` (required of a fallback's primary).
template <class R, class = void>
struct has_owns : std::false_type {};
template <class R>
struct has_owns<R, std::void_t<decltype(std::declval<const R&>().owns(nullptr))>> : std::true_type {
};
template <class R>
inline constexpr bool has_owns_v = has_owns<R>::value;

/// Whether `R` has `reset()`: every block free, chunks kept.
template <class R, class = void>
struct has_reset : std::false_type {};
template <class R>
struct has_reset<R, std::void_t<decltype(std::declval<R&>().reset())>> : std::true_type {};
template <class R>
inline constexpr bool has_reset_v = has_reset<R>::value;

/// Whether `R` has `release()`: every chunk back to the upstream.
template <class R, class = void>
struct has_release : std::false_type {};
template <class R>
struct has_release<R, std::void_t<decltype(std::declval<R&>().release())>> : std::true_type {};
template <class R>
inline constexpr bool has_release_v = has_release<R>::value;

/// Whether `R` has markers (arena, stack): `marker()`, `rollback(marker)` and `used()`, the bytes
/// in use, which tells an older marker from a younger one. `marker_t<R>` is the marker type.
template <class R, class = void>
struct has_markers : std::false_type {};
template <class R>
struct has_markers<R,
                   std::void_t<decltype(std::declval<R&>().rollback(std::declval<R&>().marker())),
                               decltype(std::declval<const R&>().used())>> : std::true_type {};
template <class R>
inline constexpr bool has_markers_v = has_markers<R>::value;
template <class R>
using marker_t = decltype(std::declval<R&>().marker());

/// Whether `R` serves arrays differently from single objects (node_pool does): it then provides
/// `allocate_array` / `deallocate_array`, which the standard allocators call for every `n != 1`.
template <class R, class = void>
struct has_array_path : std::false_type {};
template <class R>
struct has_array_path<
    R, std::void_t<decltype(std::declval<R&>().allocate_array(std::size_t{}, std::size_t{})),
                   decltype(std::declval<R&>().deallocate_array(nullptr, std::size_t{},
                                                                std::size_t{}))>> : std::true_type {
};
template <class R>
inline constexpr bool has_array_path_v = has_array_path<R>::value;

/// Whether `R` reports `stats()` (docs/statistics.md): every strategy does, in every build.
template <class R, class = void>
struct has_stats : std::false_type {};
template <class R>
struct has_stats<R, std::void_t<decltype(std::declval<const R&>().stats())>> : std::true_type {};
template <class R>
inline constexpr bool has_stats_v = has_stats<R>::value;

/// Whether `R` counts its live blocks: `in_use()` (the free-list strategies) or `live_blocks()`
/// (debug_resource).
template <class R, class = void>
struct has_in_use : std::false_type {};
template <class R>
struct has_in_use<R, std::void_t<decltype(std::declval<const R&>().in_use())>> : std::true_type {};
template <class R>
inline constexpr bool has_in_use_v = has_in_use<R>::value;

template <class R, class = void>
struct has_live_blocks : std::false_type {};
template <class R>
struct has_live_blocks<R, std::void_t<decltype(std::declval<const R&>().live_blocks())>>
    : std::true_type {};
template <class R>
inline constexpr bool has_live_blocks_v = has_live_blocks<R>::value;

/// Whether objects of type `T` compare with `==` and `!=`. For a resource, equality means "can
/// free each other's blocks" (stateless upstreams, `resource_ref`s to one resource); a resource
/// type without it is equal only to itself. Allocators must have it (audit.hpp).
template <class T, class = void>
struct has_equality : std::false_type {};
template <class T>
struct has_equality<
    T,
    std::void_t<decltype(static_cast<bool>(std::declval<const T&>() == std::declval<const T&>())),
                decltype(static_cast<bool>(std::declval<const T&>() != std::declval<const T&>()))>>
    : std::true_type {};
template <class T>
inline constexpr bool has_equality_v = has_equality<T>::value;

/// Whether every member of `R` may be called from several threads at once: `R` says so with
/// `static constexpr bool thread_safe = true` (the stateless upstreams over malloc, operator new
/// and mmap do). `synchronized<R>` takes no lock for such a resource.
template <class R, class = void>
struct is_thread_safe : std::false_type {};
template <class R>
struct is_thread_safe<R, std::enable_if_t<R::thread_safe>> : std::true_type {};
template <class R>
inline constexpr bool is_thread_safe_v = is_thread_safe<R>::value;

namespace detail {

/// Whether two distinct resource objects can free each other's blocks: only when the resource
/// type says so through `==`.
template <class R>
bool interchangeable(const R& a, const R& b) noexcept {
  if constexpr (has_equality_v<R>) {
    return static_cast<bool>(a == b);
  } else {
    (void)a;
    (void)b;
    return false;
  }
}

} // namespace detail

#if MEMKIT_CONCEPTS
// The same detections as concepts, so that a `static_assert` or a constraint that fails names the
// member that is missing (the traits above only say "false"). Each one includes `resource`.

/// The resource interface (docs/concepts.md).
template <class R>
concept resource = requires(R& r, const R& c, void* p, std::size_t n) {
  r.allocate(n, n);
  { r.try_allocate(n, n) }
  noexcept;
  { r.deallocate(p, n, n) }
  noexcept;
  c.max_size();
  c.max_alignment();
  c.name();
};

template <class R>
concept resource_with_owns = resource<R> && requires(const R& c, const void* p) {
  c.owns(p);
};

template <class R>
concept resource_with_reset = resource<R> && requires(R& r) {
  r.reset();
};

template <class R>
concept resource_with_release = resource<R> && requires(R& r) {
  r.release();
};

template <class R>
concept resource_with_markers = resource<R> && requires(R& r, const R& c) {
  r.rollback(r.marker());
  c.used();
};

template <class R>
concept resource_with_array_path = resource<R> && requires(R& r, void* p, std::size_t n) {
  r.allocate_array(n, n);
  r.deallocate_array(p, n, n);
};

template <class R>
concept resource_with_stats = resource<R> && requires(const R& c) {
  c.stats();
};

template <class R>
concept resource_with_in_use = resource<R> && requires(const R& c) {
  c.in_use();
};

template <class R>
concept resource_with_live_blocks = resource<R> && requires(const R& c) {
  c.live_blocks();
};

template <class R>
concept interchangeable_resource = resource<R> && requires(const R& a, const R& b) {
  { a == b } -> std::convertible_to<bool>;
  { a != b } -> std::convertible_to<bool>;
};
#endif

} // namespace MEMKIT_ABI
} // namespace memkit

/// Fails to compile with `message` unless `R` implements the resource interface; with C++20 the
/// compiler also names the member that is missing.
#if MEMKIT_CONCEPTS
#define MEMKIT_STATIC_ASSERT_RESOURCE(R, message) static_assert(::memkit::resource<R>, message)
#else
#define MEMKIT_STATIC_ASSERT_RESOURCE(R, message) static_assert(::memkit::is_resource_v<R>, message)
#endif
