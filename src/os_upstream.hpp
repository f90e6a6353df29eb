// SPDX-License-Identifier: BSL-1.0
// src/os_upstream.hpp: the global replacement's upstream: memory mapped from the OS, chunks carved
// from larger reservations, and a heap of large regions whose free spans decay back to the OS.
#pragma once

#include <cstddef>
#include <cstdint>

#include "memkit/detail/base/align.hpp"
#include "memkit/detail/thread/chunk.hpp"
#include "memkit/upstream.hpp"

namespace memkit::replacement {

/// Serves the process heap's engine (src/heap.hpp) from mmap (detail/base/os.hpp):
/// - 64 KiB chunks are carved from 4 MiB reservations aligned to 64 KiB, 64 chunks at a time,
///   committed in the arena while it lasts (below), each mapped on its own after that;
/// - the arena: `arena_size` bytes of address space reserved once (reserve_arena; no memory, no
///   commit charge) that chunks are committed in, so whether a pointer lies in a chunk of it is
///   one subtraction and one comparison, no chunk-map lookup: free's fast path (heap.hpp). It is
///   never unmapped: a chunk-sized request given back (a large block's region can be one) is
///   decommitted (all but its first page, which links it to the next) and kept for the next, so
///   no other mapping takes its place;
/// - every other request (a large block's region) is `region_size` bytes carved from the region
///   heap: `region_heap_size` bytes of address space reserved at the first such request, where a
///   freed region joins its free neighbours into one span, as in tcmalloc's page heap. A request
///   takes the smallest span that holds it, committed ones first (their pages are resident: no
///   page fault), or grows the heap at its top, joined to a free span that ends there; so a
///   program that frees its large blocks and allocates others of any size makes no system call.
///   Free spans stay committed up to the larger of `kept_bytes_floor` and 1.25 times the most
///   bytes the regions ever held at once (the kept memory never takes much more than the program
///   itself once did; the quarter is room for the holes between regions, without which a program
///   whose live set repeats would fault in its growth each time), the top of the heap or else the
///   oldest decommitted first, and each at most `delay_ms()` after its last use (checked whenever
///   the upstream is called, and by `purge`). A request with an alignment above a chunk,
///   or one the heap cannot hold (no reservation, `max_spans` regions live in it, or full), maps a
///   region of its own and unmaps it when freed;
/// - the engine's depot decommits chunks left unused for `delay_ms()` (detail/thread/decay.hpp).
///
/// Not thread-safe: the engine calls its upstream only under its own lock.
class os_upstream : public detail::unbounded_resource<os_upstream> {
public:
  static constexpr std::size_t reservation_size = std::size_t{4} << 20;
  /// 32 GiB of address space (of x86-64's 128 TiB for a process), half a million chunks: the
  /// most valgrind lets a program reserve at once, so its tools measure the same fast paths.
  static constexpr std::size_t arena_size = std::size_t{32} << 30;
  /// The region heap's address space: as much again.
  static constexpr std::size_t region_heap_size = std::size_t{32} << 30;
  /// The most regions live in the region heap at once: its free spans, which lie between them,
  /// are at most one more, in a table of that many.
  static constexpr std::size_t max_spans = 1024;
  static constexpr std::size_t kept_bytes_floor = std::size_t{64} << 20;

  /// How long memory freed to the replacement stays with it, unless `set_delay_ms` says otherwise
  /// (`MEMKIT_OPTIONS=decay:MS`), before it goes back to the OS.
  static constexpr std::uint64_t default_delay_ms = 100;

  static constexpr bool thread_safe = false;
  /// A block below a chunk's alignment (the engine's own structures: heaps, chunk map nodes) is
  /// mapped on its own, so it reads as zeros (detail::hands_out_zeroed).
  static constexpr bool hands_out_zeroed = true;
  const char* name() const noexcept { return "memkit::replacement::os_upstream"; }

  /// User-provided, so that making one, even value-initialized (the process heap's is a temporary
  /// the engine moves), does not zero the span table: its 32 KiB stay untouched, not resident.
  os_upstream() noexcept {} // NOLINT(modernize-use-equals-default)
  /// Only an upstream that reserved nothing yet moves (the engine takes its upstream by value as
  /// it starts), so no two own one reservation.
  os_upstream(os_upstream&& other) noexcept;
  os_upstream& operator=(os_upstream&&) = delete;
  /// \effects gives back the address space of the arena and of the region heap, if reserved:
  /// 64 GiB that would otherwise stay reserved with no owner. The replacement's own upstream is
  /// never destroyed; one made for a test is. \requires every block it handed out was given back.
  ~os_upstream();

  /// \effects reserves the arena, if the address space allows. \returns its base, or null.
  char* reserve_arena() noexcept;
  void* try_allocate(std::size_t bytes, std::size_t alignment) noexcept;
  void deallocate(void* p, std::size_t bytes, std::size_t alignment) noexcept;

  /// \effects gives the pages of `[p, p + bytes)` back to the OS and makes the range
  /// inaccessible, keeping it mapped: the memory no longer counts against RLIMIT_DATA (an
  /// allocator that only drops the pages keeps it charged), and recommit must come before reuse.
  void decommit(void* p, std::size_t bytes) noexcept;
  /// \effects makes `[p, p + bytes)`, decommitted, usable again (zero-filled). \returns whether
  /// the OS did (it may refuse under RLIMIT_DATA or strict overcommit).
  bool recommit(void* p, std::size_t bytes) noexcept;

