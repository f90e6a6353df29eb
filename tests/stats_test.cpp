// SPDX-License-Identifier: BSL-1.0
#include "memkit/stats.hpp"

#include <array>
#include <cstddef>
#include <gtest/gtest.h>

#include <cstring>
#include <ostream>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "memkit/aligned.hpp"
#include "memkit/arena.hpp"
#include "memkit/array_pool.hpp"
#include "memkit/fallback.hpp"
#include "memkit/fixed_pool.hpp"
#include "memkit/multipool.hpp"
#include "memkit/node_pool.hpp"
#include "memkit/pool.hpp"
#include "memkit/stack.hpp"
#include "memkit/upstream.hpp"
#include "support/spy_resource.hpp"

namespace memkit {
// Failures print the counters as JSON instead of as bytes.
void PrintTo(const statistics& s, std::ostream* os) { *os << to_json(s); }
} // namespace memkit

namespace {

using memkit::statistics;
using memkit::test::misuse_recorder;
using memkit::test::spy_resource;
using spy_ref = memkit::resource_ref<spy_resource>;

// This file runs in the statistics build (memkit_tests) and, compiled standalone, in the default
// one: every expectation states the counts with statistics on, and expects zeros with them off.
statistics expected(const statistics& on) { return memkit::statistics_enabled ? on : statistics{}; }

// Every strategy reports through the same member, in either build.
template <class R>
constexpr bool
    has_stats_v = std::is_same_v<decltype(std::declval<const R&>().stats()), statistics>&& noexcept(
        std::declval<const R&>().stats());
static_assert(has_stats_v<memkit::fixed_pool> && has_stats_v<memkit::inline_fixed_pool<8, 1>> &&
              has_stats_v<memkit::pool<>> && has_stats_v<memkit::array_pool<>> &&
              has_stats_v<memkit::arena<>> && has_stats_v<memkit::stack<>> &&
              has_stats_v<memkit::multipool<>> &&
              has_stats_v<memkit::fallback<memkit::fixed_pool, memkit::malloc_resource>> &&
              has_stats_v<memkit::aligned<>> && has_stats_v<memkit::node_pool<>>);

// The upstream counters must agree with what the spy saw.
void expect_upstream_matches(const statistics& s, const spy_resource& spy) {
  if constexpr (memkit::statistics_enabled) {
    EXPECT_EQ(s.upstream_allocations, spy.allocations());
    EXPECT_EQ(s.upstream_deallocations, spy.deallocations());
    EXPECT_EQ(s.upstream_bytes_in_use, spy.bytes_in_use());
  }
}

// \returns the members of a flat JSON object of unsigned integers, in order, or an empty vector if
// `json` is not one.
std::vector<std::pair<std::string, std::size_t>> parse_counters(const std::string& json) {
  std::vector<std::pair<std::string, std::size_t>> out;
  if (json.size() < 2 || json.front() != '{' || json.back() != '}') {
    return {};
  }
  std::size_t i = 1;
  while (i < json.size() - 1) {
    if (json[i] != '"') {
      return {};
    }
    const std::size_t close = json.find('"', i + 1);
    if (close == std::string::npos || json[close + 1] != ':') {
      return {};
    }
    std::string key = json.substr(i + 1, close - i - 1);
    std::size_t j = close + 2;
    std::size_t value = 0;
    const std::size_t digits_begin = j;
    for (; j < json.size() && json[j] >= '0' && json[j] <= '9'; ++j) {
      value = value * 10 + static_cast<std::size_t>(json[j] - '0');
    }
    if (j == digits_begin) {
      return {};
    }
    out.emplace_back(std::move(key), value);
    i = json[j] == ',' ? j + 1 : j;
  }
  return out;
}

TEST(Stats, JsonHasEveryCounterByNameWithItsValue) {
  statistics s;
  s.allocations = 1;
  s.deallocations = 2;
  s.failures = 3;
  s.bytes_in_use = 4;
  s.blocks_in_use = 5;
  s.peak_bytes_in_use = 6;
  s.peak_blocks_in_use = 7;
  s.upstream_allocations = 8;
  s.upstream_deallocations = 9;
  s.upstream_bytes_in_use = static_cast<std::size_t>(-1);
  s.fallbacks = 11;
  const auto members = parse_counters(memkit::to_json(s));
  const std::vector<std::pair<std::string, std::size_t>> want = {
      {"allocations", 1},
      {"deallocations", 2},
      {"failures", 3},
      {"bytes_in_use", 4},
      {"blocks_in_use", 5},
      {"peak_bytes_in_use", 6},
      {"peak_blocks_in_use", 7},
      {"upstream_allocations", 8},
      {"upstream_deallocations", 9},
      {"upstream_bytes_in_use", static_cast<std::size_t>(-1)},
      {"fallbacks", 11}};
  EXPECT_EQ(members, want) << memkit::to_json(s);
}

TEST(Stats, WriteJsonTruncatesToTheBufferAndReturnsTheWholeLength) {
  statistics s;
  s.allocations = 12345;
  const std::string whole = memkit::to_json(s);
  char small[16];
  std::memset(small, 'x', sizeof small);
  EXPECT_EQ(memkit::write_json(s, small, sizeof small), whole.size());
  EXPECT_EQ(std::string(small), whole.substr(0, sizeof small - 1));
  EXPECT_EQ(memkit::write_json(s, nullptr, 0), whole.size()); // a size query writes nothing
  std::vector<char> exact(whole.size() + 1);
  EXPECT_EQ(memkit::write_json(s, exact.data(), exact.size()), whole.size());
  EXPECT_EQ(std::string(exact.data()), whole);
}

TEST(Stats, JsonOfZerosIsAValidObject) {
  const auto members = parse_counters(memkit::to_json(statistics{}));
  ASSERT_EQ(members.size(), 11U);
  for (const auto& [key, value] : members) {
    EXPECT_EQ(value, 0U) << key;
  }
}

TEST(Stats, EqualityComparesEveryCounter) {
  statistics a;
  statistics b;
  EXPECT_TRUE(a == b);
  b.fallbacks = 1;
  EXPECT_TRUE(a != b);
  a.fallbacks = 1;
  a.allocations = 1;
  EXPECT_FALSE(a == b);
}

TEST(Stats, CompiledOutStrategiesAreNoLarger) {
#if MEMKIT_STATISTICS
  GTEST_SKIP() << "statistics are on in this build";
#else
  {
    // The recorder is empty, and nesting strategies (each with its own recorder type) does not
    // defeat the empty-base optimization: composites are exactly the sum of their parts. Sizes
    // against the commit before statistics are in docs/statistics.md.
    static_assert(std::is_empty_v<memkit::detail::stats_recorder<memkit::fixed_pool>>);
    static_assert(sizeof(memkit::aligned<>) == sizeof(memkit::malloc_resource));
    static_assert(sizeof(memkit::aligned<memkit::pool<>>) == sizeof(memkit::pool<>));
    static_assert(sizeof(memkit::fallback<memkit::pool<>, memkit::pool<>>) ==
                  2 * sizeof(memkit::pool<>));
    static_assert(sizeof(memkit::fallback<memkit::stack<>, memkit::arena<>>) ==
                  sizeof(memkit::stack<>) + sizeof(memkit::arena<>));
    static_assert(sizeof(memkit::arena_marker) == 4 * sizeof(void*));
    static_assert(sizeof(memkit::stack_marker) == 3 * sizeof(void*));
    EXPECT_EQ(memkit::fixed_pool(nullptr, 0, 8).stats(), statistics{});
  }
#endif
}

TEST(Stats, FixedPoolCountsBlocksFailuresAndPeak) {
  alignas(64) std::array<std::byte, 4 * 32> buffer{};
  memkit::fixed_pool pool(buffer.data(), buffer.size(), 32);
  void* a = pool.allocate(10);
  void* b = pool.allocate(20);
  void* c = pool.allocate(0);
  pool.deallocate(b, 20);
  void* d = pool.allocate(30); // reuses b
  void* e = pool.allocate(32);
  EXPECT_EQ(pool.try_allocate(8), nullptr);  // full
  EXPECT_EQ(pool.try_allocate(64), nullptr); // too large
  EXPECT_THROW((void)pool.allocate(8), memkit::out_of_memory);
  statistics want;
  want.allocations = 5;
  want.deallocations = 1;
  want.failures = 3;
  want.bytes_in_use = 10 + 0 + 30 + 32;
  want.blocks_in_use = 4;
  want.peak_bytes_in_use = 72;
  want.peak_blocks_in_use = 4;
  EXPECT_EQ(pool.stats(), expected(want));
  for (void* p : {a, c, d, e}) {
    EXPECT_NE(p, nullptr);
  }
  pool.reset();
  want.bytes_in_use = 0;
  want.blocks_in_use = 0;
  EXPECT_EQ(pool.stats(), expected(want)) << "reset frees every block, totals and peaks stay";
}

TEST(Stats, FixedPoolDoesNotCountAnIgnoredMisuse) {
  if constexpr (!memkit::deallocate_checks) {
    GTEST_SKIP() << "MEMKIT_DEBUG is 0: no deallocate checks";
  } else {
    misuse_recorder rec;
    memkit::inline_fixed_pool<16, 2> pool;
    void* p = pool.allocate(16);
    pool.deallocate(p, 16);
    pool.deallocate(p, 16); // double free: reported, ignored
    EXPECT_EQ(rec.count(memkit::misuse::double_free), 1U);
    statistics want;
    want.allocations = 1;
    want.deallocations = 1;
    want.peak_bytes_in_use = 16;
    want.peak_blocks_in_use = 1;
    EXPECT_EQ(pool.stats(), expected(want));
  }
}

TEST(Stats, PoolCountsChunksAsUpstreamCalls) {
  spy_resource spy;
  {
    memkit::pool<spy_ref> pool(24, 8, spy_ref{spy});
    std::vector<void*> blocks;
    for (int i = 0; i < 40; ++i) { // 32 from the first chunk, 8 from the second
      blocks.push_back(pool.allocate(24, 8));
    }
    for (int i = 0; i < 10; ++i) {
      pool.deallocate(blocks.back(), 24, 8);
      blocks.pop_back();
    }
    EXPECT_EQ(pool.try_allocate(25, 8), nullptr);
    EXPECT_THROW((void)pool.allocate(8, 16), memkit::bad_alignment);
    statistics want;
    want.allocations = 40;
    want.deallocations = 10;
    want.failures = 2;
    want.bytes_in_use = 30 * 24;
    want.blocks_in_use = 30;
    want.peak_bytes_in_use = 40 * 24;
    want.peak_blocks_in_use = 40;
    want.upstream_allocations = 2;
    want.upstream_bytes_in_use = spy.bytes_in_use();
    EXPECT_EQ(pool.stats(), expected(want));
    expect_upstream_matches(pool.stats(), spy);
    pool.release();
    want.bytes_in_use = 0;
    want.blocks_in_use = 0;
    want.upstream_deallocations = 2;
    want.upstream_bytes_in_use = 0;
    EXPECT_EQ(pool.stats(), expected(want));
    expect_upstream_matches(pool.stats(), spy);
  }
  EXPECT_EQ(spy.blocks_in_use(), 0U);
  EXPECT_TRUE(spy.errors().empty());
}

TEST(Stats, PoolCountsAnUpstreamFailure) {
  spy_resource spy(0);
  memkit::pool<spy_ref> pool(16, 8, spy_ref{spy});
  EXPECT_THROW((void)pool.allocate(16, 8), memkit::out_of_memory);
  EXPECT_EQ(pool.try_allocate(16, 8), nullptr);
  statistics want;
  want.failures = 2;
  EXPECT_EQ(pool.stats(), expected(want));
}

TEST(Stats, ArrayPoolCountsBothArrays) {
  spy_resource spy;
  {
    memkit::array_pool<spy_ref> pool(4, 3, 4, spy_ref{spy});
    void* a = pool.allocate(4, 4);
    void* b = pool.allocate(3, 4);
    void* c = pool.allocate(1, 1);
    EXPECT_EQ(pool.try_allocate(1, 1), nullptr);
    pool.deallocate(b, 3, 4);
    statistics want;
    want.allocations = 3;
    want.deallocations = 1;
    want.failures = 1;
    want.bytes_in_use = 5;
    want.blocks_in_use = 2;
    want.peak_bytes_in_use = 8;
    want.peak_blocks_in_use = 3;
    want.upstream_allocations = 2; // the storage and the free stack
    want.upstream_bytes_in_use = 3 * 4 + 4 * sizeof(std::uint32_t);
    EXPECT_EQ(pool.stats(), expected(want));
    expect_upstream_matches(pool.stats(), spy);
    pool.deallocate(a, 4, 4);
    pool.deallocate(c, 1, 1);
    pool.release();
    expect_upstream_matches(pool.stats(), spy);
    EXPECT_EQ(pool.stats().upstream_deallocations, memkit::statistics_enabled ? 2U : 0U);
  }
  EXPECT_EQ(spy.blocks_in_use(), 0U);
}

TEST(Stats, ArrayPoolCountsTheStorageReturnedWhenTheStackCannotBeHad) {
  spy_resource spy(3 * 4); // room for the storage only
  memkit::array_pool<spy_ref> pool(4, 3, 4, spy_ref{spy});
  EXPECT_EQ(pool.try_allocate(4, 4), nullptr);
  statistics want;
  want.failures = 1;
  want.upstream_allocations = 1;
  want.upstream_deallocations = 1;
  EXPECT_EQ(pool.stats(), expected(want));
  expect_upstream_matches(pool.stats(), spy);
}

TEST(Stats, ArenaCountsRollbackResetAndRelease) {
  spy_resource spy;
  {
    memkit::arena<spy_ref> arena(spy_ref{spy}, memkit::arena_options{1024, 1 << 20});
    (void)arena.allocate(100);
    void* b = arena.allocate(200);
    const memkit::arena_marker m = arena.marker();
    (void)arena.allocate(5000); // an upstream block of its own size, then full
    (void)arena.allocate(7, 8); // a third upstream block, of the next geometric size
    EXPECT_EQ(arena.try_allocate(8, 3), nullptr);
    statistics want;
    want.allocations = 4;
    want.failures = 1;
    want.bytes_in_use = 5307;
    want.blocks_in_use = 4;
    want.peak_bytes_in_use = 5307;
    want.peak_blocks_in_use = 4;
    want.upstream_allocations = 3;
    want.upstream_bytes_in_use = spy.bytes_in_use();
    EXPECT_EQ(arena.stats(), expected(want));
    arena.rollback(m);
    want.bytes_in_use = 300;
    want.blocks_in_use = 2;
    EXPECT_EQ(arena.stats(), expected(want)) << "a rollback frees what came after the marker";
    arena.deallocate(b, 200);
    want.deallocations = 1;
    want.bytes_in_use = 100;
    want.blocks_in_use = 1;
    EXPECT_EQ(arena.stats(), expected(want));
    arena.reset();
    want.bytes_in_use = 0;
    want.blocks_in_use = 0;
    EXPECT_EQ(arena.stats(), expected(want)) << "reset keeps the upstream blocks";
    expect_upstream_matches(arena.stats(), spy);
    arena.release();
    want.upstream_deallocations = 3;
    want.upstream_bytes_in_use = 0;
    EXPECT_EQ(arena.stats(), expected(want));
    expect_upstream_matches(arena.stats(), spy);
  }
  EXPECT_EQ(spy.blocks_in_use(), 0U);
}

TEST(Stats, StackCountsLifoFreesAndIgnoresViolations) {
  misuse_recorder rec;
  spy_resource spy;
  {
    memkit::stack<spy_ref> stack(1024, spy_ref{spy});
    void* a = stack.allocate(100);
    void* b = stack.allocate(50);
    const memkit::stack_marker m = stack.marker();
    (void)stack.allocate(30);
    stack.deallocate(a, 100); // not the top: reported, ignored
    EXPECT_EQ(rec.count(memkit::misuse::lifo_violation), 1U);
    EXPECT_EQ(stack.try_allocate(2000), nullptr);
    stack.rollback(m);
    stack.deallocate(b, 50);
    statistics want;
    want.allocations = 3;
    want.deallocations = 1;
    want.failures = 1;
    want.bytes_in_use = 100;
    want.blocks_in_use = 1;
    want.peak_bytes_in_use = 180;
    want.peak_blocks_in_use = 3;
    want.upstream_allocations = 1;
    want.upstream_bytes_in_use = 1024;
    EXPECT_EQ(stack.stats(), expected(want));
    expect_upstream_matches(stack.stats(), spy);
    stack.release();
    want.bytes_in_use = 0;
    want.blocks_in_use = 0;
    want.upstream_deallocations = 1;
    want.upstream_bytes_in_use = 0;
    EXPECT_EQ(stack.stats(), expected(want));
    expect_upstream_matches(stack.stats(), spy);
  }
  EXPECT_EQ(spy.blocks_in_use(), 0U);
}

// memkit::detail::counters, the one implementation every strategy, the thread-caching engine and
// the replacement's stats:1 count with, whatever MEMKIT_STATISTICS is: each kind of cell keeps the
// same counts for the same events.
template <class Cell, bool Peaks>
statistics count_one_run() {
  memkit::detail::counters<Cell, Peaks> c;
  c.on_allocate(100);
  c.on_allocate(20);
  c.on_deallocate(100);
  c.on_failure();
  c.on_fallback();
  c.on_upstream_allocate(4096);
  c.on_upstream_allocate(64);
  c.on_upstream_deallocate(64);
  return c.stats();
}

TEST(Stats, EveryKindOfCounterCountsTheSameEvents) {
  // In MEMKIT_STATISTICS_FIELDS' order: allocations, deallocations, failures, bytes and blocks in
  // use, their peaks, upstream allocations, deallocations and bytes, fallbacks.
  statistics expected{2, 1, 1, 20, 1, 120, 2, 2, 1, 4096, 1};
  EXPECT_EQ((count_one_run<memkit::detail::plain_cell, true>()), expected);
  EXPECT_EQ((count_one_run<memkit::detail::owned_cell, true>()), expected);
  EXPECT_EQ((count_one_run<memkit::detail::shared_cell, true>()), expected);
  expected.peak_bytes_in_use = 0;
  expected.peak_blocks_in_use = 0;
  EXPECT_EQ((count_one_run<memkit::detail::owned_cell, false>()), expected) << "no peaks kept";
}

TEST(Stats, SharedCountersAreExactOnceThreadsAreDone) {
  memkit::detail::counters<memkit::detail::shared_cell> c;
  constexpr std::size_t per_thread = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&c] {
      for (std::size_t i = 0; i < per_thread; ++i) {
        c.on_allocate(16);
        c.on_deallocate(16);
      }
      c.on_allocate(8);
    });
  }
  for (std::thread& t : threads) {
    t.join();
  }
  const statistics s = c.stats();
  EXPECT_EQ(s.allocations, 4 * per_thread + 4);
  EXPECT_EQ(s.deallocations, 4 * per_thread);
  EXPECT_EQ(s.bytes_in_use, 32u);
  EXPECT_EQ(s.blocks_in_use, 4u);
  EXPECT_GE(s.peak_blocks_in_use, 4u);
  EXPECT_LE(s.peak_blocks_in_use, 8u);
  c.clear();
  EXPECT_EQ(c.stats(), statistics{});
}

