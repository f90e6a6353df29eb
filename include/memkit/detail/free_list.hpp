// SPDX-License-Identifier: BSL-1.0
// memkit/detail/free_list.hpp: the intrusive list of free blocks every free-list strategy keeps.
#pragma once

#include <cstddef>

#include "../config.hpp"
#include "base/poison.hpp"

namespace memkit {
inline namespace MEMKIT_ABI {
namespace detail {

/// A run of free blocks linked through their first words, taken from or given to a `free_list`
/// in one step (the batch forms a per-thread cache moves blocks with). `last`'s link is null when
/// the chain comes from `free_list::pop_chain`.
struct free_chain {
  void* first = nullptr;
  void* last = nullptr;
  std::size_t count = 0;
};

/// A LIFO list of free blocks whose links live in the blocks themselves, so it costs one word.
///
/// A link is read and written only by `next` and `link`, through `detail::load_hidden` and
/// `detail::store_hidden`: a free block stays poisoned as a whole, its link included, so a use
/// after free of a block's first bytes, the likeliest field to be read, is reported like any other
/// (docs/debugging.md). Without a sanitizer both compile to a plain load and store.
///
/// Every operation a hot path uses is forced inline and touches only the head: a pool's steady
/// state is one `pop` and one `push` (bench/pair_loop.cpp counts their instructions). The list
/// trusts its caller: which blocks may be pushed is the strategy's to check.
class free_list {
public:
  /// \returns the block `pop` would return, or null.
  MEMKIT_ALWAYS_INLINE void* head() const noexcept { return head_; }
  MEMKIT_ALWAYS_INLINE bool empty() const noexcept { return head_ == nullptr; }

  /// \returns the most recently pushed block, unlinked (still poisoned).
  /// \requires `!empty()`.
  MEMKIT_ALWAYS_INLINE void* pop() noexcept {
    void* const p = head_;
    head_ = next(p);
    return p;
  }

  /// \effects makes `p`, a free block of `block_size` bytes, the head, and poisons all of it.
  MEMKIT_ALWAYS_INLINE void push(void* p, std::size_t block_size) noexcept {
    link(p, head_, block_size);
    head_ = p;
  }

  /// \effects puts every block of `c` in front of the list, in the chain's order; `block_size` is
  /// that of `c.last`, which is poisoned again after its link is rewritten.
  /// \requires `c.count != 0`, `c.first` reaches `c.last` through `c.count - 1` links.
  void push_chain(const free_chain& c, std::size_t block_size) noexcept {
    link(c.last, head_, block_size);
    head_ = c.first;
  }

  /// \effects puts the `n` blocks of `block_size` bytes from `first` on in front of the list in
  /// address order, writing their links in that order too (a stream the hardware prefetches).
  void push_run(char* first, std::size_t n, std::size_t block_size) noexcept {
    if (n == 0) {
      return;
    }
    for (std::size_t k = 0; k + 1 < n; ++k) {
      void* const after = first + (k + 1) * block_size;
      link(first + k * block_size, after, block_size);
    }
    link(first + (n - 1) * block_size, head_, block_size);
    head_ = first;
  }

  /// \returns the first `min(n, length)` blocks, in the order `pop` would return them, as a chain
  /// whose last link is null; they are no longer on the list. O(returned blocks).
  free_chain pop_chain(std::size_t n) noexcept {
    free_chain c;
    if (n == 0 || head_ == nullptr) {
      return c;
    }
    c.first = head_;
    void* last = head_;
    c.count = 1;
    for (void* p = next(last); p != nullptr && c.count < n; p = next(p)) {
      last = p;
      ++c.count;
    }
    head_ = next(last);
    link(last, nullptr, sizeof(void*));
    c.last = last;
    return c;
  }

  /// \returns the length of the list, counting no further than `limit` (a corrupt, cyclic list
  /// stops there too). O(min(length, limit)).
  std::size_t count(std::size_t limit = static_cast<std::size_t>(-1)) const noexcept {
    std::size_t n = 0;
    for (const void* p = head_; p != nullptr && n < limit; p = next(p)) {
      ++n;
    }
    return n;
  }

  /// \effects forgets every block (they stay whatever they are: a strategy clears the list when it
  /// makes its blocks free wholesale).
  void clear() noexcept { head_ = nullptr; }

  /// \returns the block after `p` on a list. The one place a link is read.
  MEMKIT_ALWAYS_INLINE static void* next(const void* p) noexcept { return load_hidden<void*>(p); }

private:
  /// \effects stores `next` as `p`'s link and poisons `[p, p + poisoned)`. The one place a link is
  /// written. `next` is taken by reference so that `push` copies the head straight from the
  /// member, as the strategies did before this list existed: passed by value, GCC 12 -O2 kept the
  /// head in a register across a loop of frees, with a flag to store it after the loop, four more
  /// instructions per loop (callgrind of bench/pair_loop.cpp).
  MEMKIT_ALWAYS_INLINE static void link(void* p, void* const& next, std::size_t poisoned) noexcept {
    store_hidden(p, next, poisoned);
  }

  void* head_ = nullptr;
};

} // namespace detail
} // namespace MEMKIT_ABI
} // namespace memkit
