// SPDX-License-Identifier: BSL-1.0
// bench/thread_cached_bench.cpp: the thread-caching resources against malloc and
// std::pmr::synchronized_pool_resource, each shared by 1 and 2 threads (docs/threads.md).
//
// Patterns, one item being one allocate + deallocate pair:
// - MtLocal: each thread allocates `batch` blocks of mixed sizes (16-512 B) and frees them itself.
// - MtLocalFixed: the same with one size, 32 B, where the fixed-size form applies.
// - MtCrossThread: each thread allocates a batch and hands it to the next thread in a ring, which
//   frees it: with 2 threads every free is remote (with 1 it is the local pattern plus the
//   hand-over).

#include <memkit/thread_cached.hpp>

#include <benchmark/benchmark.h>

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <memory_resource>
#include <thread>
#include <vector>

#include "patterns.hpp"

namespace memkit::bench {
namespace {

/// Blocks a thread holds at once: as `live_blocks` in patterns.hpp, about one L1 cache of payload
/// at the mixed sizes' mean of 264 B would be too much, so a tenth of it per thread.
constexpr std::size_t batch = 100;
constexpr int max_threads = 2;

/// The size of the i-th block: a fixed, spread sequence over 16-512 B.
constexpr std::size_t mixed_size(std::size_t i) noexcept { return 16 + (i * 37) % 497; }

struct malloc_variant {
  static void* allocate(std::size_t n) noexcept { return std::malloc(n); }
  static void deallocate(void* p, std::size_t) noexcept { std::free(p); }
};

struct pmr_sync_pool_variant {
  static std::pmr::synchronized_pool_resource& r() {
    static std::pmr::synchronized_pool_resource pool;
    return pool;
  }
  static void* allocate(std::size_t n) { return r().allocate(n, block_alignment); }
  static void deallocate(void* p, std::size_t n) { r().deallocate(p, n, block_alignment); }
};

struct thread_cached_variant {
  static thread_cached<>& r() {
    static thread_cached<> tc;
    return tc;
  }
  static void* allocate(std::size_t n) { return r().allocate(n, block_alignment); }
  static void deallocate(void* p, std::size_t n) noexcept { r().deallocate(p, n, block_alignment); }
};

struct thread_cached_pool_variant {
  static thread_cached_pool<>& r() {
    static thread_cached_pool<> tc(block_size, block_alignment);
    return tc;
  }
  static void* allocate(std::size_t n) { return r().allocate(n, block_alignment); }
  static void deallocate(void* p, std::size_t n) noexcept { r().deallocate(p, n, block_alignment); }
};

template <class Variant>
void fill(void** blocks, bool fixed) {
  for (std::size_t i = 0; i < batch; ++i) {
    const std::size_t n = fixed ? block_size : mixed_size(i);
    auto* p = static_cast<unsigned char*>(Variant::allocate(n));
    *p = static_cast<unsigned char>(i);
    blocks[i] = p;
  }
  benchmark::ClobberMemory();
}

template <class Variant>
void release(void* const* blocks, bool fixed) {
  for (std::size_t i = 0; i < batch; ++i) {
    Variant::deallocate(blocks[i], fixed ? block_size : mixed_size(i));
  }
  benchmark::ClobberMemory();
}

template <class Variant, bool Fixed>
void mt_local(benchmark::State& state) {
  std::vector<void*> blocks(batch);
  fill<Variant>(blocks.data(), Fixed); // warm the thread's cache outside the timed loop
  release<Variant>(blocks.data(), Fixed);
  for (auto _ : state) {
    fill<Variant>(blocks.data(), Fixed);
    release<Variant>(blocks.data(), Fixed);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * batch));
}

/// Batches in flight from one thread to the next: a single-producer single-consumer ring deep
/// enough that on a loaded machine a thread runs on while its receiver waits for a core (with a
/// ring of one batch, a run at load 10 on 2 cores measured the scheduler: 2 ms an iteration).
struct ring {
  static constexpr std::size_t depth = 256;
  struct slot {
    void* blocks[batch];
  };
  alignas(cache_line_size) std::atomic<std::size_t> head{0}; ///< next slot the receiver takes
  alignas(cache_line_size) std::atomic<std::size_t> tail{0}; ///< next slot the sender fills
  slot slots[depth];
};
ring rings[max_threads];

/// Frees every batch waiting in `r`.
template <class Variant>
void receive(ring& r) {
  const std::size_t tail = r.tail.load(std::memory_order_acquire);
  std::size_t head = r.head.load(std::memory_order_relaxed);
  for (; head != tail; ++head) {
    release<Variant>(r.slots[head % ring::depth].blocks, false);
  }
  r.head.store(head, std::memory_order_release);
}

template <class Variant>
void mt_cross_thread(benchmark::State& state) {
  const auto t = static_cast<std::size_t>(state.thread_index());
  const auto n = static_cast<std::size_t>(state.threads());
  ring& in = rings[t];
  ring& out = rings[(t + 1) % n];
  std::vector<void*> own(batch);
  std::size_t sent = 0;
  for (auto _ : state) {
    receive<Variant>(in);
    const std::size_t tail = out.tail.load(std::memory_order_relaxed);
    if (n > 1 && tail - out.head.load(std::memory_order_acquire) == ring::depth) {
      // The receiver is not running (descheduled, or done with its loop and waiting for this
      // thread at the end barrier, where it would never drain): free this batch here.
      fill<Variant>(own.data(), false);
      release<Variant>(own.data(), false);
      continue;
    }
    fill<Variant>(out.slots[tail % ring::depth].blocks, false);
    out.tail.store(tail + 1, std::memory_order_release);
    ++sent;
  }
  // After the loop every thread has sent all it will: take the rest, untimed.
  receive<Variant>(in);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * batch));
  state.counters["sent_share"] =
      benchmark::Counter(static_cast<double>(sent) / static_cast<double>(state.iterations()),
                         benchmark::Counter::kAvgThreads);
}

template <class Variant>
void register_variant(const char* name, bool fixed_too) {
  benchmark::RegisterBenchmark(benchmark_name(name, "MtLocal").c_str(), mt_local<Variant, false>)
      ->Threads(1)
      ->Threads(max_threads)
      ->UseRealTime();
  if (fixed_too) {
    benchmark::RegisterBenchmark(benchmark_name(name, "MtLocalFixed").c_str(),
                                 mt_local<Variant, true>)
        ->Threads(1)
        ->Threads(max_threads)
        ->UseRealTime();
  }
  benchmark::RegisterBenchmark(benchmark_name(name, "MtCrossThread").c_str(),
                               mt_cross_thread<Variant>)
      ->Threads(1)
      ->Threads(max_threads)
      ->UseRealTime();
}

const bool registered = [] {
  register_variant<malloc_variant>("Malloc", true);
  register_variant<pmr_sync_pool_variant>("PmrSyncPool", true);
  register_variant<thread_cached_variant>("ThreadCached", true);
  benchmark::RegisterBenchmark(benchmark_name("ThreadCachedPool", "MtLocalFixed").c_str(),
                               mt_local<thread_cached_pool_variant, true>)
      ->Threads(1)
      ->Threads(max_threads)
      ->UseRealTime();
  return true;
}();

} // namespace
} // namespace memkit::bench
