// SPDX-License-Identifier: BSL-1.0
// common/memkit_bench/random.hpp: seeded randomness and the free orders built from it, shared by
// memkit-bench's workloads and the micro benchmarks in bench/ (bench/patterns.hpp), so that both
// free blocks in the same LIFO, FIFO and shuffled orders. It lives beside both, in neither: each
// links the interface target memkit_bench_common (common/CMakeLists.txt). Glossary (policy,
// variant, workload, pattern): docs/BENCHMARKS.md.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <string_view>
#include <utility>
#include <vector>

namespace memkit::bench {

/// splitmix64: a tiny deterministic generator, the same sequence on every platform and standard
/// library (std::shuffle's and the distributions' results are unspecified).
class rng {
public:
  explicit rng(std::uint64_t seed) noexcept : s_(seed) {}
  std::uint64_t next() noexcept {
    std::uint64_t z = (s_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  /// \returns a value in [lo, hi], by Lemire's multiply-shift rather than a division: a
  /// workload's generator must cost little next to the allocations it drives.
  int between(int lo, int hi) noexcept {
    const std::uint64_t range = static_cast<std::uint64_t>(hi - lo) + 1;
    return lo + static_cast<int>(((next() >> 32) * range) >> 32);
  }

private:
  std::uint64_t s_;
};

/// The seed of every shuffled free order, fixed so every run, every variant and both instruments
/// free in the same order.
inline constexpr std::uint64_t shuffle_seed = 0x9a1e5;

/// Shuffles `v` in place (Fisher-Yates over `g`): the same permutation everywhere for one seed.
template <class T>
void shuffle(std::vector<T>& v, rng& g) noexcept {
  for (std::size_t i = v.size(); i > 1; --i) {
    std::swap(v[i - 1], v[g.next() % i]);
  }
}

/// The order in which a pattern frees the blocks it allocated, first allocated = index 0.
enum class free_order { lifo, fifo, shuffled };

/// Every free order, with its part of a workload name (pairs-lifo-64) and its description.
struct free_order_info {
  free_order order;
  std::string_view name;
  std::string_view description;
};
inline constexpr free_order_info free_orders[] = {
    {free_order::lifo, "lifo", "newest first (LIFO)"},
    {free_order::fifo, "fifo", "oldest first (FIFO)"},
    {free_order::shuffled, "shuffled", "in a shuffled order"}};

/// \returns the indices of `n` blocks in the order `o` frees them: newest first (LIFO), oldest
/// first (FIFO), or shuffled with `shuffle_seed`. Computed before any timing.
inline std::vector<std::uint32_t> make_free_order(free_order o, std::size_t n) {
  std::vector<std::uint32_t> v(n);
  std::iota(v.begin(), v.end(), 0u);
  if (o == free_order::lifo) {
    std::reverse(v.begin(), v.end());
  } else if (o == free_order::shuffled) {
    rng g(shuffle_seed);
    shuffle(v, g);
  }
  return v;
}

} // namespace memkit::bench
