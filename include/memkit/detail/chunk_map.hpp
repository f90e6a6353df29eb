// SPDX-License-Identifier: BSL-1.0
// memkit/detail/chunk_map.hpp: which chunk an address lies in, in O(1), readable by every thread
// while one writer adds and removes chunks.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>
#include <type_traits>
#include <utility>

#include "../config.hpp"
#include "base/align.hpp"
#include "base/assert.hpp"

namespace memkit {
inline namespace MEMKIT_ABI {
namespace detail {

/// Whether every block `U` hands out for a chunk map's nodes (below a chunk's alignment) reads as
/// zeros, as the OS's fresh pages do: `U::hands_out_zeroed`, true for the global replacement's
/// upstream, which maps each such block on its own. The map then writes no node whole to zero it,
/// and a node's pages become resident only where entries are recorded.
template <class U, class = void>
struct hands_out_zeroed : std::false_type {};
template <class U>
struct hands_out_zeroed<U, std::enable_if_t<U::hands_out_zeroed>> : std::true_type {};

/// A radix tree over the address space in windows of 2^WindowShift bytes (the chunk alignment of
/// the resource that uses it), mapping each window to the base of the chunk covering it: a
/// pagemap like snmalloc's (src/snmalloc/backend_helpers/pagemap.h) and tcmalloc's, so a pointer
/// the resource never handed out is recognised without reading memory at the pointer (a foreign
/// pointer's chunk header may be unmapped).
///
/// Three levels cover the 48-bit virtual addresses of x86-64 (4-level paging) and AArch64; a chunk
/// above 2^48 cannot be recorded (`insert` fails) and is given back by the caller. Nodes come from
/// the upstream passed to `insert` and go back only in `release`, so a reader never follows a
/// pointer into freed memory while the map lives.
///
/// Memory model: one writer at a time (`insert`, `erase`, `release`: the owner's lock), any number
/// of concurrent readers (`find`). A node is fully zeroed (by the map, or by an upstream that
/// hands_out_zeroed) before the release store that links it, and `find` follows every link with
/// acquire, so a reader sees either no node or a zeroed one. An
/// entry is published with release after the chunk's header is written, so a reader that finds it
/// also sees the header.
template <unsigned WindowShift>
class chunk_map {
  static constexpr unsigned address_bits = 48;
  static constexpr unsigned key_bits = address_bits - WindowShift;
  static constexpr unsigned leaf_bits = key_bits / 3;
  static constexpr unsigned mid_bits = (key_bits - leaf_bits) / 2;
  static constexpr unsigned root_bits = key_bits - leaf_bits - mid_bits;

  template <class T, unsigned Bits>
  struct node {
    std::atomic<T> slot[std::size_t{1} << Bits];
  };
  using leaf = node<void*, leaf_bits>;
  using mid = node<leaf*, mid_bits>;
  using root = node<mid*, root_bits>;

public:
  chunk_map() noexcept = default;
  chunk_map(const chunk_map&) = delete;
  chunk_map& operator=(const chunk_map&) = delete;
  ~chunk_map() { MEMKIT_ASSERT_INTERNAL(root_.load(std::memory_order_relaxed) == nullptr); }

  /// \returns the base recorded for the window holding `p`, or null. Lock-free; any thread.
  void* find(const void* p) const noexcept {
    const std::uintptr_t key = address(p) >> WindowShift;
    if ((key >> key_bits) != 0) {
      return nullptr;
    }
    const root* r = root_.load(std::memory_order_acquire);
    if (r == nullptr) {
      return nullptr;
    }
    const mid* m = r->slot[root_index(key)].load(std::memory_order_acquire);
    if (m == nullptr) {
      return nullptr;
    }
    const leaf* l = m->slot[mid_index(key)].load(std::memory_order_acquire);
    if (l == nullptr) {
      return nullptr;
    }
    return l->slot[leaf_index(key)].load(std::memory_order_acquire);
  }

  /// \effects records `base` for every window of `[base, base + bytes)`; \returns false, recording
  /// nothing new that matters (some nodes may have been added), if a node could not be obtained
  /// from `upstream` or the range lies above 2^48. The writer only.
  /// \requires `base` is window-aligned, `bytes > 0`, the windows are not recorded.
  template <class Upstream>
  bool insert(Upstream& upstream, void* base, std::size_t bytes) noexcept {
    return record(upstream, address(base) >> WindowShift,
                  (address(base) + bytes - 1) >> WindowShift, base);
  }

  /// \effects makes the nodes that `extend(upstream, base, bytes, new_bytes)` needs, recording
  /// nothing: once this succeeded, that extend cannot fail. \returns insert's answer. The writer
  /// only.
  template <class Upstream>
  bool reserve(Upstream& upstream, void* base, std::size_t bytes, std::size_t new_bytes) noexcept {
    const auto [first, last] = extension(base, bytes, new_bytes);
    return last < first || make_leaves(upstream, first, last);
  }

  /// \effects records `base` for every window of `[base, base + new_bytes)` that
  /// `[base, base + bytes)`, recorded, does not cover: a range grown where it lies. \returns
  /// insert's answer. The writer only. \requires `bytes < new_bytes`; those windows are not
  /// recorded.
  template <class Upstream>
  bool extend(Upstream& upstream, void* base, std::size_t bytes, std::size_t new_bytes) noexcept {
    const auto [first, last] = extension(base, bytes, new_bytes);
    return last < first || record(upstream, first, last, base);
  }

  /// \effects forgets the windows of `[base, base + bytes)`. The writer only.
  void erase(const void* base, std::size_t bytes) noexcept {
    const std::uintptr_t first = address(base) >> WindowShift;
    const std::uintptr_t last = (address(base) + bytes - 1) >> WindowShift;
    root* r = root_.load(std::memory_order_relaxed);
    for (std::uintptr_t key = first; key <= last && r != nullptr;) {
      mid* m = r->slot[root_index(key)].load(std::memory_order_relaxed);
      leaf* l = m != nullptr ? m->slot[mid_index(key)].load(std::memory_order_relaxed) : nullptr;
      const std::uintptr_t end = run_end(key, last);
      if (l == nullptr) {
        key = end;
        continue;
      }
      for (; key != end; ++key) {
        l->slot[leaf_index(key)].store(nullptr, std::memory_order_release);
      }
    }
  }

  /// \effects returns every node to `upstream`; the map is empty.
  /// \requires no reader runs concurrently (the resource's release() is called at quiescence).
  template <class Upstream>
  void release(Upstream& upstream) noexcept {
    root* r = root_.exchange(nullptr, std::memory_order_relaxed);
    if (r == nullptr) {
      return;
    }
    for (auto& ms : r->slot) {
      if (mid* m = ms.load(std::memory_order_relaxed); m != nullptr) {
        for (auto& ls : m->slot) {
          if (leaf* l = ls.load(std::memory_order_relaxed); l != nullptr) {
            upstream.deallocate(l, sizeof(leaf), alignof(leaf));
          }
        }
        upstream.deallocate(m, sizeof(mid), alignof(mid));
      }
    }
    upstream.deallocate(r, sizeof(root), alignof(root));
  }

  /// Bytes of one node of each level, for callers that bound their memory.
  static constexpr std::size_t node_bytes = sizeof(root) + sizeof(mid) + sizeof(leaf);

private:
  // The first and last window extend records.
  static std::pair<std::uintptr_t, std::uintptr_t> extension(const void* base, std::size_t bytes,
                                                             std::size_t new_bytes) noexcept {
    return {((address(base) + bytes - 1) >> WindowShift) + 1,
            (address(base) + new_bytes - 1) >> WindowShift};
  }

  // Makes the leaves of the windows `first` to `last`; insert's answer.
  template <class Upstream>
  bool make_leaves(Upstream& upstream, std::uintptr_t first, std::uintptr_t last) noexcept {
    if ((last >> key_bits) != 0 || last < first) {
      return false;
    }
    // A leaf at a time: a large region's windows are a run of one or two leaves' slots.
    for (std::uintptr_t key = first; key <= last; key = next_leaf(key)) {
      if (leaf_for(upstream, key) == nullptr) {
        return false;
      }
    }
    return true;
  }

  // Records `value` for the windows `first` to `last`; insert's answer.
  template <class Upstream>
  bool record(Upstream& upstream, std::uintptr_t first, std::uintptr_t last, void* value) noexcept {
    if (!make_leaves(upstream, first, last)) {
      return false;
    }
    for (std::uintptr_t key = first; key <= last;) {
      leaf* const l = leaf_for(upstream, key);
      for (const std::uintptr_t end = run_end(key, last); key != end; ++key) {
        l->slot[leaf_index(key)].store(value, std::memory_order_release);
      }
    }
    return true;
  }

  static std::size_t root_index(std::uintptr_t key) noexcept {
    return static_cast<std::size_t>(key >> (mid_bits + leaf_bits));
  }
  static std::size_t mid_index(std::uintptr_t key) noexcept {
    return static_cast<std::size_t>(key >> leaf_bits) & ((std::size_t{1} << mid_bits) - 1);
  }
  static std::size_t leaf_index(std::uintptr_t key) noexcept {
    return static_cast<std::size_t>(key) & ((std::size_t{1} << leaf_bits) - 1);
  }
  // The first key of the leaf after `key`'s.
  static std::uintptr_t next_leaf(std::uintptr_t key) noexcept {
    return (key | ((std::uintptr_t{1} << leaf_bits) - 1)) + 1;
  }
  // The end of the run of keys from `key` to `last` that share `key`'s leaf.
  static std::uintptr_t run_end(std::uintptr_t key, std::uintptr_t last) noexcept {
    const std::uintptr_t next = next_leaf(key);
    return last < next ? last + 1 : next;
  }

  template <class Node, class Upstream>
  static Node* make(Upstream& upstream) noexcept {
    void* p = upstream.try_allocate(sizeof(Node), alignof(Node));
    if (p == nullptr) {
      return nullptr;
    }
    Node* n = ::new (p) Node;
    if constexpr (!hands_out_zeroed<Upstream>::value) {
      for (auto& s : n->slot) {
        s.store(nullptr, std::memory_order_relaxed);
      }
    }
    return n;
  }

  // Walks to the leaf of `key`, adding missing nodes; null if one could not be obtained.
  template <class Upstream>
  leaf* leaf_for(Upstream& upstream, std::uintptr_t key) noexcept {
    root* r = root_.load(std::memory_order_relaxed);
    if (r == nullptr) {
      if ((r = make<root>(upstream)) == nullptr) {
        return nullptr;
      }
      root_.store(r, std::memory_order_release);
    }
    auto& ms = r->slot[root_index(key)];
    mid* m = ms.load(std::memory_order_relaxed);
    if (m == nullptr) {
      if ((m = make<mid>(upstream)) == nullptr) {
        return nullptr;
      }
      ms.store(m, std::memory_order_release);
    }
    auto& ls = m->slot[mid_index(key)];
    leaf* l = ls.load(std::memory_order_relaxed);
    if (l == nullptr) {
      if ((l = make<leaf>(upstream)) == nullptr) {
        return nullptr;
      }
      ls.store(l, std::memory_order_release);
    }
    return l;
  }

  std::atomic<root*> root_{nullptr};
};

} // namespace detail
} // namespace MEMKIT_ABI
} // namespace memkit
