// SPDX-License-Identifier: BSL-1.0
// memkit/detail/thread/chunk.hpp: the unit a thread-caching resource gets memory in, and the header
// that tells any thread, from a block's address alone, which heap owns the block.
#pragma once

#include <cstddef>
#include <cstdint>

#include "../../config.hpp"
#include "../base/align.hpp"
#include "../carver.hpp"
#include "../free_list.hpp"

namespace memkit {
inline namespace MEMKIT_ABI {
namespace detail {
namespace thread {

/// Every chunk of a thread-caching resource is `chunk_size` bytes aligned to its size, so the
/// header of the chunk holding any block is found by masking the block's address: O(1), no search
/// (mimalloc's segments and pages, "Free List Sharding in Action", section 3). 64 KiB is
/// multipool's chunk (multipool.hpp): 16 blocks of the largest default class, 4090 of the smallest.
inline constexpr unsigned chunk_shift = 16;
inline constexpr std::size_t chunk_size = std::size_t{1} << chunk_shift;

/// Largest class a chunk serves: at least 8 blocks a chunk, so the header and the tail waste at
/// most an eighth.
inline constexpr std::size_t max_class_size = chunk_size / 8;

/// The class index a large block's header carries.
inline constexpr std::uint32_t large_class = ~std::uint32_t{0};

/// The header of every chunk, and of every large region (a block of its own, `cls ==
/// large_class`).
///
/// The first cache line is read by any thread that frees a block of the chunk and written only
/// while the chunk has no live block (when a heap takes it for a class, `heap::take_chunk`), so
/// those reads need no synchronisation of their own: the freeing thread got the block, through
/// whatever hand-over the program used, after the header was written. The second line is the
/// owner's alone; keeping it apart stops the owner's frees from invalidating the line remote
/// freers read.
///
/// Invariants of a small chunk owned by a heap (checked at MEMKIT_DEBUG 2 where they change):
/// - its `capacity` blocks are each exactly one of: never carved (in `fresh`), on `free`, live in
///   the program, or freed elsewhere and on their way back (in a thread's outgoing batch or in the
///   owner's remote queue) or kept by the heap of the thread that freed it (heap::foreign);
/// - `used` counts the live, the returning and the kept blocks, plus one while the chunk is the
///   current chunk of its class (the pin, so a free-allocate ping-pong on the current chunk never
///   makes it empty): `used == capacity - free.count() - fresh.remaining() / block_size + pinned`;
/// - `in_bin` says the chunk is its class's current chunk or on its partial list; a chunk with
///   every block out is on no list ("floating") until a block returns, and its `used` is then 1,
///   not `capacity`: the first block back takes it to 0 as an emptied chunk's last block does,
///   so a free tests one count for both (engine::free_into), and `in_bin` tells them apart;
/// - `used == 0` only off every list: a spare of its heap, or in the depot (`owner == nullptr`).
struct alignas(cache_line_size) chunk {
  // Read by any thread holding a block of the chunk.
  void* owner = nullptr; ///< the owning heap; null in the depot and for large blocks
  std::uint32_t cls = 0; ///< size class, or large_class
  std::uint32_t block_size = 0;
  char* blocks = nullptr;     ///< first block (small) or the block (large)
  std::size_t bytes = 0;      ///< obtained from the upstream: chunk_size, or a large region
  std::size_t size = 0;       ///< large: the bytes requested (0 counts as 1)
  chunk* link_next = nullptr; ///< every small chunk (release), or the large blocks
  chunk* link_prev = nullptr; ///< large blocks only
  std::uint64_t freed_at = 0; ///< in the depot: when it came (ms), 0 once decommitted

  // The owner's.
  alignas(cache_line_size) free_list free; ///< local free list
  carver fresh;                            ///< blocks never handed out yet
  std::uint32_t used = 0;                  ///< see the invariants above
  std::uint32_t capacity = 0;
  chunk* prev = nullptr; ///< the owner's partial list, its spares, or the depot
  chunk* next = nullptr;
  bool in_bin = false; ///< current or on the partial list; false when full or spare

  bool is_large() const noexcept { return cls == large_class; }
};
static_assert(sizeof(chunk) == 2 * cache_line_size);

/// Where in its chunk a header sits: headers are coloured, `colors` places a header apart, by the
/// chunk's address. Chunks are aligned to 64 KiB, so uncoloured headers would all fall in the same
/// two sets of every cache whose way is 64 KiB or less, and a thread using more classes than L1 has
/// ways would miss L1 on a header line on most calls (docs/threads.md, "How a block finds its
/// owner", measured by `bench/instructions.sh`). Consecutive chunks take consecutive colours, so
/// 16 chunks' headers fill 32 distinct sets; the cost is up to 1,920 bytes of a chunk's blocks
/// (960 on average, 1.5 %).
inline constexpr std::size_t colors = 16;
/// The bytes from a chunk's base that its header may reach: the blocks begin at or after it.
inline constexpr std::size_t header_room = colors * sizeof(chunk);
static_assert(header_room <= page_size, "a chunk's header lies in its first page");

/// \returns the header of the chunk (or large region) at `base`, 64 KiB-aligned; null for null.
inline chunk* header_at(void* base) noexcept {
  return reinterpret_cast<chunk*>(static_cast<char*>(base) +
                                  (address(base) >> chunk_shift) % colors * sizeof(chunk));
}

/// \returns the base of the chunk or large region whose header is `c` (a header lies in the
/// first header_room bytes of a 64 KiB-aligned base).
inline char* base_of(const chunk* c) noexcept {
  return reinterpret_cast<char*>(address(c) & ~(chunk_size - 1));
}

/// \returns the header of the chunk holding `p`. \requires `p` came from a thread-caching
/// resource (the chunk map screens other pointers first where that is checked).
inline chunk* chunk_of(const void* p) noexcept {
  return header_at(reinterpret_cast<void*>(address(p) & ~(chunk_size - 1)));
}

/// How many chunks of a list of wholly free ones `link_for_class` looks at.
inline constexpr std::size_t class_scan = 32;

/// \returns the link (`list` itself, or a `next` field of its chunks) to the chunk to reuse for
/// class `cls` from `list`, wholly free chunks linked through `next`: among the first class_scan,
/// the first whose last class was `cls`, else the first. A chunk keeps resident every page its
/// classes ever carved until it is decommitted, so a chunk taken back by its own class touches no
/// new page, and one that changes class holds the larger of both extents (docs/threads.md, "Bounds
/// and the depot").
inline chunk** link_for_class(chunk** list, std::uint32_t cls) noexcept {
  std::size_t n = 0;
  for (chunk** l = list; *l != nullptr && n < class_scan; l = &(*l)->next, ++n) {
    if ((*l)->cls == cls) {
      return l;
    }
  }
  return list;
}

/// What every heap's empty bins point at, so the allocation fast path tests only the free list:
/// its free list is null and it has nothing to carve. Read by all threads, written by none.
inline chunk empty_chunk{};

} // namespace thread
} // namespace detail
} // namespace MEMKIT_ABI
} // namespace memkit