TEST(Stats, FallbackCountsWhatTheSecondaryServed) {
  spy_resource spy;
  alignas(64) std::array<std::byte, 2 * 32> buffer{};
  {
    memkit::fallback<memkit::fixed_pool, spy_ref> f(
        std::piecewise_construct, std::forward_as_tuple(buffer.data(), buffer.size(), 32),
        std::forward_as_tuple(spy));
    void* a = f.allocate(32);
    void* b = f.allocate(16);
    void* c = f.allocate(8); // the pool is full
    spy.set_budget(0);
    EXPECT_THROW((void)f.allocate(8), memkit::out_of_memory);
    statistics want;
    want.allocations = 3;
    want.failures = 1;
    want.bytes_in_use = 56;
    want.blocks_in_use = 3;
    want.peak_bytes_in_use = 56;
    want.peak_blocks_in_use = 3;
    want.fallbacks = 1;
    EXPECT_EQ(f.stats(), expected(want));
    statistics primary;
    primary.allocations = 2;
    primary.failures = 2;
    primary.bytes_in_use = 48;
    primary.blocks_in_use = 2;
    primary.peak_bytes_in_use = 48;
    primary.peak_blocks_in_use = 2;
    EXPECT_EQ(f.primary().stats(), expected(primary)) << "each part keeps its own counters";
    f.deallocate(a, 32);
    f.deallocate(b, 16);
    f.deallocate(c, 8);
    want.deallocations = 3;
    want.bytes_in_use = 0;
    want.blocks_in_use = 0;
    EXPECT_EQ(f.stats(), expected(want));
  }
  EXPECT_EQ(spy.blocks_in_use(), 0U);
}

