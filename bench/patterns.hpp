// SPDX-License-Identifier: BSL-1.0
// bench/patterns.hpp: the allocation patterns every policy runs, each written once (STYLE.md
// rule 9), and the adapter that gives a memkit resource the policy interface.
//
// The words, as docs/BENCHMARKS.md defines them for bench/ and memkit-bench alike: a *policy* is a
// class that adapts one allocator to the code that drives it; a *variant* is the name its results
// carry (here the middle of BM_<Variant>_<Pattern>: Pool, Malloc, PmrUnsyncPool); a *pattern* is
// the sequence of calls timed (AllocFree frees in LIFO order, AllocFreeFifo, AllocFreeShuffled,
// Alloc then one reset; List1M, MapInsertErase, ...); a *workload* is a whole program fragment
// (memkit-bench's json-tree, list-1m, pairs-lifo-64). The free orders and their seeded shuffle are
// memkit-bench's too (common/memkit_bench/random.hpp), so both free blocks in the same order.
#pragma once

#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "memkit_bench/random.hpp"

// A policy adapts one allocator to the patterns. It is default-constructible and provides
//   void* allocate();               // one block of block_size bytes aligned to block_alignment
//   void deallocate(void* p);       // returns one block (AllocFree patterns)
//   void reset(std::span<void*> b); // frees every live block `b` at once (Alloc pattern)
// The adapter holds the allocator by value and calls it directly, so the compiler sees exactly
// what a user's code would see.

namespace memkit::bench {

/// The request every pattern makes: a small node, as in a list or tree (docs/background.md's list
/// of a million ints, three-run container benchmark and node-list benchmark), with the alignment
/// malloc and std::pmr give by default.
inline constexpr std::size_t block_size = 32;
inline constexpr std::size_t block_alignment = alignof(std::max_align_t);

/// Blocks live at once: 31 KiB of payload, about one L1 data cache (32-48
/// KiB), so a policy's per-block overhead shows up as cache misses.
inline constexpr std::size_t live_blocks = 1000;

/// \returns the indices of the live blocks in the order `order` frees them.
inline std::vector<std::uint32_t> make_free_order(free_order order) {
  return make_free_order(order, live_blocks);
}

/// \returns the bytes the C heap has handed out. Every policy draws its memory from malloc in the
/// end (operator new, std::pmr::new_delete_resource, boost's and foonathan's default allocators,
/// memkit::malloc_resource), so one measure compares them all, malloc's own headers included.
inline std::size_t heap_in_use() {
#if defined(__GLIBC__)
  const struct mallinfo2 info = mallinfo2();
  return info.uordblks + info.hblkhd;
#else
  return 0;
#endif
}

/// Allocates one block per slot of `blocks` and writes a byte into each, as a user would, so a
/// strategy gains nothing from handing out memory it never touches itself.
template <class Policy>
void fill(Policy& policy, std::span<void*> blocks) {
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    void* p = policy.allocate();
    *static_cast<unsigned char*>(p) = static_cast<unsigned char>(i);
    blocks[i] = p;
  }
  benchmark::ClobberMemory();
}

template <class Policy>
void drain(Policy& policy, std::span<void* const> blocks, std::span<const std::uint32_t> order) {
  for (const std::uint32_t i : order) {
    policy.deallocate(blocks[i]);
  }
  benchmark::ClobberMemory();
}

/// Reports rates per block and the heap bytes each live block cost (`heap_per_block`, measured
/// with every block live, the allocator's own state and chunks included).
inline void report(benchmark::State& state, std::ptrdiff_t heap_growth) {
  const auto blocks = static_cast<std::int64_t>(state.iterations()) * live_blocks;
  state.SetItemsProcessed(blocks);
  state.SetBytesProcessed(blocks * static_cast<std::int64_t>(block_size));
  state.counters["heap_per_block"] =
      static_cast<double>(heap_growth) / static_cast<double>(live_blocks);
}

/// AllocFree patterns: allocate `live_blocks` blocks, then free them all in `order`.
/// One item is one allocate + deallocate pair.
template <class Policy>
void alloc_free(benchmark::State& state, free_order order) {
  const std::vector<std::uint32_t> seq = make_free_order(order);
  std::vector<void*> blocks(live_blocks);
  benchmark::DoNotOptimize(blocks.data());
  const std::size_t heap_before = heap_in_use();
  Policy policy;
  // One untimed round brings every policy to its steady state (chunks obtained, caches filled)
  // and measures the footprint at its peak.
  fill(policy, std::span(blocks));
  const auto heap_growth = static_cast<std::ptrdiff_t>(heap_in_use() - heap_before);
  drain(policy, std::span(blocks), std::span(seq));
  for (auto _ : state) {
    fill(policy, std::span(blocks));
    drain(policy, std::span(blocks), std::span(seq));
  }
  report(state, heap_growth);
}

/// Alloc pattern: allocate `live_blocks` blocks, then free them all at once with `reset`.
/// One item is one allocation plus its share of the reset.
template <class Policy>
void alloc_reset(benchmark::State& state) {
  std::vector<void*> blocks(live_blocks);
  benchmark::DoNotOptimize(blocks.data());
  const std::size_t heap_before = heap_in_use();
  Policy policy;
  fill(policy, std::span(blocks));
  const auto heap_growth = static_cast<std::ptrdiff_t>(heap_in_use() - heap_before);
  policy.reset(std::span(blocks));
  for (auto _ : state) {
    fill(policy, std::span(blocks));
    policy.reset(std::span(blocks));
    benchmark::ClobberMemory();
  }
  report(state, heap_growth);
}

inline std::string benchmark_name(const char* variant, const char* pattern) {
  return std::string("BM_") + variant + "_" + pattern;
}

/// Registers `BM_<variant>_AllocFree` (LIFO) and, unless `lifo_only`, `..._AllocFreeFifo` and
/// `..._AllocFreeShuffled`.
template <class Policy>
bool register_alloc_free(const char* variant, bool lifo_only = false) {
  benchmark::RegisterBenchmark(benchmark_name(variant, "AllocFree").c_str(), alloc_free<Policy>,
                               free_order::lifo);
  if (!lifo_only) {
    benchmark::RegisterBenchmark(benchmark_name(variant, "AllocFreeFifo").c_str(),
                                 alloc_free<Policy>, free_order::fifo);
    benchmark::RegisterBenchmark(benchmark_name(variant, "AllocFreeShuffled").c_str(),
                                 alloc_free<Policy>, free_order::shuffled);
  }
  return true;
}

/// Registers `BM_<variant>_Alloc`.
template <class Policy>
bool register_alloc(const char* variant) {
  benchmark::RegisterBenchmark(benchmark_name(variant, "Alloc").c_str(), alloc_reset<Policy>);
  return true;
}

/// A memkit resource as a policy: blocks through its public allocate/deallocate, the calls a user
/// makes. `Resource` is built in place from `args` (memkit resources cannot move).
template <class Resource>
class resource_policy {
public:
  template <class... Args>
  explicit resource_policy(Args&&... args) : r_(std::forward<Args>(args)...) {}

  void* allocate() { return r_.allocate(block_size, block_alignment); }
  void deallocate(void* p) noexcept { r_.deallocate(p, block_size, block_alignment); }
  void reset(std::span<void*>) noexcept { r_.reset(); }

private:
  Resource r_;
};

} // namespace memkit::bench
