// SPDX-License-Identifier: BSL-1.0
// memkit/static_allocator.hpp: `memkit::static_allocator<T, Tag>`, a stateless standard allocator
// over one process-wide resource per tag (docs/background.md#x-containers and #array-pool).
#pragma once

#include <cstddef>
#include <type_traits>

#include "allocator.hpp"
#include "config.hpp"
#include "detail/singleton.hpp"
#include "multipool.hpp"
#include "resource.hpp"
#include "thread_cached.hpp"

namespace memkit {
inline namespace MEMKIT_ABI {

/// The default tag: one process-wide `thread_cached<>` (per-thread caches over multipool's size
/// classes, thread_cached.hpp), so containers that use it may live on, move between and be
/// destroyed on any thread, and threads that allocate at once do not wait for each other. It
/// replaced `synchronized<multipool<>>` when measured faster both alone and under contention
/// (docs/threads.md, "The x-containers' default", which also lists what changed with it).
struct default_tag {};

/// One process-wide `multipool<>` with no lock: only for programs in which every container of this
/// tag is used from a single thread at a time (including its destruction at exit).
struct unsynchronized_tag {};

/// Which resource `static_allocator<T, Tag>` draws from. Every tag gets its own process-wide
/// `thread_cached<>` unless this is specialized for it:
/// \code
///   struct audio_tag {};
///   template <> struct memkit::static_resource_traits<audio_tag> {
///     using resource_type = memkit::multipool<>;  // the audio thread only: no lock
///     static resource_type& get() noexcept { return memkit::static_resource<resource_type,
///     audio_tag>(); }
///   };
/// \endcode
/// A specialization's `get()` must return the same object on every call, and that object must
/// outlive every container of the tag (the helper below never destroys it).
template <class Tag>
struct static_resource_traits {
  using resource_type = thread_cached<>;
  static resource_type& get() noexcept { return detail::immortal<resource_type, Tag>(); }
};

template <>
struct static_resource_traits<unsynchronized_tag> {
  using resource_type = multipool<>;
  static resource_type& get() noexcept {
    return detail::immortal<resource_type, unsynchronized_tag>();
  }
};

/// \returns the process-wide, default-constructed, never-destroyed `Resource` of `Tag`, for
/// specializations of `static_resource_traits`.
template <class Resource, class Tag>
Resource& static_resource() noexcept(std::is_nothrow_default_constructible_v<Resource>) {
  return detail::immortal<Resource, Tag>();
}

/// A stateless standard allocator: every instance with the same `Tag` draws from, and returns to,
/// the one resource `static_resource_traits<Tag>::get()`, so `is_always_equal` is true and
/// containers move, swap and copy freely. Default-constructible, so containers need no
/// constructor argument (the x-containers in xcontainers.hpp are aliases over it).
template <class T, class Tag = default_tag>
class static_allocator {
public:
  using value_type = T;
  using tag_type = Tag;
  using resource_type = typename static_resource_traits<Tag>::resource_type;
  using size_type = std::size_t;
  using difference_type = std::ptrdiff_t;
  using is_always_equal = std::true_type;
  // Instances are interchangeable, so propagation only decides what containers may skip; these
  // are std::allocator's choices.
  using propagate_on_container_move_assignment = std::true_type;
  using propagate_on_container_copy_assignment = std::false_type;
  using propagate_on_container_swap = std::false_type;

  template <class U>
  struct rebind {
    using other = static_allocator<U, Tag>;
  };

  static_allocator() noexcept = default;
  template <class U>
  static_allocator(const static_allocator<U, Tag>&) noexcept {}

  /// \returns storage for `n` objects of type `T` from the tag's resource.
  /// \throws std::bad_array_new_length if `n * sizeof(T)` overflows; the resource's exceptions.
  [[nodiscard]] T* allocate(std::size_t n) { return detail::allocate_n<T>(resource(), n); }

  /// \effects returns `p` to the tag's resource. \requires `p` came from `allocate(n)`.
  void deallocate(T* p, std::size_t n) noexcept { detail::deallocate_n(resource(), p, n); }

  std::size_t max_size() const noexcept { return resource().max_size() / sizeof(T); }

  /// \returns the tag's process-wide resource.
  static resource_type& resource() noexcept { return static_resource_traits<Tag>::get(); }
};

template <class T, class U, class Tag>
constexpr bool operator==(const static_allocator<T, Tag>&,
                          const static_allocator<U, Tag>&) noexcept {
  return true;
}

template <class T, class U, class Tag>
constexpr bool operator!=(const static_allocator<T, Tag>&,
                          const static_allocator<U, Tag>&) noexcept {
  return false;
}

} // namespace MEMKIT_ABI
} // namespace memkit
