// SPDX-License-Identifier: BSL-1.0
// bench/containers_bench.cpp: standard containers on memkit allocators against the allocators a
// user would pick instead: List1M (a million ints in a list), MapInsertErase (the three-run
// container benchmark; MapTryEmplaceErase, the same with the algorithm libstdc++ gives
// std::allocator; MapInsertEraseHinted, the same nodes without the tree searches), List/N and
// ForwardList/N (the node-list benchmark); docs/background.md has each source. mimalloc is not
// linked into this binary, so its figure is not measured here.

#include <memkit/allocator.hpp>
#include <memkit/arena.hpp>
#include <memkit/array_pool.hpp>
#include <memkit/multipool.hpp>
#include <memkit/node_pool.hpp>

#include <boost/pool/pool_alloc.hpp>
#include <foonathan/memory/memory_pool.hpp>
#include <foonathan/memory/std_allocator.hpp>

#include <cstddef>
#include <cstdint>
#include <forward_list>
#include <list>
#include <map>
#include <memory>
#include <memory_resource>

#include "patterns.hpp"

namespace memkit::bench {
namespace {

// ---- the patterns' sizes -------------------------------------------------------------------

/// A million ints in a list: one million ints pushed into a std::list.
constexpr std::size_t list_1m = 1'000'000;
/// The three-run container benchmark: 10,000 inserts then 10,000 erases in a std::map, 100 times
/// per iteration.
constexpr std::size_t map_elements = 10'000;
constexpr int map_rounds = 100;

// ---- policies ------------------------------------------------------------------------------
// A policy is constructed with the node size and the most nodes live at once (which only the
// peers that need them, and array_pool, use), hands out `alloc<T>()` for a container and
// `recycle()`s its memory after each iteration, once the container is gone.

struct std_policy {
  std_policy(std::size_t, std::size_t) noexcept {}
  template <class T>
  std::allocator<T> alloc() noexcept {
    return {};
  }
  void recycle() noexcept {}
};

/// A monotonic buffer releases everything after each iteration, as its users do.
class pmr_monotonic_policy {
public:
  pmr_monotonic_policy(std::size_t, std::size_t) noexcept {}
  template <class T>
  std::pmr::polymorphic_allocator<T> alloc() noexcept {
    return &r_;
  }
  void recycle() noexcept { r_.release(); }

private:
  std::pmr::monotonic_buffer_resource r_;
};

class pmr_unsync_pool_policy {
public:
  pmr_unsync_pool_policy(std::size_t, std::size_t) noexcept {}
  template <class T>
  std::pmr::polymorphic_allocator<T> alloc() noexcept {
    return &r_;
  }
  void recycle() noexcept {}

private:
  std::pmr::unsynchronized_pool_resource r_;
};

/// Boost's allocator for node containers: a process-wide singleton pool per node size. The pools
/// outlive the policy, so once an earlier benchmark filled them heap_per_node reads 0.
struct boost_fast_pool_policy {
  boost_fast_pool_policy(std::size_t, std::size_t) noexcept {}
  template <class T>
  boost::fast_pool_allocator<T> alloc() noexcept {
    return {};
  }
  void recycle() noexcept {}
};

/// foonathan's node pool must be told the node size; its build-time generated node-size table is
/// not in Debian's package, so the size measured by `node_size_of` is passed in, and the first
/// block holds every node of an iteration.
class foonathan_pool_policy {
  using pool_type = foonathan::memory::memory_pool<foonathan::memory::node_pool>;

public:
  foonathan_pool_policy(std::size_t node_size, std::size_t nodes)
      : pool_(node_size, pool_type::min_block_size(node_size, nodes)) {}
  template <class T>
  foonathan::memory::std_allocator<T, pool_type> alloc() noexcept {
    return {pool_};
  }
  void recycle() noexcept {}

private:
  pool_type pool_;
};

/// A memkit resource kept across iterations, with `reset()` (or nothing) between them.
template <class Resource, bool Reset>
class memkit_policy {
public:
  template <class... Args>
  explicit memkit_policy(Args&&... args) : r_(std::forward<Args>(args)...) {}
  template <class T>
  memkit::allocator<T, Resource> alloc() noexcept {
    return r_;
  }
  void recycle() noexcept {
    if constexpr (Reset) {
      r_.reset();
    }
  }

protected:
  Resource r_;
};

/// memkit's pool for containers: node_pool learns the node size from the first node.
struct pool_policy : memkit_policy<node_pool<>, false> {
  pool_policy(std::size_t, std::size_t) noexcept {}
};
struct multipool_policy : memkit_policy<multipool<>, false> {
  multipool_policy(std::size_t, std::size_t) noexcept {}
};
/// array_pool has a fixed capacity, so it is told the node size and the nodes live at once.
struct array_pool_policy : memkit_policy<array_pool<>, false> {
  array_pool_policy(std::size_t node_size, std::size_t nodes) : memkit_policy(node_size, nodes) {}
};
/// An arena frees nothing until the container is gone, then rewinds and keeps its blocks.
struct arena_policy : memkit_policy<arena<>, true> {
  arena_policy(std::size_t, std::size_t) noexcept {}
};

// ---- node sizes ----------------------------------------------------------------------------

/// \returns the size of the nodes `Container<A>` allocates one at a time, as node_pool learns it;
/// the peers that need it (foonathan) and array_pool get it from here, outside the timed loop.
template <template <class> class Container, class Insert>
std::size_t node_size_of(Insert insert) {
  node_pool<> probe;
  Container<memkit::allocator<int, node_pool<>>> c(probe);
  insert(c);
  return probe.node_size();
}

template <class A>
using list_of = std::list<int, typename std::allocator_traits<A>::template rebind_alloc<int>>;
template <class A>
using forward_list_of =
    std::forward_list<int, typename std::allocator_traits<A>::template rebind_alloc<int>>;
template <class A>
using map_of =
    std::map<int, int, std::less<int>,
             typename std::allocator_traits<A>::template rebind_alloc<std::pair<const int, int>>>;

std::size_t list_node_size() {
  static const std::size_t size = node_size_of<list_of>([](auto& c) { c.push_back(0); });
  return size;
}
std::size_t forward_list_node_size() {
  static const std::size_t size = node_size_of<forward_list_of>([](auto& c) { c.push_front(0); });
  return size;
}
std::size_t map_node_size() {
  static const std::size_t size = node_size_of<map_of>([](auto& c) { c.emplace(0, 0); });
  return size;
}

/// Reports items (elements per iteration) and the heap bytes one live element cost, measured in
/// the untimed first round at its peak.
void report(benchmark::State& state, std::size_t items, std::ptrdiff_t heap_growth,
            std::size_t live) {
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(items));
  state.counters["heap_per_node"] = static_cast<double>(heap_growth) / static_cast<double>(live);
}

// ---- the patterns --------------------------------------------------------------------------

/// A million ints in a list: push 1,000,000 ints into a std::list, sum them, destroy the
/// list.
template <class Policy>
void list_1m_bench(benchmark::State& state) {
  const std::size_t heap_before = heap_in_use();
  Policy policy(list_node_size(), list_1m);
  std::ptrdiff_t heap_growth = 0;
  auto round = [&policy, &heap_growth, heap_before](bool measure) {
    {
      list_of<decltype(policy.template alloc<int>())> l(policy.template alloc<int>());
      for (std::size_t i = 0; i < list_1m; ++i) {
        l.push_back(static_cast<int>(i));
      }
      long long sum = 0;
      for (const int x : l) {
        sum += x;
      }
      benchmark::DoNotOptimize(sum);
      if (measure) {
        heap_growth = static_cast<std::ptrdiff_t>(heap_in_use() - heap_before);
      }
    }
    policy.recycle();
  };
  round(true);
  for (auto _ : state) {
    round(false);
  }
  report(state, list_1m, heap_growth, list_1m);
}

/// How map_insert_erase_bench inserts (each erases the way it inserted: by key, or from the
/// front).
enum class map_insert {
  /// `emplace(k, v)`, as the three-run container benchmark writes it. libstdc++ 12 runs a
  /// different algorithm for it on std::allocator alone (stl_map.h: a branchy lower_bound, then an
  /// insert at that hint) than on any other allocator (allocate the node, then a descent GCC
  /// compiles with cmov): docs/results/archive-2026-11-benchmarks.md, containers-map.
  emplace,
  /// `try_emplace(k, v)`: the lower_bound-then-hint algorithm for every allocator, so the variants
  /// differ only in their allocator.
  try_emplace,
  /// `emplace_hint(end(), k, v)` and erase from the front: the same nodes in the same order without
  /// the tree searches, which the benchmark's source says it does not mean to measure ("the
  /// insert/remove is where the STL library relies upon dynamic storage and that's the focus of
  /// these tests, not the underlying algorithmic performance").
  hinted,
};

/// The three-run container benchmark: 10,000 inserts then 10,000 erases in one std::map, 100 times,
/// keys in ascending order as its loops use them. By key, the searches dominate: glibc's malloc and
/// free take about a fifth of the Std time under perf.
template <class Policy, map_insert Insert>
void map_insert_erase_bench(benchmark::State& state) {
  const std::size_t heap_before = heap_in_use();
  Policy policy(map_node_size(), map_elements);
  std::ptrdiff_t heap_growth = 0;
  auto round = [&](bool measure) {
    {
      map_of<decltype(policy.template alloc<int>())> m(policy.template alloc<int>());
      for (int r = 0; r < map_rounds; ++r) {
        for (int k = 0; k < static_cast<int>(map_elements); ++k) {
          if constexpr (Insert == map_insert::hinted) {
            m.emplace_hint(m.end(), k, r);
          } else if constexpr (Insert == map_insert::try_emplace) {
            m.try_emplace(k, r);
          } else {
            m.emplace(k, r);
          }
        }
        if (measure && r == 0) {
          heap_growth = static_cast<std::ptrdiff_t>(heap_in_use() - heap_before);
        }
        for (int k = 0; k < static_cast<int>(map_elements); ++k) {
          if constexpr (Insert == map_insert::hinted) {
            m.erase(m.begin());
          } else {
            m.erase(k);
          }
        }
      }
      benchmark::DoNotOptimize(m.size());
    }
    policy.recycle();
  };
  round(true);
  for (auto _ : state) {
    round(false);
  }
  report(state, map_elements * map_rounds, heap_growth, map_elements);
}

/// The node-list benchmark: operations on one end of a linked list: push N elements, then pop them
/// all.
template <class Policy, bool Singly>
void one_end_bench(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const std::size_t heap_before = heap_in_use();
  Policy policy(Singly ? forward_list_node_size() : list_node_size(), n);
  std::ptrdiff_t heap_growth = 0;
  auto round = [&](bool measure) {
    {
      using alloc_type = decltype(policy.template alloc<int>());
      std::conditional_t<Singly, forward_list_of<alloc_type>, list_of<alloc_type>> l(
          policy.template alloc<int>());
      for (std::size_t i = 0; i < n; ++i) {
        l.push_front(static_cast<int>(i));
      }
      if (measure) {
        heap_growth = static_cast<std::ptrdiff_t>(heap_in_use() - heap_before);
      }
      while (!l.empty()) {
        l.pop_front();
      }
      benchmark::ClobberMemory();
    }
    policy.recycle();
  };
  round(true);
  for (auto _ : state) {
    round(false);
  }
  report(state, n, heap_growth, n);
}

template <class Policy>
void register_containers(const char* variant) {
  benchmark::RegisterBenchmark(benchmark_name(variant, "List1M").c_str(), list_1m_bench<Policy>)
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark(benchmark_name(variant, "MapInsertErase").c_str(),
                               map_insert_erase_bench<Policy, map_insert::emplace>)
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark(benchmark_name(variant, "MapTryEmplaceErase").c_str(),
                               map_insert_erase_bench<Policy, map_insert::try_emplace>)
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark(benchmark_name(variant, "MapInsertEraseHinted").c_str(),
                               map_insert_erase_bench<Policy, map_insert::hinted>)
      ->Unit(benchmark::kMillisecond);

  for (const bool singly : {true, false}) {
    benchmark::RegisterBenchmark(benchmark_name(variant, singly ? "ForwardList" : "List").c_str(),
                                 singly ? one_end_bench<Policy, true>
                                        : one_end_bench<Policy, false>)
        ->RangeMultiplier(10)
        ->Range(1'000, 1'000'000)
        ->Unit(benchmark::kMicrosecond);
  }
}

const bool registered = [] {
  register_containers<std_policy>("Std");
  register_containers<pmr_monotonic_policy>("PmrMonotonic");
  register_containers<pmr_unsync_pool_policy>("PmrUnsyncPool");
  register_containers<boost_fast_pool_policy>("BoostFastPool");
  register_containers<foonathan_pool_policy>("FoonathanPool");
  register_containers<pool_policy>("Pool");
  register_containers<multipool_policy>("Multipool");
  register_containers<array_pool_policy>("ArrayPool");
  register_containers<arena_policy>("Arena");
  return true;
}();

} // namespace
} // namespace memkit::bench