TEST(Stats, MultipoolCountsChunksLargeBlocksAndItsTable) {
  spy_resource spy;
  {
    memkit::multipool<spy_ref> pool(spy_ref{spy});
    void* a = pool.allocate(10);
    void* b = pool.allocate(100);
    void* big = pool.allocate(10000); // straight to the upstream, recorded in the large table
    (void)pool.allocate(0);
    EXPECT_EQ(pool.try_allocate(8, 3), nullptr);
    pool.deallocate(a, 10);
    pool.deallocate(big, 10000);
    statistics want;
    want.allocations = 4;
    want.deallocations = 2;
    want.failures = 1;
    want.bytes_in_use = 100;
    want.blocks_in_use = 2;
    want.peak_bytes_in_use = 10110;
    want.peak_blocks_in_use = 4;
    // Two class chunks, the large block and the table, less the large block.
    want.upstream_allocations = 4;
    want.upstream_deallocations = 1;
    want.upstream_bytes_in_use = spy.bytes_in_use();
    EXPECT_EQ(pool.stats(), expected(want));
    expect_upstream_matches(pool.stats(), spy);
    (void)pool.allocate(5000);
    pool.reset(); // returns the large block
    want.allocations = 5;
    want.peak_bytes_in_use = 10110;
    want.bytes_in_use = 0;
    want.blocks_in_use = 0;
    want.upstream_allocations = 5;
    want.upstream_deallocations = 2;
    want.upstream_bytes_in_use = spy.bytes_in_use();
    EXPECT_EQ(pool.stats(), expected(want));
    expect_upstream_matches(pool.stats(), spy);
    (void)b;
    pool.release();
    expect_upstream_matches(pool.stats(), spy);
    EXPECT_EQ(pool.stats().upstream_bytes_in_use, 0U);
  }
  EXPECT_EQ(spy.blocks_in_use(), 0U);
}