  /// \effects makes the region at `p`, handed out for a request of `bytes`, one for `new_bytes`
  /// where it lies, taking the address space after it: the start of the free span there, or the
  /// heap's top (as glibc's realloc extends a mapped chunk with mremap). \returns whether it did;
  /// false, changing nothing, for a region outside the region heap, one whose neighbour is live,
  /// or when the OS refuses the pages.
  bool grow_region(void* p, std::size_t bytes, std::size_t new_bytes) noexcept;

  /// \returns how long, in milliseconds, memory freed here stays before it goes back: free spans
  /// of the region heap, and the engine's wholly free chunks (0: at the next look).
  std::uint64_t delay_ms() const noexcept { return delay_ms_; }
  /// \effects sets delay_ms(); the process heap's comes from `decay:MS` as it is made.
  void set_delay_ms(std::uint64_t ms) noexcept { delay_ms_ = ms; }

  /// \effects decommits every free span of the region heap unused for `delay_ms()` (all of them if
  /// `everything`). \returns the bytes given back.
  std::size_t purge(bool everything) noexcept;

  /// \returns the bytes mapped now and at most so far: committed in the arena and the region
  /// heap, or mapped outside them (reservations count whole).
  std::size_t mapped() const noexcept { return mapped_; }
  std::size_t peak_mapped() const noexcept { return peak_mapped_; }

  /// \returns the size a region for `bytes` is mapped with (0 if it cannot be): on a grid of
  /// eight steps per power of two, at most 12.5 % above the request, so a region freed fits a
  /// later request that rounds to the same size.
  static std::size_t region_size(std::size_t bytes) noexcept;
  /// \returns the bytes the region heap carves for a region of `bytes` (region_size): whole
  /// chunks, so the next region carved after it is aligned to one.
  static std::size_t heap_size(std::size_t bytes) noexcept {
    return detail::round_up(bytes, detail::thread::chunk_size);
  }

private:
  /// A free range of the region heap. Invariant: the spans are in address order, none touches
  /// another (a freed region joins its neighbours), and every byte of a span is committed or
  /// every byte decommitted; the committed ones' bytes add up to spans_committed_.
  struct span {
    char* base;
    std::size_t bytes;
    std::uint64_t freed_at; ///< its last use: when the last region joined into it was freed
    bool committed;
  };

  void* map(std::size_t bytes, std::size_t alignment) noexcept;
  void unmap(void* p, std::size_t bytes) noexcept;
  void count_mapped(std::size_t bytes) noexcept;

  bool in_arena(const void* p) const noexcept {
    return arena_ != nullptr && detail::address(p) - detail::address(arena_) < arena_size;
  }
  bool in_region_heap(const void* p) const noexcept {
    return heap_ != nullptr && detail::address(p) - detail::address(heap_) < region_heap_size;
  }
  void* carve_region(std::size_t bytes) noexcept;
  void* carve_span(std::size_t i, std::size_t bytes) noexcept;
  void* grow_heap(std::size_t bytes) noexcept;
  /// \returns the index of the first free span at or above `p` (span_count_ if none).
  std::size_t span_from(const char* p) const noexcept;
  void free_region(char* p, std::size_t bytes) noexcept;
  bool join_committed(span& s) noexcept;
  void decommit_span(span& s) noexcept;
  /// Decommits `[p, p + bytes)`, committed free span bytes, and counts them given back.
  void give_back(char* p, std::size_t bytes) noexcept;
  void keep_within(std::size_t limit) noexcept;
  void shrink_heap() noexcept;
  void insert_span(std::size_t i, const span& s) noexcept;
  void erase_span(std::size_t i) noexcept;
  bool commit_range(char* p, std::size_t bytes) noexcept;

  char* arena_ = nullptr;      ///< the arena's base, or null
  char* arena_next_ = nullptr; ///< its first reservation not committed yet
  void* arena_free_ = nullptr; ///< chunks of it given back, linked through their first word
  char* reserved_ = nullptr;   ///< next chunk of the current reservation
  char* reserved_end_ = nullptr;
  char* heap_ = nullptr;     ///< the region heap's base, or null
  char* heap_top_ = nullptr; ///< its first byte never carved, or given back whole
  bool heap_tried_ = false;  ///< whether its reservation was attempted
  span spans_[max_spans];    ///< the first span_count_ are the free spans; the rest is never read
  std::size_t span_count_ = 0;
  std::size_t spans_committed_ = 0;                         ///< bytes of the committed free spans
  std::uint64_t purge_at_ = static_cast<std::uint64_t>(-1); ///< when one may be due (purge)
  std::size_t heap_regions_ = 0;                            ///< regions live in the region heap
  std::size_t regions_in_use_ = 0; ///< bytes of the regions handed out and not given back
  std::size_t regions_peak_ = 0;   ///< the most of them at once
  std::uint64_t delay_ms_ = default_delay_ms; ///< delay_ms()
  std::size_t mapped_ = 0;
  std::size_t peak_mapped_ = 0;
};

} // namespace memkit::replacement
