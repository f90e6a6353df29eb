// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/replay/flat_map.hpp: an open-addressing hash map from nonzero 64-bit keys
// (addresses, packed pairs) to small values, for the compiler's and the profiler's per-block
// state: one array, no node per entry, so a trace's live blocks cost their entries and nothing
// more (a std::unordered_map node costs an allocation and about 48 bytes besides).
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace memkit::bench::replay {

/// Linear probing with backward-shift deletion (no tombstones, so erasures never slow later
/// lookups); at most 3/4 full. Key 0 marks an empty entry and cannot be stored.
template <class V>
class flat_map {
public:
  /// \returns the value of `key`, or null.
  V* find(std::uint64_t key) noexcept {
    if (size_ == 0) {
      return nullptr;
    }
    for (std::size_t i = home(key);; i = (i + 1) & mask_) {
      if (table_[i].key == key) {
        return &table_[i].value;
      }
      if (table_[i].key == 0) {
        return nullptr;
      }
    }
  }

  /// \returns the value of `key`, inserted as `V{}` if absent, and whether it was inserted.
  /// \requires key != 0. Invalidates pointers to other values.
  std::pair<V*, bool> insert(std::uint64_t key) {
    if ((size_ + 1) * 4 > table_.size() * 3) {
      grow();
    }
    std::size_t i = home(key);
    for (; table_[i].key != 0; i = (i + 1) & mask_) {
      if (table_[i].key == key) {
        return {&table_[i].value, false};
      }
    }
    table_[i] = {key, V{}};
    ++size_;
    return {&table_[i].value, true};
  }

  /// \effects removes `key` if present. \returns whether it was.
  bool erase(std::uint64_t key) noexcept {
    if (size_ == 0) {
      return false;
    }
    std::size_t i = home(key);
    for (; table_[i].key != key; i = (i + 1) & mask_) {
      if (table_[i].key == 0) {
        return false;
      }
    }
    // Shift back every later entry of the probe run that may move into the hole.
    for (std::size_t j = (i + 1) & mask_; table_[j].key != 0; j = (j + 1) & mask_) {
      const std::size_t h = home(table_[j].key);
      if (((j - h) & mask_) >= ((j - i) & mask_)) {
        table_[i] = table_[j];
        i = j;
      }
    }
    table_[i] = {};
    --size_;
    return true;
  }

  std::size_t size() const noexcept { return size_; }

  void clear() noexcept {
    table_.assign(table_.size(), entry{});
    size_ = 0;
  }

  /// \effects calls `f(key, value)` for every entry, in no particular order.
  template <class F>
  void for_each(F&& f) const {
    for (const entry& e : table_) {
      if (e.key != 0) {
        f(e.key, e.value);
      }
    }
  }

private:
  struct entry {
    std::uint64_t key = 0;
    V value{};
  };

  /// Fibonacci hashing: addresses differ in their middle bits, and the multiply spreads them.
  std::size_t home(std::uint64_t key) const noexcept {
    return static_cast<std::size_t>((key * 0x9e3779b97f4a7c15ULL) >> shift_);
  }

  void grow() {
    std::vector<entry> old = std::move(table_);
    const std::size_t n = old.empty() ? 16 : old.size() * 2;
    table_.assign(n, entry{});
    mask_ = n - 1;
    shift_ = 64;
    for (std::size_t m = n; m > 1; m >>= 1) {
      --shift_;
    }
    size_ = 0;
    for (const entry& e : old) {
      if (e.key != 0) {
        std::size_t i = home(e.key);
        while (table_[i].key != 0) {
          i = (i + 1) & mask_;
        }
        table_[i] = e;
        ++size_;
      }
    }
  }

  std::vector<entry> table_;
  std::size_t size_ = 0;
  std::size_t mask_ = 0;
  unsigned shift_ = 64;
};

} // namespace memkit::bench::replay