TEST(Stats, MultipoolStaticModeMakesNoUpstreamCalls) {
  alignas(64) std::array<std::byte, 1024> buffer{};
  memkit::multipool<memkit::null_resource> pool(buffer.data(), buffer.size(),
                                                memkit::multipool_options{4096, 512});
  void* a = pool.allocate(64);
  EXPECT_EQ(pool.try_allocate(5000), nullptr);
  pool.deallocate(a, 64);
  statistics want;
  want.allocations = 1;
  want.deallocations = 1;
  want.failures = 1;
  want.peak_bytes_in_use = 64;
  want.peak_blocks_in_use = 1;
  EXPECT_EQ(pool.stats(), expected(want));
}

TEST(Stats, AlignedCountsRequestedAndRoundedBytes) {
  spy_resource spy;
  {
    memkit::aligned<spy_ref> a(spy_ref{spy});
    void* p = a.allocate(10);
    void* q = a.allocate(100, 256);
    EXPECT_EQ(a.try_allocate(8, 3), nullptr);
    statistics want;
    want.allocations = 2;
    want.failures = 1;
    want.bytes_in_use = 110;
    want.blocks_in_use = 2;
    want.peak_bytes_in_use = 110;
    want.peak_blocks_in_use = 2;
    want.upstream_allocations = 2;
    want.upstream_bytes_in_use = 64 + 128;
    EXPECT_EQ(a.stats(), expected(want));
    expect_upstream_matches(a.stats(), spy);
    a.deallocate(p, 10);
    a.deallocate(q, 100, 256);
    expect_upstream_matches(a.stats(), spy);
    EXPECT_EQ(a.stats().bytes_in_use, 0U);
  }
  EXPECT_EQ(spy.blocks_in_use(), 0U);
}

