// SPDX-License-Identifier: BSL-1.0
// bench/concurrent_pool_bench.cpp: memkit::concurrent_pool shared by 1 and 2 threads, against the
// thread-safe fixed-size alternatives: memkit::synchronized<pool> (a std::mutex or a
// memkit::spin_mutex around each call), std::pmr::synchronized_pool_resource,
// boost::singleton_pool and malloc.
//
// `BM_<variant>_AllocFree/threads:N`: the AllocFree pattern of patterns.hpp (allocate live_blocks
// blocks, write a byte into each, free them newest first) run by N threads at once on one shared
// instance of the policy, so every allocate and free contends with the other thread's. Timed on
// the wall clock (UseRealTime); Google Benchmark sums the iterations and items of the threads, so
// Time is wall time per 1000 pairs of any thread and items_per_second is the total throughput. The
// heap each block costs is measured once, in the first (single-threaded) round, and reported
// beside the one-thread rates.

#include <boost/pool/singleton_pool.hpp>

#include <cstdlib>
#include <memory_resource>

#include <memkit/concurrent_pool.hpp>
#include <memkit/pool.hpp>
#include <memkit/spin_mutex.hpp>
#include <memkit/synchronized.hpp>

#include "patterns.hpp"

namespace memkit::bench {
namespace {

struct concurrent_pool_policy : resource_policy<concurrent_pool<>> {
  concurrent_pool_policy() : resource_policy(block_size, block_alignment) {}
};

/// Every call to a memkit::pool under one std::mutex: the baseline a lock-free pool must beat.
struct synchronized_pool_policy : resource_policy<synchronized<pool<>>> {
  synchronized_pool_policy() : resource_policy(block_size, block_alignment) {}
};

/// The same behind memkit's spin lock (docs/threads.md, "Which mutex").
struct synchronized_pool_spin_policy : resource_policy<synchronized<pool<>, spin_mutex>> {
  synchronized_pool_spin_policy() : resource_policy(block_size, block_alignment) {}
};

class pmr_sync_pool_policy {
public:
  void* allocate() { return r_.allocate(block_size, block_alignment); }
  void deallocate(void* p) noexcept { r_.deallocate(p, block_size, block_alignment); }

private:
  std::pmr::synchronized_pool_resource r_;
};

/// boost::singleton_pool with its default mutex: one process-wide pool per tag and size.
class boost_singleton_pool_policy {
  struct tag {};
  using pool = boost::singleton_pool<tag, block_size>;

public:
  void* allocate() { return pool::malloc(); }
  void deallocate(void* p) noexcept { pool::free(p); }
};

class malloc_policy {
public:
  void* allocate() { return std::malloc(block_size); }
  void deallocate(void* p) noexcept { std::free(p); }
};

template <class Policy>
void shared_alloc_free(benchmark::State& state) {
  // One instance per policy, shared by every thread of every run (initialization is
  // thread-safe); each run starts from the steady state the previous one left.
  static Policy v;
  const std::vector<std::uint32_t> seq = make_free_order(free_order::lifo);
  std::vector<void*> blocks(live_blocks);
  benchmark::DoNotOptimize(blocks.data());
  // The first call of each policy is single-threaded (Threads(1) runs first) and meets the
  // policy new: its first round measures the footprint.
  static const std::ptrdiff_t heap_growth = [&] {
    const std::size_t heap_before = heap_in_use();
    fill(v, std::span(blocks));
    const auto growth = static_cast<std::ptrdiff_t>(heap_in_use() - heap_before);
    drain(v, std::span(blocks), std::span(seq));
    return growth;
  }();
  fill(v, std::span(blocks));
  drain(v, std::span(blocks), std::span(seq));
  for (auto _ : state) {
    fill(v, std::span(blocks));
    drain(v, std::span(blocks), std::span(seq));
  }
  if (state.threads() == 1) {
    report(state, heap_growth);
  } else {
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * live_blocks);
  }
}

template <class Policy>
void register_shared(const char* variant) {
  benchmark::RegisterBenchmark(benchmark_name(variant, "AllocFree").c_str(),
                               shared_alloc_free<Policy>)
      ->Threads(1)
      ->Threads(2)
      ->UseRealTime();
}

const bool registered = [] {
  register_shared<concurrent_pool_policy>("ConcurrentPool");
  register_shared<synchronized_pool_policy>("SynchronizedPool");
  register_shared<synchronized_pool_spin_policy>("SynchronizedPoolSpin");
  register_shared<pmr_sync_pool_policy>("PmrSyncPool");
  register_shared<boost_singleton_pool_policy>("BoostSingletonPool");
  register_shared<malloc_policy>("Malloc");
  return true;
}();

} // namespace
} // namespace memkit::bench
