// SPDX-License-Identifier: BSL-1.0
// memkit/detail/chunk_registry.hpp: the chunks of a concurrent strategy by number and by address,
// read without a lock while they are added under one.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>

#include "../config.hpp"
#include "base/align.hpp"
#include "base/assert.hpp"
#include "base/bits.hpp"
#include "fit_table.hpp"

namespace memkit {
inline namespace MEMKIT_ABI {
namespace detail {

/// The chunks a concurrent strategy obtained, numbered from 0 in the order added, each starting at
/// an address of its own (a chunk's start is its key). Two lookups, both O(1):
/// - `base(n)`: number to start, for turning a block handle into an address. Buckets of doubling
///   size, `first_bucket << b` entries in bucket `b`, so the table never moves: a reader that
///   found an entry keeps finding it there, and 29 buckets cover every 32-bit number. The first
///   bucket is part of the object.
/// - `find(p)`: start to number, for `owns` and `deallocate`, which must not touch memory a
///   foreign pointer points to. Open addressing with linear probing, at most half full (Knuth,
///   TAOCP 6.4: ~2.5 probes per miss); growing builds a table twice the size and publishes it,
///   and the old one is kept until `clear`, since a reader may still be probing it. The tables
///   kept add up to less than the current one.
///
/// Memory model: `add` and `clear` must be serialized by the owner (its growth lock); `base`,
/// `find` and `count` may run in any thread at any time between them. An entry is written before
/// it is published with a release store (bucket pointer, table pointer, slot key, count), and
/// read through acquire loads, so a reader that sees the publication sees the entry. A reader that
/// learnt of a chunk through the owner's own synchronization (a block popped from a stack the
/// chunk was pushed on after `add`) always finds it. The memory of the tables comes from the
/// upstream the caller passes to `add` and `clear`.
class chunk_registry {
public:
  /// What `find` returns for an address that starts no chunk.
  static constexpr std::uint32_t npos = 0xFFFFFFFFu;

  chunk_registry() noexcept = default;
  chunk_registry(const chunk_registry&) = delete;
  chunk_registry& operator=(const chunk_registry&) = delete;

  /// \requires `clear` was called (the tables went back to their upstream).
  ~chunk_registry() { MEMKIT_ASSERT_INTERNAL(count() == 0 && table_.load() == nullptr); }

  /// \returns the number of chunks added.
  std::uint32_t count() const noexcept { return count_.load(std::memory_order_acquire); }

  /// \returns the start of chunk `n`. \requires `n < count()` as seen by the caller.
  MEMKIT_ALWAYS_INLINE char* base(std::uint32_t n) const noexcept {
    if (MEMKIT_LIKELY(n < first_bucket)) {
      return first_[n].load(std::memory_order_acquire);
    }
    const std::uint64_t m = std::uint64_t{n} + first_bucket;
    const unsigned top = floor_log2(m);
    return buckets_[top - first_bucket_log]
        .load(std::memory_order_acquire)[m - (std::uint64_t{1} << top)]
        .load(std::memory_order_acquire);
  }

  /// \returns the number of the chunk that starts at `start`, or `npos`.
  std::uint32_t find(const void* start) const noexcept {
    const std::uintptr_t key = address(start);
    const table* t = table_.load(std::memory_order_acquire);
    if (t == nullptr || key == 0) { // 0 marks an empty slot
      return npos;
    }
    for (std::size_t i = t->home(key);; i = (i + 1) & t->mask) {
      const std::uintptr_t k = t->slots()[i].key.load(std::memory_order_acquire);
      if (k == key) {
        return t->slots()[i].number.load(std::memory_order_relaxed);
      }
      if (k == 0) {
        return npos;
      }
    }
  }

  /// \effects makes `start` (not null, not added yet) chunk number `count()`, growing the tables
  /// through `upstream` if needed. \returns false, adding nothing, if they could not grow.
  /// \requires the caller holds the owner's growth lock; `count() < npos`.
  template <class Upstream>
  bool add(Upstream& upstream, char* start) noexcept {
    const std::uint32_t n = count_.load(std::memory_order_relaxed);
    MEMKIT_ASSERT_INTERNAL(start != nullptr && n < npos && find(start) == npos);
    std::atomic<char*>* entry = slot_for(upstream, n);
    if (entry == nullptr || !reserve_key(upstream, n + std::size_t{1})) {
      return false;
    }
    entry->store(start, std::memory_order_release);
    place(*table_.load(std::memory_order_relaxed), address(start), n);
    count_.store(n + 1, std::memory_order_release);
    return true;
  }

  /// \effects calls `f(start)` for every chunk, oldest first. \requires quiescence.
  template <class F>
  void for_each(F&& f) const {
    const std::uint32_t n = count();
    for (std::uint32_t i = 0; i < n; ++i) {
      f(base(i));
    }
  }

  /// \effects forgets every chunk and returns the tables to `upstream` (not the chunks: the owner
  /// returns those first, with `for_each`). \requires quiescence.
  template <class Upstream>
  void clear(Upstream& upstream) noexcept {
    for (unsigned b = 1; b < bucket_count; ++b) {
      if (std::atomic<char*>* bucket = buckets_[b].load(std::memory_order_relaxed)) {
        upstream.deallocate(bucket, bucket_bytes(b), alignof(std::atomic<char*>));
        buckets_[b].store(nullptr, std::memory_order_relaxed);
      }
    }
    for (table* t = table_.load(std::memory_order_relaxed); t != nullptr;) {
      table* const older = t->retired;
      upstream.deallocate(t, table::bytes(t->mask + 1), alignof(table));
      t = older;
    }
    table_.store(nullptr, std::memory_order_relaxed);
    count_.store(0, std::memory_order_relaxed);
  }

private:
  static constexpr unsigned bits = 64;
  static constexpr unsigned first_bucket_log = 4;
  static constexpr std::size_t first_bucket = std::size_t{1} << first_bucket_log;
  // Bucket b holds numbers [16 (2^b - 1), 16 (2^(b+1) - 1)); 29 buckets reach past 2^32.
  static constexpr unsigned bucket_count = 29;
  static_assert((first_bucket << bucket_count) - first_bucket > std::size_t{npos});

  struct slot {
    std::atomic<std::uintptr_t> key;
    std::atomic<std::uint32_t> number;
  };

  // A hash table: this header, then `mask + 1` slots.
  struct alignas(slot) table {
    std::size_t mask;
    unsigned shift; // 64 - log2(slots): the hash is the product's top bits
    table* retired; // the smaller table this one replaced

    static std::size_t bytes(std::size_t slots) noexcept {
      return sizeof(table) + slots * sizeof(slot);
    }
    slot* slots() const noexcept { return reinterpret_cast<slot*>(const_cast<table*>(this) + 1); }
    // Fibonacci hashing (Knuth, TAOCP 6.4): chunk starts are aligned, their low bits all zero, and
    // the multiply spreads the high ones over the top bits taken as the slot.
    std::size_t home(std::uintptr_t key) const noexcept {
      return static_cast<std::size_t>((std::uint64_t{key} * 0x9E3779B97F4A7C15u) >> shift);
    }
  };

  // With m = n + 16, bucket b holds the m whose top bit is bit b + 4, at m minus that bit: the
  // bucket and the offset are a count of leading zeros and a subtraction (callgrind of an
  // alloc/free loop: 22 instructions per lookup with a shift-add-shift formula, 7 with this).
  MEMKIT_ALWAYS_INLINE static unsigned bucket_of(std::uint32_t n) noexcept {
    return floor_log2(std::uint64_t{n} + first_bucket) - first_bucket_log;
  }
  // \returns the place of number n in its bucket b.
  MEMKIT_ALWAYS_INLINE static std::size_t offset_in(unsigned b, std::uint32_t n) noexcept {
    return std::size_t{n} + first_bucket - (first_bucket << b);
  }

  static std::size_t bucket_bytes(unsigned b) noexcept {
    return (first_bucket << b) * sizeof(std::atomic<char*>);
  }

  // \returns the entry for number n, allocating its bucket if it is the bucket's first.
  template <class Upstream>
  std::atomic<char*>* slot_for(Upstream& upstream, std::uint32_t n) noexcept {
    if (n < first_bucket) {
      return &first_[n];
    }
    const unsigned b = bucket_of(n);
    std::atomic<char*>* bucket = buckets_[b].load(std::memory_order_relaxed);
    if (bucket == nullptr) {
      void* memory = upstream.try_allocate(bucket_bytes(b), alignof(std::atomic<char*>));
      if (memory == nullptr) {
        return nullptr;
      }
      bucket = static_cast<std::atomic<char*>*>(memory);
      for (std::size_t i = 0; i < (first_bucket << b); ++i) {
        ::new (static_cast<void*>(bucket + i)) std::atomic<char*>(nullptr);
      }
      // Release: the entries' construction happens before any reader uses the bucket.
      buckets_[b].store(bucket, std::memory_order_release);
    }
    return bucket + offset_in(b, n);
  }

  // \effects makes room for `keys` keys, at most half the slots, with a new table if needed.
  template <class Upstream>
  bool reserve_key(Upstream& upstream, std::size_t keys) noexcept {
    table* const old = table_.load(std::memory_order_relaxed);
    const std::size_t slots = old == nullptr ? initial_slots : old->mask + 1;
    if (old != nullptr && keys * 2 <= slots) {
      return true;
    }
    const std::size_t grown = old == nullptr ? slots : 2 * slots;
    void* memory = upstream.try_allocate(table::bytes(grown), alignof(table));
    if (memory == nullptr) {
      return false;
    }
    table* const t = ::new (memory) table{grown - 1, bits - trailing_zeros(grown), old};
    for (std::size_t i = 0; i < grown; ++i) {
      ::new (static_cast<void*>(t->slots() + i)) slot{{0}, {0}};
    }
    if (old != nullptr) {
      for (std::size_t i = 0; i <= old->mask; ++i) {
        const std::uintptr_t k = old->slots()[i].key.load(std::memory_order_relaxed);
        if (k != 0) {
          place(*t, k, old->slots()[i].number.load(std::memory_order_relaxed));
        }
      }
    }
    // Release: a reader that loads the new table sees every slot written above.
    table_.store(t, std::memory_order_release);
    return true;
  }

  static void place(table& t, std::uintptr_t key, std::uint32_t number) noexcept {
    std::size_t i = t.home(key);
    while (t.slots()[i].key.load(std::memory_order_relaxed) != 0) {
      i = (i + 1) & t.mask;
    }
    t.slots()[i].number.store(number, std::memory_order_relaxed);
    // Release: a reader that finds the key reads the number stored above.
    t.slots()[i].key.store(key, std::memory_order_release);
  }

  static constexpr std::size_t initial_slots = 16;

  // Bucket 0 lives here: a pool of up to 16 chunks finds a chunk with one load, no pointer to
  // follow and no arithmetic (callgrind of an alloc/free loop: 20 instructions fewer a pair).
  std::atomic<char*> first_[first_bucket] = {};
  std::atomic<std::atomic<char*>*> buckets_[bucket_count] = {}; // [0] unused
  std::atomic<table*> table_{nullptr};
  std::atomic<std::uint32_t> count_{0};
};

} // namespace detail
} // namespace MEMKIT_ABI
} // namespace memkit