TEST(Stats, NodePoolCountsNodesAndPassedThroughBlocks) {
  spy_resource spy;
  {
    memkit::node_pool<spy_ref> nodes(spy_ref{spy});
    void* n1 = nodes.allocate(24, 8); // adopts 24/8
    void* n2 = nodes.allocate(24, 8);
    void* other = nodes.allocate(40, 8); // another size: passed through
    void* array = nodes.allocate_array(100, 8);
    statistics want;
    want.allocations = 4;
    want.bytes_in_use = 24 + 24 + 40 + 100;
    want.blocks_in_use = 4;
    want.peak_bytes_in_use = 188;
    want.peak_blocks_in_use = 4;
    want.upstream_allocations = 3; // a chunk and the two passed-through blocks
    want.upstream_bytes_in_use = spy.bytes_in_use();
    EXPECT_EQ(nodes.stats(), expected(want));
    expect_upstream_matches(nodes.stats(), spy);
    nodes.deallocate(n2, 24, 8);
    nodes.deallocate(other, 40, 8);
    nodes.reset(); // n1 is dropped with the nodes; the array stays
    want.deallocations = 2;
    want.bytes_in_use = 100;
    want.blocks_in_use = 1;
    want.upstream_deallocations = 1;
    want.upstream_bytes_in_use = spy.bytes_in_use();
    EXPECT_EQ(nodes.stats(), expected(want));
    nodes.deallocate_array(array, 100, 8);
    nodes.release();
    expect_upstream_matches(nodes.stats(), spy);
    EXPECT_EQ(nodes.stats().blocks_in_use, 0U);
    (void)n1;
  }
  EXPECT_EQ(spy.blocks_in_use(), 0U);
}

} // namespace
