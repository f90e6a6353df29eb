// SPDX-License-Identifier: BSL-1.0
// src/os_upstream.hpp: the global replacement's upstream: memory mapped from the OS, chunks carved
// from larger reservations, and a small cache of large regions that decays back to the OS.
#pragma once

#include <cstddef>
#include <cstdint>

#include "memkit/detail/base/align.hpp"
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
/// - every other request maps a region of its own, its size rounded up on a grid of eight steps
///   per power of two (at most 12.5 % above the request), so a freed region fits any later request
///   that rounds to the same size;
/// - a freed region is kept for reuse, its pages resident: at most `cache_slots` of them, and in
///   all the larger of `cache_bytes_floor` and the most bytes the program's regions ever held at
///   once (so the kept memory never takes more than the program itself once did), oldest evicted
///   first; a kept region is unmapped once it has been unused for `delay_ms` (checked whenever
///   the upstream is called, and by `purge`). A request takes the smallest kept region that holds
///   it, the rest staying kept; if none does, the kept regions' pages are moved into a fresh
///   mapping for it (mremap, newest first: no copy, no page fault), as far as they go;
/// - the engine's depot decommits chunks left unused for `delay_ms` (detail/thread/decay.hpp).
///
/// Not thread-safe: the engine calls its upstream only under its own lock.
class os_upstream : public detail::unbounded_resource<os_upstream> {
public:
  static constexpr std::size_t reservation_size = std::size_t{4} << 20;
  /// 32 GiB of address space (of x86-64's 128 TiB for a process), half a million chunks: the
  /// most valgrind lets a program reserve at once, so its tools measure the same fast paths.
  static constexpr std::size_t arena_size = std::size_t{32} << 30;
  static constexpr std::size_t cache_slots = 32;
  static constexpr std::size_t cache_bytes_floor = std::size_t{64} << 20;

  /// How long memory freed to the replacement may stay with it before it goes back to the OS.
  static constexpr std::uint64_t delay_ms = 100;

  static constexpr bool thread_safe = false;
  const char* name() const noexcept { return "memkit::replacement::os_upstream"; }

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

  /// \effects unmaps every kept region unused for `delay_ms` (all of them if `everything`).
  /// \returns the bytes given back.
  std::size_t purge(bool everything) noexcept;

  /// \returns the bytes mapped now and at most so far (reservations count whole).
  std::size_t mapped() const noexcept { return mapped_; }
  std::size_t peak_mapped() const noexcept { return peak_mapped_; }

  /// \returns the size a region for `bytes` is mapped with (0 if it cannot be).
  static std::size_t region_size(std::size_t bytes) noexcept;

private:
  struct kept {
    void* base;
    std::size_t bytes;
    std::uint64_t freed_at;
  };

  void* map(std::size_t bytes, std::size_t alignment) noexcept;
  void unmap(void* p, std::size_t bytes) noexcept;
  void keep(void* p, std::size_t bytes) noexcept;
  void* take_kept(std::size_t bytes, std::size_t alignment) noexcept;
  void* gather_kept(std::size_t bytes, std::size_t alignment) noexcept;
  void take_front(std::size_t i, std::size_t bytes) noexcept;
  void drop_kept(std::size_t i) noexcept;
  void erase_kept(std::size_t i) noexcept;

  bool in_arena(const void* p) const noexcept {
    return arena_ != nullptr && detail::address(p) - detail::address(arena_) < arena_size;
  }
  void count_mapped(std::size_t bytes) noexcept;

  char* arena_ = nullptr;      ///< the arena's base, or null
  char* arena_next_ = nullptr; ///< its first reservation not committed yet
  void* arena_free_ = nullptr; ///< chunks of it given back, linked through their first word
  char* reserved_ = nullptr;   ///< next chunk of the current reservation
  char* reserved_end_ = nullptr;
  kept kept_[cache_slots] = {};
  std::size_t kept_count_ = 0;
  std::size_t kept_bytes_ = 0;
  std::size_t regions_in_use_ = 0; ///< bytes of the regions handed out and not given back
  std::size_t regions_peak_ = 0;   ///< the most of them at once
  std::size_t mapped_ = 0;
  std::size_t peak_mapped_ = 0;
};

} // namespace memkit::replacement
