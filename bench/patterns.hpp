// bench/patterns.hpp: the allocation patterns every variant runs, each written once (STYLE.md
// rule 9), and the adapters that give memkit resources the variant interface.
#pragma once

#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

// A variant adapts one allocator to the patterns. It is default-constructible and provides
//   void* allocate();               // one block of block_size bytes aligned to block_alignment
//   void deallocate(void* p);       // returns one block (AllocFree patterns)
//   void reset(std::span<void*> b); // frees every live block `b` at once (Alloc pattern)
// The adapter holds the allocator by value and calls it directly, so the compiler sees exactly
// what a user's code would see.

namespace memkit::bench {

/// The request every pattern makes: a small node, as in a list or tree (the workloads of
/// seeds 001, 002 and 004), with the alignment malloc and std::pmr give by default.
inline constexpr std::size_t block_size = 32;
inline constexpr std::size_t block_alignment = alignof(std::max_align_t);

/// Blocks live at once, the workload: 31 KiB of payload, about one L1 data cache (32-48
/// KiB), so a variant's per-block overhead shows up as cache misses.
inline constexpr std::size_t live_blocks = 1000;

/// Seed of the shuffled free order; fixed so every run and every variant frees in the same order.
inline constexpr std::uint32_t shuffle_seed = 20240601;

enum class free_order { lifo, fifo, shuffled };

/// \returns the indices of the live blocks in the order `order` frees them.
inline std::vector<std::size_t> make_free_order(free_order order) {
  std::vector<std::size_t> seq(live_blocks);
  for (std::size_t i = 0; i < live_blocks; ++i) {
    seq[i] = order == free_order::lifo ? live_blocks - 1 - i : i;
  }
  if (order == free_order::shuffled) {
    // Fisher-Yates over mt19937, whose output the standard fixes: std::shuffle's is unspecified,
    // so it would give each standard library a different order.
    std::mt19937 rng(shuffle_seed);
    for (std::size_t i = live_blocks - 1; i > 0; --i) {
      std::swap(seq[i], seq[rng() % (i + 1)]);
    }
  }
  return seq;
}

/// \returns the bytes the C heap has handed out. Every variant draws its memory from malloc in the
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
template <class Variant>
void fill(Variant& v, std::span<void*> blocks) {
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    void* p = v.allocate();
    *static_cast<unsigned char*>(p) = static_cast<unsigned char>(i);
    blocks[i] = p;
  }
  benchmark::ClobberMemory();
}

template <class Variant>
void drain(Variant& v, std::span<void* const> blocks, std::span<const std::size_t> order) {
  for (const std::size_t i : order) {
    v.deallocate(blocks[i]);
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
template <class Variant>
void alloc_free(benchmark::State& state, free_order order) {
  const std::vector<std::size_t> seq = make_free_order(order);
  std::vector<void*> blocks(live_blocks);
  benchmark::DoNotOptimize(blocks.data());
  const std::size_t heap_before = heap_in_use();
  Variant v;
  // One untimed round brings every variant to its steady state (chunks obtained, caches filled)
  // and measures the footprint at its peak.
  fill(v, std::span(blocks));
  const auto heap_growth = static_cast<std::ptrdiff_t>(heap_in_use() - heap_before);
  drain(v, std::span(blocks), std::span(seq));
  for (auto _ : state) {
    fill(v, std::span(blocks));
    drain(v, std::span(blocks), std::span(seq));
  }
  report(state, heap_growth);
}

/// Alloc pattern: allocate `live_blocks` blocks, then free them all at once with `reset`.
/// One item is one allocation plus its share of the reset.
template <class Variant>
void alloc_reset(benchmark::State& state) {
  std::vector<void*> blocks(live_blocks);
  benchmark::DoNotOptimize(blocks.data());
  const std::size_t heap_before = heap_in_use();
  Variant v;
  fill(v, std::span(blocks));
  const auto heap_growth = static_cast<std::ptrdiff_t>(heap_in_use() - heap_before);
  v.reset(std::span(blocks));
  for (auto _ : state) {
    fill(v, std::span(blocks));
    v.reset(std::span(blocks));
    benchmark::ClobberMemory();
  }
  report(state, heap_growth);
}

inline std::string benchmark_name(const char* variant, const char* pattern) {
  return std::string("BM_") + variant + "_" + pattern;
}

/// Registers `BM_<variant>_AllocFree` (LIFO) and, unless `lifo_only`, `..._AllocFreeFifo` and
/// `..._AllocFreeShuffled`.
template <class Variant>
bool register_alloc_free(const char* variant, bool lifo_only = false) {
  benchmark::RegisterBenchmark(benchmark_name(variant, "AllocFree").c_str(), alloc_free<Variant>,
                               free_order::lifo);
  if (!lifo_only) {
    benchmark::RegisterBenchmark(benchmark_name(variant, "AllocFreeFifo").c_str(),
                                 alloc_free<Variant>, free_order::fifo);
    benchmark::RegisterBenchmark(benchmark_name(variant, "AllocFreeShuffled").c_str(),
                                 alloc_free<Variant>, free_order::shuffled);
  }
  return true;
}

/// Registers `BM_<variant>_Alloc`.
template <class Variant>
bool register_alloc(const char* variant) {
  benchmark::RegisterBenchmark(benchmark_name(variant, "Alloc").c_str(), alloc_reset<Variant>);
  return true;
}

/// A memkit resource as a variant: blocks through its public allocate/deallocate, the calls a user
/// makes. `Resource` is built in place from `args` (memkit resources cannot move).
template <class Resource>
class resource_variant {
public:
  template <class... Args>
  explicit resource_variant(Args&&... args) : r_(std::forward<Args>(args)...) {}

  void* allocate() { return r_.allocate(block_size, block_alignment); }
  void deallocate(void* p) noexcept { r_.deallocate(p, block_size, block_alignment); }
  void reset(std::span<void*>) noexcept { r_.reset(); }

private:
  Resource r_;
};

} // namespace memkit::bench
