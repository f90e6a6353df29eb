// SPDX-License-Identifier: BSL-1.0
// memkit/detail/thread/large.hpp: blocks too large for any class, each in a region of its own with
// a chunk header, so a free finds it as it finds a small block.
#pragma once

#include <cstddef>
#include <new>

#include "../../config.hpp"
#include "../../resource.hpp"
#include "../base/align.hpp"
#include "../base/poison.hpp"
#include "../intrusive_list.hpp"
#include "chunk.hpp"

namespace memkit {
inline namespace MEMKIT_ABI {
namespace detail {
namespace thread {

/// Every large region of a resource, for `release`. A region is the block's bytes after a header
/// placed as a chunk's is (coloured by its base), aligned to the larger of the block's alignment
/// and a chunk; regions are recorded in the chunk map, so `find` answers for them too.
/// Every member requires the depot's mutex; the upstream and the map are the depot's, every
/// upstream call counted there.
class large_regions {
public:
  /// \returns a block of `n` bytes aligned to `alignment` (a power of two) in a region of its own,
  /// right after the region's header; or null, also for a size too large for any region. The
  /// block lies within header_room bytes, rounded up to `alignment`, of the region's base; at an
  /// alignment of a chunk or more the header is found only through `find` (chunk_of would mask
  /// the block's address to the block itself).
  template <class Upstream, class Map>
  void* allocate(std::size_t n, std::size_t alignment, Upstream& upstream, Map& map) noexcept {
    const std::size_t bytes = region_size(n, alignment);
    void* base = bytes == 0 ? nullptr : upstream.try_allocate(bytes, region_alignment(alignment));
    if (base == nullptr) {
      return nullptr;
    }
    auto* c = ::new (header_at(base)) chunk{};
    c->cls = large_class;
    c->bytes = bytes;
    c->blocks = base_of(c) + round_up(address(c + 1) - address(base), alignment);
    c->size = n;
    if (!map.insert(upstream, base, c->bytes)) {
      upstream.deallocate(base, c->bytes, region_alignment(alignment));
      return nullptr;
    }
    regions_.push_front(c);
    return c->blocks;
  }

  /// \effects gives the region of large block header `c` back to the upstream.
  template <class Upstream, class Map>
  void free(chunk* c, Upstream& upstream, Map& map) noexcept {
    map.erase(base_of(c), c->bytes);
    regions_.erase(c);
    upstream.deallocate(base_of(c), c->bytes, region_alignment(c));
  }

  /// \effects gives every region back. \requires quiescence.
  template <class Upstream>
  void release(Upstream& upstream) noexcept {
    for (chunk* c = regions_.front(); c != nullptr;) {
      chunk* const next = c->link_next;
      unpoison_kept(base_of(c), c->bytes);
      upstream.deallocate(base_of(c), c->bytes, region_alignment(c));
      c = next;
    }
    regions_.clear();
  }

  bool empty() const noexcept { return regions_.empty(); }

  /// \returns the bytes a region for `n` bytes aligned to `alignment` takes, or 0 if too many.
  static std::size_t region_size(std::size_t n, std::size_t alignment) noexcept {
    const std::size_t room = round_up(header_room, alignment);
    return n > unbounded_size - room ? 0 : room + n;
  }

private:
  static std::size_t region_alignment(std::size_t alignment) noexcept {
    return alignment > chunk_size ? alignment : chunk_size;
  }
  // The block's offset is below a chunk unless the alignment is a chunk or more; then it is the
  // alignment.
  static std::size_t region_alignment(const chunk* c) noexcept {
    return region_alignment(static_cast<std::size_t>(c->blocks - base_of(c)));
  }

  intrusive_list<chunk, &chunk::link_prev, &chunk::link_next> regions_;
};

} // namespace thread
} // namespace detail
} // namespace MEMKIT_ABI
} // namespace memkit
