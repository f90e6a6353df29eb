// SPDX-License-Identifier: BSL-1.0
// memkit/detail/thread/large.hpp: blocks too large for any class, each with a chunk header, so a
// free finds it as it finds a small block: alone in a chunk when it fits one after the header
// (`in_chunk`), else in a region of its own.
#pragma once

#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>

#include "../../config.hpp"
#include "../../resource.hpp"
#include "../base/align.hpp"
#include "../base/assert.hpp"
#include "../base/poison.hpp"
#include "../intrusive_list.hpp"
#include "chunk.hpp"

namespace memkit {
inline namespace MEMKIT_ABI {
namespace detail {
namespace thread {

/// Whether `U` can grow a region it handed out where it lies (`grow_region(p, bytes,
/// new_bytes)`, false if it cannot): the global replacement's os_upstream.
template <class U, class = void>
struct grows_regions : std::false_type {};
template <class U>
struct grows_regions<
    U, std::void_t<decltype(std::declval<U&>().grow_region(nullptr, std::size_t{}, std::size_t{}))>>
    : std::true_type {};

/// Every large region of a resource, for `release`. A region is the block's bytes after a header
/// placed as a chunk's is (coloured by its base), aligned to the larger of the block's alignment
/// and a chunk; regions are recorded in the chunk map, so `find` answers for them too.
/// Every member requires the depot's mutex; the upstream and the map are the depot's, every
/// upstream call counted there.
class large_regions {
public:
  /// \returns a block of `n` bytes aligned to `alignment` (a power of two) in a region of its own,
  /// after the region's header; or null, also for a size too large for any region. The block
  /// starts on the first page, or multiple of `alignment` if larger, after header_room bytes of
  /// the region's base: its pages are wholly the program's, as tcmalloc's and jemalloc's large
  /// blocks are, so a program that walks it a page at a time (or gives a page of it back) works
  /// at the offset it chose in each page. At an alignment of a chunk or more the header is found
  /// only through `find` (chunk_of would mask the block's address to the block itself).
  template <class Upstream, class Map>
  void* allocate(std::size_t n, std::size_t alignment, Upstream& upstream, Map& map) noexcept {
    const std::size_t placement = alignment < page_size ? page_size : alignment;
    const std::size_t bytes = region_size(n, placement);
    void* base = bytes == 0 ? nullptr : upstream.try_allocate(bytes, region_alignment(alignment));
    if (base == nullptr) {
      return nullptr;
    }
    auto* c = ::new (header_at(base)) chunk{};
    c->cls = large_class;
    c->bytes = bytes;
    c->blocks = base_of(c) + round_up(address(c + 1) - address(base), placement);
    c->size = n;
    if (!map.insert(upstream, base, c->bytes)) {
      upstream.deallocate(base, c->bytes, region_alignment(alignment));
      return nullptr;
    }
    regions_.push_front(c);
    return c->blocks;
  }

  /// \returns whether the region of large block header `c` now holds a block of `n` bytes at
  /// `c->blocks`, grown where it lies if it did not (an upstream that grows_regions), its new
  /// windows recorded in `map`; false, changing nothing, if it could not grow.
  template <class Upstream, class Map>
  static bool grow(chunk* c, std::size_t n, Upstream& upstream, Map& map) noexcept {
    char* const base = base_of(c);
    const auto offset = static_cast<std::size_t>(c->blocks - base);
    if (n > unbounded_size - offset) {
      return false;
    }
    const std::size_t bytes = offset + n;
    if (bytes <= c->bytes) {
      return true;
    }
    if constexpr (grows_regions<Upstream>::value) {
      // The map's nodes first: once the region grew, recording its windows cannot fail.
      if (!map.reserve(upstream, base, c->bytes, bytes) ||
          !upstream.grow_region(base, c->bytes, bytes)) {
        return false;
      }
      const bool recorded = map.extend(upstream, base, c->bytes, bytes);
      MEMKIT_ASSERT_INTERNAL(recorded);
      static_cast<void>(recorded);
      c->bytes = bytes;
      return true;
    }
    return false;
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

  /// \returns whether a block of `n` bytes aligned to `alignment` fits in one chunk after its
  /// header. Such a block takes a wholly free chunk (place_in_chunk) rather than a region: blocks
  /// up to almost a chunk then come and go without a system call, as small blocks do, and a
  /// realloc grows one where it lies up to the chunk's end.
  static bool fits_chunk(std::size_t n, std::size_t alignment) noexcept {
    const std::size_t bytes = region_size(n, alignment);
    return bytes != 0 && bytes <= chunk_size;
  }

  /// \effects makes `c`, the header of a wholly free chunk on no list, that of one large block of
  /// `n` bytes aligned to `alignment`, which fits_chunk. \returns the block.
  static void* place_in_chunk(chunk* c, std::size_t n, std::size_t alignment) noexcept {
    MEMKIT_ASSERT_INTERNAL(fits_chunk(n, alignment) && c->owner == nullptr);
    c->cls = large_class;
    c->block_size = 0;
    c->blocks = base_of(c) + round_up(address(c + 1) - address(base_of(c)), alignment);
    c->size = n;
    c->free.clear();
    c->fresh = carver();
    c->used = c->capacity = 0;
    c->prev = c->next = nullptr;
    c->in_bin = false;
    unpoison(c->blocks, n);
    return c->blocks;
  }

  /// \returns whether the large block of header `c` lies in a chunk (place_in_chunk): a region
  /// is always larger than a chunk.
  static bool in_chunk(const chunk* c) noexcept { return c->bytes == chunk_size; }

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
