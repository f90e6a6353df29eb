// SPDX-License-Identifier: BSL-1.0
// memkit/pmr.hpp: the std::pmr bridge: any memkit resource as a `std::pmr::memory_resource`
// (the other direction, any std::pmr resource as a memkit upstream, is `memkit::pmr_upstream`).
#pragma once

#include <cstddef>
#include <memory_resource>
#include <type_traits>
#include <utility>

#include "allocator.hpp"
#include "config.hpp"
#include "resource.hpp"
#include "traits.hpp"
#include "upstream.hpp"

namespace memkit {
inline namespace MEMKIT_ABI {
namespace pmr {

/// A `std::pmr::memory_resource` that serves every request from a memkit resource, so
/// `std::pmr::vector`, `std::pmr::string`, `std::pmr::map` and friends can use any strategy.
///
/// The adapter holds its resource by value, as strategies hold their upstream: either it owns the
/// strategy (`resource_adapter<memkit::arena<>> mr;`, constructor arguments forwarded) or it refers
/// to one the caller owns (`resource_adapter<resource_ref<memkit::pool<>>>`, or `adapt(pool)`).
///
/// `final`, so a caller holding the adapter's own type gets its virtual calls devirtualized; the
/// virtual dispatch of `std::pmr::polymorphic_allocator` is the only one in memkit.
///
/// Failures are the resource's exceptions, `memkit::out_of_memory`, `memkit::bad_size` and
/// `memkit::bad_alignment` (an invalid alignment, or one above `max_alignment()`), each a
/// `std::bad_alloc` as std::pmr expects. Deallocation misuse is reported as the resource reports it
/// (docs/concepts.md, "Errors").
template <class Resource>
class resource_adapter final : public std::pmr::memory_resource {
  MEMKIT_STATIC_ASSERT_RESOURCE(
      Resource, "memkit::pmr::resource_adapter<R>: R must implement the resource interface");

public:
  /// \effects constructs the resource from `args` (none: default-constructed).
  template <class... Args, class = std::enable_if_t<std::is_constructible_v<Resource, Args&&...>>>
  explicit resource_adapter(Args&&... args) noexcept(
      std::is_nothrow_constructible_v<Resource, Args&&...>)
      : r_(std::forward<Args>(args)...) {}

  resource_adapter(const resource_adapter&) = delete;
  resource_adapter& operator=(const resource_adapter&) = delete;

  Resource& resource() noexcept { return r_; }
  const Resource& resource() const noexcept { return r_; }

private:
  void* do_allocate(std::size_t bytes, std::size_t alignment) override {
    return r_.allocate(bytes, alignment);
  }

  void do_deallocate(void* p, std::size_t bytes, std::size_t alignment) override {
    r_.deallocate(p, bytes, alignment);
  }

  /// Equal only to itself, or to another adapter over an interchangeable resource (the same
  /// `resource_ref` target, two `malloc_resource`s): equality must mean "can free each other's
  /// memory", and an unknown resource type is never assumed to.
  bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override {
    if (this == &other) {
      return true;
    }
#if defined(__cpp_rtti) || defined(__GXX_RTTI)
    if constexpr (has_equality_v<Resource>) {
      if (const auto* o = dynamic_cast<const resource_adapter*>(&other); o != nullptr) {
        return static_cast<bool>(r_ == o->r_);
      }
    }
#endif
    return false;
  }

  Resource r_;
};

/// \returns an adapter that refers to `r`, which must outlive it:
/// `auto mr = memkit::pmr::adapt(pool); std::pmr::list<int> l(&mr);`.
template <class Resource>
resource_adapter<resource_ref<Resource>> adapt(Resource& r) noexcept {
  return resource_adapter<resource_ref<Resource>>(resource_ref<Resource>(r));
}

} // namespace pmr
} // namespace MEMKIT_ABI
} // namespace memkit
