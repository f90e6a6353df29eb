// memkit/static_allocator.hpp: `memkit::static_allocator<T, Tag>`, a stateless standard allocator
// over one process-wide resource per tag (docs/background.md#x-containers and #array-pool).
#pragma once

#include <cstddef>
#include <mutex>
#include <new>
#include <type_traits>
#include <utility>

#include "allocator.hpp"
#include "config.hpp"
#include "multipool.hpp"
#include "resource.hpp"

namespace memkit {
inline namespace MEMKIT_ABI {

/// The default tag: one process-wide `multipool<>` behind a mutex, so containers that use it may
/// live on, move between and be destroyed on any thread. The lock costs an uncontended
/// lock/unlock pair per allocation; tags that need no lock are below.
struct default_tag {};

/// One process-wide `multipool<>` with no lock: only for programs in which every container of this
/// tag is used from a single thread at a time (including its destruction at exit).
struct unsynchronized_tag {};

namespace detail {

/// A resource behind a mutex: every call locks. Used for the process-wide default resource, which
/// any thread may reach through the x-containers.
template <class Resource>
class locked_resource {
public:
  template <class... Args>
  explicit locked_resource(Args&&... args) noexcept(
      std::is_nothrow_constructible_v<Resource, Args&&...>)
      : r_(std::forward<Args>(args)...) {}

  locked_resource(const locked_resource&) = delete;
  locked_resource& operator=(const locked_resource&) = delete;

  const char* name() const noexcept { return r_.name(); }
  std::size_t max_size() const noexcept { return r_.max_size(); }
  std::size_t max_alignment() const noexcept { return r_.max_alignment(); }

  void* allocate(std::size_t bytes, std::size_t alignment = default_alignment) {
    return allocate_or_throw(*this, bytes, alignment);
  }
  void* try_allocate(std::size_t bytes, std::size_t alignment = default_alignment) noexcept {
    const std::lock_guard<std::mutex> lock(m_);
    return r_.try_allocate(bytes, alignment);
  }
  void deallocate(void* p, std::size_t bytes, std::size_t alignment = default_alignment) noexcept {
    const std::lock_guard<std::mutex> lock(m_);
    r_.deallocate(p, bytes, alignment);
  }

  /// The wrapped resource, for statistics. \requires no other thread uses it meanwhile.
  Resource& unlocked() noexcept { return r_; }

private:
  std::mutex m_;
  Resource r_;
};

/// The one `Resource` of `Tag`, constructed on first use (thread-safe, as every function-local
/// static) and never destroyed. Never destroying it is what makes it safe to use from the
/// constructors and destructors of other static objects in any translation unit: a global x-
/// container destroyed at exit still finds its resource alive. Its chunks stay reachable from
/// static storage, so leak checkers do not report them; the OS reclaims them at exit.
template <class Resource, class Tag>
Resource& immortal() noexcept(std::is_nothrow_default_constructible_v<Resource>) {
  alignas(Resource) static unsigned char storage[sizeof(Resource)];
  static Resource* const instance = ::new (static_cast<void*>(storage)) Resource();
  return *instance;
}

} // namespace detail

/// Which resource `static_allocator<T, Tag>` draws from. Every tag gets its own process-wide
/// `multipool<>` behind a mutex unless this is specialized for it:
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
  using resource_type = detail::locked_resource<multipool<>>;
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
