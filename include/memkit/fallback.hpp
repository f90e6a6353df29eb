// SPDX-License-Identifier: BSL-1.0
// memkit/fallback.hpp: serve from a primary resource, overflow to a secondary, route frees by
// owns().
#pragma once

#include <algorithm>
#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

#include "config.hpp"
#include "resource.hpp"
#include "stats.hpp"

namespace memkit {
inline namespace MEMKIT_ABI {

/// Composition by ownership (docs/concepts.md, "Owns"): requests go to `Primary` and, when it
/// returns null, to `Secondary`. A block is returned to `Primary` exactly when `Primary::owns(p)`
/// says it came from there, and to `Secondary` otherwise; it is never offered to both.
///
/// Members are constructed in place (strategies are neither copyable nor movable): default
/// construction, or `std::piecewise_construct` with one tuple of constructor arguments for each.
/// A `resource_ref` member shares a resource that lives elsewhere.
template <class Primary, class Secondary>
class fallback : private detail::stats_recorder<fallback<Primary, Secondary>> {
  static_assert(is_resource_v<Primary> && is_resource_v<Secondary>,
                "memkit::fallback<Primary, Secondary>: both must implement the resource interface "
                "(docs/concepts.md)");
  static_assert(has_owns_v<Primary>,
                "memkit::fallback<Primary, Secondary>: Primary must provide owns(p), the only way "
                "deallocate can tell its blocks from Secondary's (wrap a resource without owns as "
                "Secondary instead)");

public:
  /// \effects default-constructs both resources.
  fallback() = default;

  /// \effects constructs the primary from the elements of `primary_args` and the secondary from
  /// those of `secondary_args`, in place. Reference elements (`std::forward_as_tuple`) are
  /// forwarded as references.
  template <class... PrimaryArgs, class... SecondaryArgs>
  fallback(std::piecewise_construct_t /*tag*/, std::tuple<PrimaryArgs...> primary_args,
           std::tuple<SecondaryArgs...> secondary_args)
      : fallback(primary_args, secondary_args, std::index_sequence_for<PrimaryArgs...>{},
                 std::index_sequence_for<SecondaryArgs...>{}) {}

  fallback(const fallback&) = delete;
  fallback& operator=(const fallback&) = delete;

  const char* name() const noexcept { return "memkit::fallback"; }

  std::size_t max_size() const noexcept {
    return std::max(primary_.max_size(), secondary_.max_size());
  }
  std::size_t max_alignment() const noexcept {
    return std::max(primary_.max_alignment(), secondary_.max_alignment());
  }

  /// \returns a block from the primary, else from the secondary.
  /// \throws bad_alignment, bad_size or out_of_memory when neither can serve it.
  void* allocate(std::size_t bytes, std::size_t alignment = default_alignment) {
    return detail::allocate_or_throw(*this, bytes, alignment);
  }

  /// \returns a block from the primary, else from the secondary, else null.
  void* try_allocate(std::size_t bytes, std::size_t alignment = default_alignment) noexcept {
    if (void* p = primary_.try_allocate(bytes, alignment); MEMKIT_LIKELY(p != nullptr)) {
      this->on_allocate(bytes);
      return p;
    }
    void* p = this->record(secondary_.try_allocate(bytes, alignment), bytes);
    if (p != nullptr) {
      this->on_fallback();
    }
    return p;
  }

  /// \effects returns `p` to the primary if it owns `p`, otherwise to the secondary, which then
  /// judges (and, if it can, reports) a pointer neither allocated.
  void deallocate(void* p, std::size_t bytes, std::size_t alignment = default_alignment) noexcept {
    if (p == nullptr) {
      return;
    }
    this->on_deallocate(bytes);
    if (primary_.owns(p)) {
      primary_.deallocate(p, bytes, alignment);
    } else {
      secondary_.deallocate(p, bytes, alignment);
    }
  }

  /// \returns whether either resource owns `p`. Present only when `Secondary` has `owns`.
  template <class S = Secondary, std::enable_if_t<has_owns_v<S>, int> = 0>
  bool owns(const void* p) const noexcept {
    return primary_.owns(p) || secondary_.owns(p);
  }

  Primary& primary() noexcept { return primary_; }
  const Primary& primary() const noexcept { return primary_; }
  Secondary& secondary() noexcept { return secondary_; }
  const Secondary& secondary() const noexcept { return secondary_; }

  /// \returns the counters of docs/statistics.md (all zero unless MEMKIT_STATISTICS is 1); each
  /// member keeps its own, in primary().stats() and secondary().stats().
  using detail::stats_recorder<fallback<Primary, Secondary>>::stats;

private:
  template <class PrimaryTuple, class SecondaryTuple, std::size_t... I, std::size_t... J>
  fallback(PrimaryTuple& primary_args, SecondaryTuple& secondary_args,
           std::index_sequence<I...> /*primary_indices*/,
           std::index_sequence<J...> /*secondary_indices*/)
      : primary_(std::get<I>(std::move(primary_args))...),
        secondary_(std::get<J>(std::move(secondary_args))...) {}

  Primary primary_;
  Secondary secondary_;
};

} // namespace MEMKIT_ABI
} // namespace memkit
