// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/core/hash.hpp: the result hashes that prove every variant of a workload
// computed the same thing (a mismatch fails the run).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace memkit::bench {

/// FNV-1a, 64-bit: the hash the json-tree request hashes its labels and values with
/// (docs/background.md#json-tree).
class fnv1a {
public:
  void add(const void* data, std::size_t n) noexcept {
    const auto* p = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < n; ++i) {
      h_ = (h_ ^ p[i]) * 0x100000001b3ULL;
    }
  }
  void add(std::uint64_t v) noexcept { add(&v, sizeof v); }
  /// One FNV-1a step over a whole value instead of over its bytes, as for a JSON number: the
  /// byte loop's chain of dependent multiplies would otherwise be a fixed cost as large as the
  /// allocations the workload measures.
  void add_value(std::uint64_t v) noexcept { h_ = (h_ ^ v) * 0x100000001b3ULL; }
  std::uint64_t value() const noexcept { return h_; }

private:
  std::uint64_t h_ = 0xcbf29ce484222325ULL;
};

/// A word-at-a-time hash for the workloads whose hash only proves the contents (FNV-1a is fixed
/// for json-tree only): FNV-1a goes byte by byte, a dependent multiply per byte, which cost about
/// a third of an iteration of vector-strings and so hid the allocators' differences.
///
/// Each word is multiplied off the dependency chain and added to a rotated accumulator, so the
/// chain is a rotate and an add per word (about 2 cycles), and one full mix per add() call folds
/// the accumulator into the hash. Mixing every word (a multiply, xor and shift in the chain, about
/// 6 cycles a word) was still 20 % of a vector-strings-native iteration on a memkit arena
/// (callgrind), and by the same count about 2 ms of a huge-pages iteration (a million words).
class word_hash {
public:
  void add(const void* data, std::size_t n) noexcept {
    const auto* p = static_cast<const unsigned char*>(data);
    std::uint64_t a = n; // the length, so "a" and "a\0" differ
    for (; n >= sizeof(std::uint64_t); n -= sizeof(std::uint64_t), p += sizeof(std::uint64_t)) {
      std::uint64_t w;
      std::memcpy(&w, p, sizeof w);
      a = step(a, w);
    }
    std::uint64_t tail = 0;
    std::memcpy(&tail, p, n);
    mix(step(a, tail));
  }
  std::uint64_t value() const noexcept { return h_; }

private:
  // The golden-ratio constant of splitmix64: odd, so the multiply loses no bit of the word.
  static constexpr std::uint64_t golden = 0x9e3779b97f4a7c15ULL;

  static std::uint64_t step(std::uint64_t a, std::uint64_t w) noexcept {
    return ((a << 23) | (a >> 41)) + w * golden;
  }
  void mix(std::uint64_t w) noexcept {
    h_ = (h_ ^ w) * golden;
    h_ ^= h_ >> 29;
  }

  std::uint64_t h_ = 0xcbf29ce484222325ULL;
};

} // namespace memkit::bench
