// SPDX-License-Identifier: BSL-1.0
// memkit/detail/thread/decay.hpp: when memory a thread-caching resource no longer uses goes back to
// the OS.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "../../config.hpp"
#include "../base/align.hpp"
#include "../base/os.hpp"
#include "chunk.hpp"

namespace memkit {
inline namespace MEMKIT_ABI {
namespace detail {
namespace thread {

/// Whether `U` can give a range's pages back to the OS and keep it mapped (`decommit(p, bytes)`),
/// and says after how many milliseconds unused (`delay_ms()`): the global replacement's
/// os_upstream.
template <class U, class = void>
struct decommits : std::false_type {};
template <class U>
struct decommits<U, std::void_t<decltype(std::declval<U&>().decommit(nullptr, std::size_t{})),
                                decltype(std::declval<const U&>().delay_ms())>> : std::true_type {};

/// Whether a range `U` decommitted must be made usable again before it is touched
/// (`recommit(p, bytes)`, false if the OS refused): the global replacement's os_upstream, whose
/// decommit also makes the range inaccessible, so it no longer counts against RLIMIT_DATA.
template <class U, class = void>
struct recommits : std::false_type {};
template <class U>
struct recommits<U, std::void_t<decltype(std::declval<U&>().recommit(nullptr, std::size_t{}))>>
    : std::true_type {};

/// The whole policy of giving memory back, over an upstream that decommits (nothing otherwise):
/// - a wholly free chunk in the depot for the upstream's `delay_ms()` gives its pages back, all
///   but its header's (which links it into the depot); with a delay of 0, as it enters;
/// - the upstream then gives back what it keeps for reuse (its own regions, by the same delay);
/// - the depot is looked at whenever a chunk enters or leaves it and whenever a large block is
///   allocated or freed (`tick`), at most twice per delay; a thread that runs on its cache alone
///   ticks every 1,024 frees in the global replacement (src/heap.hpp, frees_per_tick);
/// - `malloc_trim` (the engine's trim) gives everything back at once.
/// Every member requires the depot's mutex.
template <class Upstream>
class decay {
public:
  static constexpr bool enabled = decommits<Upstream>::value;

  /// \effects stamps `c`, a chunk entering the depot now, or gives its pages back at once if the
  /// delay is 0 (so that `purge` never walks the depot for them).
  void on_enter(chunk* c, Upstream& upstream) noexcept {
    if constexpr (enabled) {
      if (upstream.delay_ms() == 0) {
        upstream.decommit(base_of(c) + page_size, chunk_size - page_size);
        c->freed_at = 0;
      } else {
        c->freed_at = os::now_ms();
      }
    }
  }

  /// \returns whether `c`, leaving the depot for a heap, is usable: recommitted if it was
  /// decommitted and the upstream needs it (false if the OS refused).
  static bool on_leave(chunk* c, Upstream& upstream) noexcept {
    if constexpr (enabled && recommits<Upstream>::value) {
      if (c->freed_at == 0) {
        return upstream.recommit(base_of(c) + page_size, chunk_size - page_size);
      }
    }
    return true;
  }

  /// \effects gives back the pages `c`, a chunk with no live block about to serve class `cls`,
  /// carved for its last class beyond its header's page, if that class was another. A chunk keeps
  /// resident every page its classes carved, and the next class carves from the chunk's start a
  /// page at a time: a chunk taken by a class that needs a page of it would otherwise hold the
  /// largest extent of every class it served. The range stays usable: the new class faults in
  /// what it carves. The engine calls this for a class's first chunk in a heap only
  /// (engine::claim_chunk). No lock needed (one madvise).
  static void on_reassign(chunk* c, std::uint32_t cls) noexcept {
    if constexpr (enabled) {
      if (c->cls == cls || c->block_size == 0) {
        return; // the same class, or a chunk never assigned
      }
      const std::size_t carved =
          round_up(address(c->fresh.next()) - address(base_of(c)), page_size);
      if (carved > page_size) {
        os::decommit(base_of(c) + page_size, carved - page_size);
      }
    }
  }

  /// \returns whether it is time to `purge` (the time is read when `now` is 0).
  bool due(std::uint64_t& now) const noexcept {
    if constexpr (enabled) {
      now = now != 0 ? now : os::now_ms();
      return now >= next_purge_;
    }
    return false;
  }

  /// \effects decommits the chunks of the depot list `free` (linked through next) that waited
  /// the delay by `now` (every one if `everything`), then lets `upstream` give back what it keeps.
  /// \returns the bytes given back.
  std::size_t purge(chunk* free, Upstream& upstream, std::uint64_t now, bool everything) noexcept {
    std::size_t given = 0;
    if constexpr (enabled) {
      const std::uint64_t delay = upstream.delay_ms();
      // With a delay of 0, every chunk gave its pages back as it entered (on_enter).
      chunk* const first = delay == 0 && !everything ? nullptr : free;
      for (chunk* c = first; c != nullptr; c = c->next) {
        if (c->freed_at != 0 && (everything || now - c->freed_at >= delay)) {
          upstream.decommit(base_of(c) + page_size, chunk_size - page_size);
          c->freed_at = 0;
          given += chunk_size - page_size;
        }
      }
      given += upstream.purge(everything);
      next_purge_ = now + delay / 2;
    }
    return given;
  }

private:
  std::uint64_t next_purge_ = 0; ///< the earliest time to look again
};

} // namespace thread
} // namespace detail
} // namespace MEMKIT_ABI
} // namespace memkit
