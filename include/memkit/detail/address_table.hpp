// SPDX-License-Identifier: BSL-1.0
// memkit/detail/address_table.hpp: blocks keyed by address, with their size and alignment.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "../config.hpp"
#include "../resource.hpp"
#include "base/align.hpp"
#include "base/assert.hpp"

namespace memkit {
inline namespace MEMKIT_ABI {
namespace detail {

/// Blocks keyed by address, each with the size and alignment it was handed out with: what a
/// strategy remembers of blocks it cannot find from their address alone (multipool's large blocks,
/// passed straight to its upstream, so that `owns` stays exact, `release` returns them and a
/// mismatched `deallocate` is caught; later a malloc replacement's and a profiler's). Open
/// addressing with linear probing, at most half full; its slots come from an upstream the caller
/// passes to each call that may grow or free them, so the table itself is two words and two
/// counters, and allocates nothing until the first insert.
class address_table {
public:
  struct entry {
    void* block;
    std::size_t bytes;
    std::size_t alignment;
  };

  address_table() noexcept = default;
  address_table(const address_table&) = delete;
  address_table& operator=(const address_table&) = delete;

  /// \requires the table is empty and its slots were returned (`release`).
  ~address_table() { MEMKIT_ASSERT_INTERNAL(slots_ == nullptr); }

  /// \returns the number of entries.
  std::size_t count() const noexcept { return count_; }
  /// \returns the sum of the entries' sizes.
  std::size_t bytes() const noexcept { return bytes_; }

  /// \returns the entry of the block starting at `p`, or null.
  entry* find(const void* p) noexcept {
    if (count_ == 0) {
      return nullptr;
    }
    for (std::size_t i = home(p);; i = (i + 1) & (capacity_ - 1)) {
      if (slots_[i].block == p) {
        return &slots_[i];
      }
      if (slots_[i].block == nullptr) {
        return nullptr;
      }
    }
  }

  /// \returns whether `p` points into one of the blocks. O(capacity).
  bool covers(const void* p) const noexcept {
    for (std::size_t i = 0; i < capacity_; ++i) {
      const entry& e = slots_[i];
      if (e.block != nullptr && in_range(p, e.block, std::max<std::size_t>(e.bytes, 1))) {
        return true;
      }
    }
    return false;
  }

  /// Records a block not recorded yet, growing the slots through `upstream` when more than half
  /// would be in use; \returns false if they could not grow (nothing recorded then).
  template <class Upstream>
  bool insert(Upstream& upstream, const entry& e) noexcept {
    // At most half full keeps linear probes short (Knuth, TAOCP 6.4: ~2.5 probes per miss).
    if ((count_ + 1) * 2 > capacity_ && !grow(upstream)) {
      return false;
    }
    MEMKIT_ASSERT_INTERNAL(e.block != nullptr && find(e.block) == nullptr);
    place(e);
    ++count_;
    bytes_ += e.bytes;
    MEMKIT_ASSERT_EXPENSIVE(well_formed());
    return true;
  }

  /// Forgets `*e`, shifting later entries back so no probe sequence is broken (Knuth's
  /// Algorithm R), which keeps the table free of tombstones.
  void erase(entry* e) noexcept {
    --count_;
    bytes_ -= e->bytes;
    const std::size_t mask = capacity_ - 1;
    auto hole = static_cast<std::size_t>(e - slots_);
    for (std::size_t j = (hole + 1) & mask; slots_[j].block != nullptr; j = (j + 1) & mask) {
      // slots_[j] may fill the hole only if the hole lies on its probe path from home to j.
      if (((j - home(slots_[j].block)) & mask) >= ((j - hole) & mask)) {
        slots_[hole] = slots_[j];
        hole = j;
      }
    }
    slots_[hole].block = nullptr;
    MEMKIT_ASSERT_EXPENSIVE(well_formed());
  }

  /// \effects calls `each(entry)` for every entry, in no particular order, and forgets them all;
  /// keeps the slots.
  template <class Each>
  void clear(Each&& each) noexcept {
    for (std::size_t i = 0; i < capacity_ && count_ != 0; ++i) {
      if (entry& e = slots_[i]; e.block != nullptr) {
        each(static_cast<const entry&>(e));
        e.block = nullptr;
        --count_;
      }
    }
    MEMKIT_ASSERT_INTERNAL(count_ == 0);
    bytes_ = 0;
  }

  /// \effects returns the slots to `upstream`, which they came from.
  /// \requires the table is empty (`clear`).
  template <class Upstream>
  void release(Upstream& upstream) noexcept {
    MEMKIT_ASSERT_INTERNAL(count_ == 0);
    if (slots_ != nullptr) {
      upstream.deallocate(slots_, capacity_ * sizeof(entry), alignof(entry));
    }
    slots_ = nullptr;
    capacity_ = 0;
  }

  /// \returns whether every entry sits on its probe path (no empty slot between its home and it)
  /// and the counters match the entries. O(capacity); for `MEMKIT_ASSERT_EXPENSIVE`.
  bool well_formed() const noexcept {
    std::size_t n = 0;
    std::size_t b = 0;
    for (std::size_t i = 0; i < capacity_; ++i) {
      if (slots_[i].block == nullptr) {
        continue;
      }
      ++n;
      b += slots_[i].bytes;
      for (std::size_t j = home(slots_[i].block); j != i; j = (j + 1) & (capacity_ - 1)) {
        if (slots_[j].block == nullptr) {
          return false;
        }
      }
    }
    return n == count_ && b == bytes_ && (capacity_ == 0 || count_ * 2 <= capacity_);
  }

private:
  static constexpr std::size_t initial_capacity = 16;

  std::size_t home(const void* p) const noexcept {
    // Fibonacci hashing (Knuth, TAOCP 6.4): the multiply spreads aligned addresses, whose low bits
    // are all zero, over the high bits taken as the slot.
    const std::uint64_t h = static_cast<std::uint64_t>(address(p)) * 0x9E3779B97F4A7C15U;
    return static_cast<std::size_t>(h >> 32) & (capacity_ - 1);
  }

  void place(const entry& e) noexcept {
    std::size_t i = home(e.block);
    while (slots_[i].block != nullptr) {
      i = (i + 1) & (capacity_ - 1);
    }
    slots_[i] = e;
  }

  template <class Upstream>
  bool grow(Upstream& upstream) noexcept {
    const std::size_t capacity = capacity_ == 0 ? initial_capacity : capacity_ * 2;
    if (capacity > unbounded_size / sizeof(entry)) {
      return false;
    }
    void* memory = upstream.try_allocate(capacity * sizeof(entry), alignof(entry));
    if (memory == nullptr) {
      return false;
    }
    entry* const old = slots_;
    const std::size_t old_capacity = capacity_;
    slots_ = static_cast<entry*>(memory);
    capacity_ = capacity;
    std::fill_n(slots_, capacity_, entry{nullptr, 0, 0});
    for (std::size_t i = 0; i < old_capacity; ++i) {
      if (old[i].block != nullptr) {
        place(old[i]);
      }
    }
    if (old != nullptr) {
      upstream.deallocate(old, old_capacity * sizeof(entry), alignof(entry));
    }
    return true;
  }

  entry* slots_ = nullptr;
  std::size_t capacity_ = 0; ///< a power of two, or 0 before the first large block
  std::size_t count_ = 0;
  std::size_t bytes_ = 0;
};

} // namespace detail
} // namespace MEMKIT_ABI
} // namespace memkit
