// SPDX-License-Identifier: BSL-1.0
// memkit/resource.hpp: the resource interface every strategy implements (docs/concepts.md,
// "The resource interface"), the shared throwing path, and `resource_ref`.
#pragma once

#include <cstddef>
#include <limits>
#include <utility>

#include "config.hpp"
#include "detail/base/align.hpp"
#include "error.hpp"
#include "traits.hpp"

namespace memkit {
inline namespace MEMKIT_ABI {

/// `max_alignment()` of resources that honour any power of two the platform can represent.
inline constexpr std::size_t unbounded_alignment =
    (std::numeric_limits<std::size_t>::max() >> 1) + 1;

/// `max_size()` of resources limited only by the address space; larger sizes cannot be objects.
inline constexpr std::size_t unbounded_size =
    static_cast<std::size_t>(std::numeric_limits<std::ptrdiff_t>::max());

namespace detail {

/// Throws the exception that explains why `r.try_allocate(bytes, alignment)` returned null:
/// `bad_alignment`, then `bad_size`, then `out_of_memory` (docs/bad-input.md).
[[noreturn]] MEMKIT_NOINLINE MEMKIT_COLD inline void
throw_failed_request(const char* name, std::size_t bytes, std::size_t alignment,
                     std::size_t max_size, std::size_t max_alignment) {
  if (!is_valid_alignment(alignment) || alignment > max_alignment) {
    throw bad_alignment(name, bytes, alignment);
  }
  if (bytes > max_size) {
    throw bad_size(name, bytes, alignment);
  }
  throw out_of_memory(name, bytes, alignment);
}

/// The one implementation of `allocate` in terms of `try_allocate`, shared by every strategy so the
/// fast path stays a single inlined call and every failure is diagnosed the same way. Forced
/// inline: GCC 12 otherwise keeps it out of line behind standard containers' allocation paths
/// (a call per `std::string` allocation, callgrind on memkit-bench's json-tree).
template <class Resource>
MEMKIT_ALWAYS_INLINE void* allocate_or_throw(Resource& r, std::size_t bytes,
                                             std::size_t alignment) {
  void* p = r.try_allocate(bytes, alignment);
  if (MEMKIT_UNLIKELY(p == nullptr)) {
    throw_failed_request(r.name(), bytes, alignment, r.max_size(), r.max_alignment());
  }
  return p;
}

} // namespace detail

/// A non-owning handle that lets several strategies share one upstream (strategies hold their
/// upstream by value; pass `resource_ref{r}` to make them use `r` itself).
/// \requires the referenced resource outlives the handle and every copy of it.
template <class Resource>
class resource_ref {
  MEMKIT_STATIC_ASSERT_RESOURCE(Resource,
                                "resource_ref<R>: R must implement the resource interface");

public:
  /// As safe to share between threads as the resource it refers to.
  static constexpr bool thread_safe = is_thread_safe_v<Resource>;

  explicit resource_ref(Resource& r) noexcept : r_(&r) {}

  const char* name() const noexcept { return r_->name(); }
  std::size_t max_size() const noexcept { return r_->max_size(); }
  std::size_t max_alignment() const noexcept { return r_->max_alignment(); }

  void* allocate(std::size_t bytes, std::size_t alignment = default_alignment) {
    return r_->allocate(bytes, alignment);
  }
  void* try_allocate(std::size_t bytes, std::size_t alignment = default_alignment) noexcept {
    return r_->try_allocate(bytes, alignment);
  }
  void deallocate(void* p, std::size_t bytes, std::size_t alignment = default_alignment) noexcept {
    r_->deallocate(p, bytes, alignment);
  }
  template <class R = Resource, class = std::enable_if_t<has_owns_v<R>>>
  bool owns(const void* p) const noexcept {
    return r_->owns(p);
  }

  Resource& get() const noexcept { return *r_; }

  friend bool operator==(const resource_ref& a, const resource_ref& b) noexcept {
    return a.r_ == b.r_;
  }
  friend bool operator!=(const resource_ref& a, const resource_ref& b) noexcept {
    return a.r_ != b.r_;
  }

private:
  Resource* r_;
};

} // namespace MEMKIT_ABI
} // namespace memkit
