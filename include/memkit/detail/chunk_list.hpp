// SPDX-License-Identifier: BSL-1.0
// memkit/detail/chunk_list.hpp: chunks obtained from an upstream, each with a header at its end,
// linked oldest first; the growth policy that sizes them.
#pragma once

#include <cstddef>
#include <new>

#include "../config.hpp"
#include "../resource.hpp"
#include "base/align.hpp"
#include "base/assert.hpp"
#include "base/poison.hpp"

namespace memkit {
inline namespace MEMKIT_ABI {
namespace detail {

/// The header at the end of every chunk, after its last block: the blocks start at the chunk's
/// start with no padding even when they are page-aligned, and the header costs two words.
struct chunk {
  chunk* next;       ///< the next younger chunk
  std::size_t bytes; ///< the whole chunk as obtained from the upstream, this header included

  /// \returns where the chunk (and its first block) starts.
  char* begin() const noexcept {
    return reinterpret_cast<char*>(const_cast<chunk*>(this + 1)) - bytes;
  }
  /// \returns the end of the blocks: the header's address.
  char* blocks_end() const noexcept { return reinterpret_cast<char*>(const_cast<chunk*>(this)); }
  /// \returns the bytes before the header, which the blocks are carved from.
  std::size_t area() const noexcept { return bytes - sizeof(chunk); }
};

/// Chunk sizes, in blocks, of a strategy that grows geometrically: `first`, then each chunk twice
/// the last one obtained, up to `max`.
class chunk_growth {
public:
  /// \requires `first != 0`; a `max` below `first` is raised to it.
  chunk_growth(std::size_t first, std::size_t max) noexcept
      : first_(first), max_(max < first ? first : max), next_(first) {}

  std::size_t first() const noexcept { return first_; }
  std::size_t max() const noexcept { return max_; }
  /// \returns the size of the next chunk.
  std::size_t next() const noexcept { return next_; }
  /// \effects the next chunk is twice `obtained`, at most `max()`.
  void grew(std::size_t obtained) noexcept { next_ = obtained <= max_ / 2 ? 2 * obtained : max_; }
  /// \effects starts over from `first()` (after every chunk went back).
  void restart() noexcept { next_ = first_; }

private:
  std::size_t first_;
  std::size_t max_;
  std::size_t next_;
};

/// The chunks of one strategy (or of one of its size classes), linked oldest first through their
/// trailing headers. The chunks not carved since the last `keep_all()` (a `reset()`), or obtained
/// ahead of need, are the *spare* ones: always the list's young end, handed out oldest first by
/// `take_spare`, so chunks are reused in the order they were first used. What a chunk holds and
/// how it is carved is the owner's business.
///
/// Two words: the list is circular, the youngest chunk linking back to the oldest, so one pointer
/// reaches both ends. A multipool holds one list per size class next to a two-word carver, and
/// four words keep that pair at 32 bytes, indexed with a shift (a third pointer cost an
/// instruction per block carved: callgrind of bench/pair_loop.cpp).
///
/// Fresh chunks are poisoned whole and go back unpoisoned (detail/base/poison.hpp). Nothing here
/// counts: the owner records each upstream call in its statistics.
class chunk_list {
public:
  chunk_list() noexcept = default;
  chunk_list(const chunk_list&) = delete;
  chunk_list& operator=(const chunk_list&) = delete;

  /// \returns a new chunk of `area` bytes for blocks plus its header, aligned to `alignment`
  /// (`area` a multiple of `alignof(chunk)`), appended as spare; or null, changing nothing, if the
  /// size overflows or the upstream refuses.
  template <class Upstream>
  chunk* obtain(Upstream& upstream, std::size_t area, std::size_t alignment) noexcept {
    if (area > unbounded_size - sizeof(chunk)) {
      return nullptr;
    }
    const std::size_t bytes = area + sizeof(chunk);
    void* const p = upstream.try_allocate(bytes, alignment);
    if (p == nullptr) {
      return nullptr;
    }
    poison(p, area);
    chunk* const c = ::new (static_cast<char*>(p) + area) chunk{nullptr, bytes};
    if (tail_ != nullptr) {
      c->next = tail_->next;
      tail_->next = c;
    } else {
      c->next = c;
    }
    tail_ = c;
    if (spare_ == nullptr) {
      spare_ = c;
    }
    MEMKIT_ASSERT_EXPENSIVE(well_formed());
    return c;
  }

  /// \returns a new chunk of `want` blocks of `block_size` bytes (as `obtain`), halving the request
  /// down to `need` blocks while the upstream refuses, so a bounded upstream is used to its last
  /// block; `blocks` is set to the number obtained. Null if even `need` blocks are refused.
  /// \requires `0 < need <= want`.
  template <class Upstream>
  chunk* obtain_blocks(Upstream& upstream, std::size_t want, std::size_t need,
                       std::size_t block_size, std::size_t alignment,
                       std::size_t& blocks) noexcept {
    MEMKIT_ASSERT_INTERNAL(need != 0 && need <= want);
    const std::size_t limit = (unbounded_size - sizeof(chunk)) / block_size;
    for (;;) {
      if (want <= limit) {
        if (chunk* c = obtain(upstream, want * block_size, alignment); c != nullptr) {
          blocks = want;
          return c;
        }
      }
      if (want <= need) {
        return nullptr;
      }
      want = want / 2 > need ? want / 2 : need;
    }
  }

  /// \returns the oldest spare chunk, no longer spare, or null if none is left.
  chunk* take_spare() noexcept {
    chunk* const c = spare_;
    if (c != nullptr) {
      spare_ = c != tail_ ? c->next : nullptr;
    }
    return c;
  }

  /// \effects makes every chunk spare again (a strategy's `reset()`); poisons their blocks.
  void keep_all() noexcept {
    if constexpr (poisoning) {
      for_each([](const chunk* c) { poison(c->begin(), c->area()); });
    }
    spare_ = head();
  }

  /// \effects returns every chunk to `upstream` with its size and `alignment`, calling
  /// `returned(bytes)` before each goes (its header with it); the list is empty afterwards.
  template <class Upstream, class Returned>
  void release(Upstream& upstream, std::size_t alignment, Returned&& returned) noexcept {
    MEMKIT_ASSERT_EXPENSIVE(well_formed());
    if (tail_ != nullptr) {
      chunk* c = tail_->next;
      tail_->next = nullptr;
      while (c != nullptr) {
        chunk* const next = c->next;
        const std::size_t bytes = c->bytes;
        unpoison_kept(c->begin(), c->area());
        returned(bytes);
        upstream.deallocate(c->begin(), bytes, alignment);
        c = next;
      }
    }
    tail_ = spare_ = nullptr;
  }

  /// \returns whether `p` points into a chunk's blocks (carved or not). O(chunks).
  bool contains(const void* p) const noexcept {
    bool found = false;
    for_each([&](const chunk* c) { found = found || in_range(p, c->begin(), c->area()); });
    return found;
  }

  /// \returns the number of chunks. O(chunks).
  std::size_t count() const noexcept {
    std::size_t n = 0;
    for_each([&n](const chunk*) { ++n; });
    return n;
  }

  /// \returns whether the links from the oldest chunk come back to it through the youngest,
  /// passing the first spare one, within `limit` steps. O(chunks); for `MEMKIT_ASSERT_EXPENSIVE`.
  bool well_formed(std::size_t limit = static_cast<std::size_t>(-1) / 2) const noexcept {
    if (tail_ == nullptr) {
      return spare_ == nullptr;
    }
    bool tail_seen = false;
    bool spare_seen = spare_ == nullptr;
    const chunk* c = head();
    for (std::size_t n = 0; n < limit; ++n) {
      tail_seen = tail_seen || c == tail_;
      spare_seen = spare_seen || c == spare_;
      c = c->next;
      if (c == head()) {
        return tail_seen && spare_seen;
      }
    }
    return false;
  }

private:
  chunk* head() const noexcept { return tail_ != nullptr ? tail_->next : nullptr; }

  /// Calls `f(c)` for every chunk, oldest first.
  template <class F>
  void for_each(F&& f) const {
    if (tail_ == nullptr) {
      return;
    }
    const chunk* c = tail_->next;
    do {
      const chunk* const next = c->next;
      f(c);
      c = next;
    } while (c != tail_->next);
  }

  chunk* tail_ = nullptr;  ///< youngest; its `next` is the oldest
  chunk* spare_ = nullptr; ///< oldest spare chunk; it and every younger one are spare
};

} // namespace detail
} // namespace MEMKIT_ABI
} // namespace memkit
