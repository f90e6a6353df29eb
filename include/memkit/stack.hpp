// SPDX-License-Identifier: BSL-1.0
// memkit/stack.hpp: LIFO allocation with markers over one contiguous region, order checked always.
#pragma once

#include <cstddef>
#include <cstring>
#include <type_traits>
#include <utility>

#include "config.hpp"
#include "detail/base/align.hpp"
#include "detail/base/poison.hpp"
#include "detail/bump.hpp"
#include "error.hpp"
#include "resource.hpp"
#include "stats.hpp"
#include "upstream.hpp"

namespace memkit {
inline namespace MEMKIT_ABI {

/// A saved stack position (docs/concepts.md, "Marker"), obtained from `stack::marker()`.
/// Kept as offsets, so a marker of the empty stack stays valid across the lazy region acquisition
/// and `release()`. A default-constructed marker belongs to no stack.
class stack_marker : private detail::usage_mark {
public:
  stack_marker() noexcept = default;

private:
  template <class>
  friend class stack;

  static constexpr std::size_t no_block = static_cast<std::size_t>(-1);

  stack_marker(const void* owner, std::size_t top, std::size_t last,
               const detail::usage_mark& usage) noexcept
      : detail::usage_mark(usage), owner_(owner), top_(top), last_(last) {}

  const void* owner_ = nullptr;
  std::size_t top_ = 0;         ///< offset of the top
  std::size_t last_ = no_block; ///< offset of the top block, `no_block` when empty
};

/// LIFO allocation (docs/concepts.md) over one region: blocks are bumped off the top and must be
/// freed in reverse order, one at a time or all at once by `rollback()` to a marker.
///
/// Each block is preceded by a header recording where the top and the top block were before it,
/// so `deallocate` checks, in every build, that it gets the top block with its size: anything else
/// is reported (`lifo_violation`, `size_mismatch`, `double_free`, `foreign_pointer`) and ignored.
/// Each block costs `sizeof(void*) * 2` bytes of header plus its alignment padding.
template <class Upstream = malloc_resource>
class stack : private detail::stats_recorder<stack<Upstream>> {
  static_assert(is_resource_v<Upstream>,
                "memkit::stack<Upstream>: Upstream must implement the resource interface "
                "(docs/concepts.md)");

  struct header {
    char* prev_top;
    char* prev_last;
  };

public:
  /// \effects a stack of `capacity` bytes (headers and padding included) whose region is taken
  /// from `upstream` at the first allocation, not before.
  explicit stack(std::size_t capacity,
                 Upstream upstream = {}) noexcept(std::is_nothrow_move_constructible_v<Upstream>)
      : capacity_(capacity), owns_region_(true), upstream_(std::move(upstream)) {}

  /// \effects a stack over the caller's `[buffer, buffer + size)`, which it never frees.
  /// \requires the buffer stays valid and unused by others while the stack lives.
  stack(void* buffer, std::size_t size) noexcept(std::is_nothrow_default_constructible_v<Upstream>)
      : top_(static_cast<char*>(buffer)), end_(top_ + size), base_(top_), capacity_(size),
        owns_region_(false), upstream_() {
    detail::poison(buffer, size);
  }

  stack(const stack&) = delete;
  stack& operator=(const stack&) = delete;

  /// \effects `release()`; a caller buffer goes back unpoisoned.
  ~stack() {
    release();
    if constexpr (detail::poisoning) {
      if (!owns_region_ && base_ != nullptr) {
        detail::unpoison_kept(base_, capacity_);
      }
    }
  }

  const char* name() const noexcept { return "memkit::stack"; }

  /// \returns the largest block the region can hold, after its header.
  std::size_t max_size() const noexcept {
    return capacity_ > header_size ? capacity_ - header_size : 0;
  }

  /// Any power of two, as long as the padding it takes fits in the region.
  std::size_t max_alignment() const noexcept { return unbounded_alignment; }

  /// \returns a block of `bytes` (1 if 0) aligned to `alignment`, on top of the stack.
  /// \throws bad_alignment, bad_size or out_of_memory (docs/concepts.md, "Errors").
  void* allocate(std::size_t bytes, std::size_t alignment = default_alignment) {
    return detail::allocate_or_throw(*this, bytes, alignment);
  }

  /// \returns a block of `bytes` (1 if 0) aligned to `alignment` on top of the stack, or null if
  /// the alignment is not a power of two or the region has no room for it (or cannot be obtained).
  void* try_allocate(std::size_t bytes, std::size_t alignment = default_alignment) noexcept {
    if (MEMKIT_UNLIKELY(!detail::is_valid_alignment(alignment))) {
      this->on_failure();
      return nullptr;
    }
    if (MEMKIT_UNLIKELY(static_cast<std::size_t>(end_ - top_) < header_size)) {
      return acquire_and_allocate(bytes, alignment);
    }
    const std::size_t n = bytes == 0 ? 1 : bytes;
    char* cur = top_ + header_size;
    char* const p = static_cast<char*>(detail::bump(cur, end_, n, alignment));
    if (MEMKIT_UNLIKELY(p == nullptr)) {
      this->on_failure();
      return nullptr;
    }
    this->on_allocate(bytes);
    const header h{top_, last_};
    // Through memcpy: blocks may be less aligned than a header. The header stays poisoned.
    detail::store_hidden(p - header_size, h, header_size);
    detail::hand_out(p, n);
    top_ = cur;
    last_ = p;
    return p;
  }

  /// \effects frees the top block. \requires `p` is the top block, allocated with `bytes`.
  /// Any other non-null `p` is reported and ignored, leaving the stack untouched:
  /// outside the region -> `foreign_pointer`; the top block with another size -> `size_mismatch`;
  /// at or above the top (already freed or rolled back) -> `double_free`; below the top ->
  /// `lifo_violation`. The alignment is not checked.
  void deallocate(void* p, std::size_t bytes, std::size_t alignment = default_alignment) noexcept {
    if (p == nullptr) {
      return;
    }
    char* const c = static_cast<char*>(p);
    const std::size_t n = bytes == 0 ? 1 : bytes;
    // The top block's size is exactly the distance to the top.
    if (MEMKIT_LIKELY(c == last_ && static_cast<std::size_t>(top_ - c) == n)) {
      const auto h = detail::load_hidden<header>(c - header_size);
      detail::poison(h.prev_top, static_cast<std::size_t>(top_ - h.prev_top));
      top_ = h.prev_top;
      last_ = h.prev_last;
      this->on_deallocate(bytes);
      return;
    }
    report_bad_deallocate(c, bytes, alignment);
  }

  /// \returns whether `p` points into the used part of the region (live blocks, their headers and
  /// padding). Exact and O(1).
  bool owns(const void* p) const noexcept {
    return detail::in_range(p, base_, static_cast<std::size_t>(top_ - base_));
  }

  /// \returns the current top, to pass to `rollback()`. O(1).
  stack_marker marker() const noexcept {
    return stack_marker(this, used(),
                        last_ != nullptr ? static_cast<std::size_t>(last_ - base_)
                                         : stack_marker::no_block,
                        this->usage());
  }

  /// \effects frees, in O(1), every block allocated after `m` was taken.
  /// A marker from another stack or above the current top is reported as `misuse::bad_marker`
  /// and ignored.
  void rollback(const stack_marker& m) noexcept {
    if (m.owner_ != this || m.top_ > used()) {
      report_misuse(misuse::bad_marker, name(), &m, 0, 0);
      return;
    }
    detail::poison(base_ + m.top_, used() - m.top_);
    this->on_rollback(m);
    top_ = base_ + m.top_;
    last_ = m.last_ != stack_marker::no_block ? base_ + m.last_ : nullptr;
  }

  /// \effects frees every block; keeps the region.
  void reset() noexcept {
    detail::poison(base_, used());
    this->on_reset();
    top_ = base_;
    last_ = nullptr;
  }

  /// \effects frees every block and returns the region to the upstream with the size and alignment
  /// it was obtained with (it is obtained again at the next allocation). A caller buffer is kept.
  void release() noexcept {
    detail::poison(base_, used()); // a caller buffer is kept, free
    if (owns_region_ && base_ != nullptr) {
      detail::unpoison_kept(base_, capacity_);
      upstream_.deallocate(base_, capacity_, region_alignment);
      this->on_upstream_deallocate(capacity_);
      base_ = nullptr;
      end_ = nullptr;
    }
    this->on_reset();
    top_ = base_;
    last_ = nullptr;
  }

  /// \returns bytes between the bottom and the top: blocks, headers and padding.
  std::size_t used() const noexcept { return static_cast<std::size_t>(top_ - base_); }

  /// \returns bytes above the top. Each further block also takes a header and padding from them.
  std::size_t remaining() const noexcept {
    return base_ != nullptr ? static_cast<std::size_t>(end_ - top_) : capacity_;
  }

  std::size_t capacity() const noexcept { return capacity_; }

  const Upstream& upstream() const noexcept { return upstream_; }

  /// \returns the counters of docs/statistics.md (all zero unless MEMKIT_STATISTICS is 1).
  using detail::stats_recorder<stack<Upstream>>::stats;

private:
  static constexpr std::size_t header_size = sizeof(header);
  /// The region is obtained with the alignment every allocation function guarantees.
  static constexpr std::size_t region_alignment = default_alignment;

  /// Obtains the region at the first allocation; a stack that has one is simply full.
  MEMKIT_NOINLINE void* acquire_and_allocate(std::size_t bytes, std::size_t alignment) noexcept {
    if (base_ != nullptr || !owns_region_ || capacity_ <= header_size) {
      this->on_failure();
      return nullptr;
    }
    void* region = upstream_.try_allocate(capacity_, region_alignment);
    if (region == nullptr) {
      this->on_failure();
      return nullptr;
    }
    this->on_upstream_allocate(capacity_);
    base_ = static_cast<char*>(region);
    top_ = base_;
    end_ = base_ + capacity_;
    detail::poison(base_, capacity_);
    return try_allocate(bytes, alignment);
  }

  MEMKIT_NOINLINE MEMKIT_COLD void report_bad_deallocate(const char* c, std::size_t bytes,
                                                         std::size_t alignment) const noexcept {
    misuse kind = misuse::lifo_violation;
    if (!detail::in_range(c, base_, static_cast<std::size_t>(end_ - base_))) {
      kind = misuse::foreign_pointer;
    } else if (c == last_) {
      kind = misuse::size_mismatch;
    } else if (detail::address(c) >= detail::address(top_)) {
      kind = misuse::double_free;
    }
    report_misuse(kind, name(), c, bytes, alignment);
  }

  char* top_ = nullptr; ///< hot members first
  char* end_ = nullptr;
  char* last_ = nullptr; ///< the top block, null when the stack is empty
  char* base_ = nullptr;
  std::size_t capacity_;
  bool owns_region_; ///< false for a caller buffer
  Upstream upstream_;
};

} // namespace MEMKIT_ABI
} // namespace memkit
