// SPDX-License-Identifier: BSL-1.0
// memkit/aligned.hpp: a decorator that gives every block whole cache lines of its own.
#pragma once

#include <cstddef>
#include <type_traits>
#include <utility>

#include "config.hpp"
#include "detail/base/align.hpp"
#include "error.hpp"
#include "resource.hpp"
#include "stats.hpp"
#include "upstream.hpp"

namespace memkit {
inline namespace MEMKIT_ABI {

/// Forwards every request to `Upstream` aligned to at least `Alignment` and with its size rounded
/// up to a multiple of `Alignment`, so a block starts on a cache line and owns every line it
/// touches: two blocks never share a line, and threads writing to different blocks never slow each
/// other down through false sharing. The price is up to `Alignment - 1` bytes of padding per block.
///
/// Holds no state besides the upstream; `deallocate` recomputes the size and alignment the block
/// was obtained with and forwards it. Detected misuse in deallocate (reported, then ignored): a
/// pointer not aligned to `Alignment` (foreign pointer), a size that overflows when rounded (size
/// mismatch), an alignment that is not a power of two (alignment mismatch). Everything else is the
/// upstream's to check.
template <class Upstream = malloc_resource, std::size_t Alignment = cache_line_size>
class aligned : private detail::stats_recorder<aligned<Upstream, Alignment>> {
  static_assert(is_resource_v<Upstream>, "memkit::aligned<Upstream>: Upstream must be a resource");
  static_assert(detail::is_valid_alignment(Alignment),
                "memkit::aligned<Upstream, Alignment>: Alignment must be a power of two");

public:
  explicit aligned(Upstream upstream = {}) noexcept(std::is_nothrow_move_constructible_v<Upstream>)
      : upstream_(std::move(upstream)) {}

  aligned(const aligned&) = delete;
  aligned& operator=(const aligned&) = delete;

  const char* name() const noexcept { return "memkit::aligned"; }

  /// \returns the upstream's max_size() rounded down to a multiple of `Alignment`.
  std::size_t max_size() const noexcept { return upstream_.max_size() & ~(Alignment - 1); }

  /// \returns the upstream's max_alignment().
  std::size_t max_alignment() const noexcept { return upstream_.max_alignment(); }

  /// \returns a block of `bytes` rounded up to `Alignment`, aligned to max(alignment, Alignment).
  /// \throws bad_alignment, bad_size, out_of_memory (the upstream failed).
  void* allocate(std::size_t bytes, std::size_t alignment = default_alignment) {
    return detail::allocate_or_throw(*this, bytes, alignment);
  }

  /// \returns the upstream's block for the rounded size and raised alignment, or null.
  void* try_allocate(std::size_t bytes, std::size_t alignment = default_alignment) noexcept {
    const std::size_t size = detail::round_up(bytes == 0 ? 1 : bytes, Alignment);
    if (!detail::is_valid_alignment(alignment) || size == 0) {
      this->on_failure();
      return nullptr;
    }
    void* p = this->record(
        upstream_.try_allocate(size, alignment > Alignment ? alignment : Alignment), bytes);
    if (p != nullptr) {
      this->on_upstream_allocate(size);
    }
    return p;
  }

  /// Returns the block to the upstream with the size and alignment try_allocate used.
  void deallocate(void* p, std::size_t bytes, std::size_t alignment = default_alignment) noexcept {
    if (p == nullptr) {
      return;
    }
    const std::size_t size = detail::round_up(bytes == 0 ? 1 : bytes, Alignment);
    if (MEMKIT_UNLIKELY(!detail::is_aligned(p, Alignment) || size == 0 ||
                        !detail::is_valid_alignment(alignment))) {
      diagnose_deallocate(p, bytes, alignment);
      return;
    }
    this->on_deallocate(bytes);
    this->on_upstream_deallocate(size);
    upstream_.deallocate(p, size, alignment > Alignment ? alignment : Alignment);
  }

  /// \returns the upstream's owns(p). Only present when the upstream has owns.
  template <class U = Upstream, class = std::enable_if_t<has_owns_v<U>>>
  bool owns(const void* p) const noexcept {
    return upstream_.owns(p);
  }

  Upstream& upstream() noexcept { return upstream_; }
  const Upstream& upstream() const noexcept { return upstream_; }

  /// \returns the counters of docs/statistics.md (all zero unless MEMKIT_STATISTICS is 1).
  using detail::stats_recorder<aligned<Upstream, Alignment>>::stats;

private:
  MEMKIT_NOINLINE MEMKIT_COLD void diagnose_deallocate(void* p, std::size_t bytes,
                                                       std::size_t alignment) const noexcept {
    if (!detail::is_aligned(p, Alignment)) {
      report_misuse(misuse::foreign_pointer, name(), p, bytes, alignment);
    } else if (!detail::is_valid_alignment(alignment)) {
      report_misuse(misuse::alignment_mismatch, name(), p, bytes, alignment);
    } else {
      report_misuse(misuse::size_mismatch, name(), p, bytes, alignment);
    }
  }

  Upstream upstream_;
};

} // namespace MEMKIT_ABI
} // namespace memkit
