// SPDX-License-Identifier: BSL-1.0
// tests/chunk_registry_test.cpp: the number <-> start lookups of memkit/detail/chunk_registry.hpp,
// on their own: many chunks, addresses that start no chunk, an upstream that refuses, and readers
// racing one writer.
#include "memkit/detail/chunk_registry.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "memkit/upstream.hpp"
#include "support/spy_resource.hpp"

namespace {

using memkit::detail::chunk_registry;
using memkit::test::misuse_recorder;
using memkit::test::spy_resource;

// Fixed so that a failure reproduces; printed by every randomised assertion.
constexpr std::uint64_t seed = 20261126;

constexpr std::uint32_t npos = chunk_registry::npos;

// The registry keys on addresses and never touches the memory at them, so the chunks here are
// addresses only, laid out as an owner's would be: aligned to a chunk size, so the low bits of
// every key are zero.
constexpr std::uintptr_t chunk_size = std::uintptr_t{1} << 16;

char* at(std::uintptr_t a) { return reinterpret_cast<char*>(a); }
std::uintptr_t address(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

// \returns `n` distinct chunk starts in a seeded random order, so that the numbers the registry
// gives do not follow the addresses.
std::vector<char*> shuffled_starts(std::size_t n, std::uint64_t s) {
  std::vector<char*> starts;
  for (std::size_t i = 0; i < n; ++i) {
    starts.push_back(at((i + 1) * chunk_size));
  }
  std::mt19937_64 rng(s);
  std::shuffle(starts.begin(), starts.end(), rng);
  return starts;
}

// A registry and the spy its tables come from; the registry requires clear() before it is
// destroyed, which the destructor does, so that a failed ASSERT does not abort the program.
struct spied_registry {
  ~spied_registry() { registry.clear(spy); }
  spy_resource spy;
  chunk_registry registry;
};

// \returns the first disagreement between `r` and `starts` (chunk n started at starts[n]), or "".
std::string check_all(const chunk_registry& r, const std::vector<char*>& starts) {
  if (r.count() != starts.size()) {
    return "count " + std::to_string(r.count()) + ", expected " + std::to_string(starts.size());
  }
  for (std::uint32_t n = 0; n < starts.size(); ++n) {
    if (r.base(n) != starts[n]) {
      return "base(" + std::to_string(n) + ") is not the start added as chunk " + std::to_string(n);
    }
    if (r.find(starts[n]) != n) {
      return "find(start of chunk " + std::to_string(n) +
             ") = " + std::to_string(r.find(starts[n]));
    }
  }
  return {};
}

void expect_everything_back(const spy_resource& spy) {
  EXPECT_EQ(spy.blocks_in_use(), 0u) << "tables not returned to the upstream";
  EXPECT_EQ(spy.allocations(), spy.deallocations());
  EXPECT_TRUE(spy.errors().empty()) << (spy.errors().empty() ? "" : spy.errors().front());
}

TEST(ChunkRegistry, EmptyRegistryFindsNothing) {
  spied_registry s;
  EXPECT_EQ(s.registry.count(), 0u);
  EXPECT_EQ(s.registry.find(nullptr), npos);
  EXPECT_EQ(s.registry.find(at(chunk_size)), npos);
  std::size_t visits = 0;
  s.registry.for_each([&](char*) { ++visits; });
  EXPECT_EQ(visits, 0u);
  s.registry.clear(s.spy);
  expect_everything_back(s.spy);
}

// 5000 chunks: far past the first bucket, through many bucket and table growths.
TEST(ChunkRegistry, ManyChunksAreFoundByNumberAndByStart) {
  constexpr std::size_t n = 5000;
  const std::vector<char*> starts = shuffled_starts(n, seed);
  spied_registry s;
  std::vector<char*> added;
  for (char* start : starts) {
    ASSERT_TRUE(s.registry.add(s.spy, start)) << "chunk " << added.size();
    added.push_back(start);
    const auto k = static_cast<std::uint32_t>(added.size() - 1);
    ASSERT_EQ(s.registry.count(), added.size());
    ASSERT_EQ(s.registry.base(k), start) << "chunk " << k << ", seed " << seed;
    ASSERT_EQ(s.registry.find(start), k) << "chunk " << k << ", seed " << seed;
    // After each doubling (where the tables grow in any layout of doubling sizes), every
    // earlier chunk again.
    if ((added.size() & (added.size() - 1)) == 0) {
      ASSERT_EQ(check_all(s.registry, added), "") << "seed " << seed;
    }
  }
  EXPECT_EQ(check_all(s.registry, starts), "") << "seed " << seed;
  EXPECT_GT(s.spy.blocks_in_use(), 0u) << "the tables of 5000 chunks come from the upstream";
}

TEST(ChunkRegistry, AddressesThatStartNoChunkAreNotFound) {
  constexpr std::size_t n = 3000;
  const std::vector<char*> starts = shuffled_starts(n, seed + 1);
  spied_registry s;
  for (char* start : starts) {
    ASSERT_TRUE(s.registry.add(s.spy, start));
  }
  for (char* start : starts) {
    const std::uintptr_t a = address(start);
    // Inside a chunk, and the addresses just around its start.
    for (std::uintptr_t p : {a + 1, a + 16, a + chunk_size / 2, a + chunk_size - 1, a - 1}) {
      ASSERT_EQ(s.registry.find(at(p)), npos) << "address " << p;
    }
  }
  EXPECT_EQ(s.registry.find(nullptr), npos);
  EXPECT_EQ(s.registry.find(at((n + 1) * chunk_size)), npos) << "the next chunk, not added";

  // Foreign addresses anywhere, aligned as chunks are and not.
  const std::unordered_set<char*> added(starts.begin(), starts.end());
  std::mt19937_64 rng(seed);
  std::size_t checked = 0;
  for (int i = 0; i < 20'000; ++i) {
    std::uintptr_t p = static_cast<std::uintptr_t>(rng());
    if (i % 2 == 0) {
      p = p % ((2 * n) * chunk_size) & ~(chunk_size - 1); // among and beside the chunks
    }
    if (added.count(at(p)) == 0) {
      ASSERT_EQ(s.registry.find(at(p)), npos) << "address " << p << ", seed " << seed;
      ++checked;
    }
  }
  EXPECT_GT(checked, 10'000u) << "seed " << seed;
  EXPECT_EQ(check_all(s.registry, starts), "") << "the probes changed nothing";
}

TEST(ChunkRegistry, ForEachVisitsEveryChunkOnceOldestFirst) {
  const std::vector<char*> starts = shuffled_starts(1000, seed + 2);
  spied_registry s;
  for (std::size_t k = 0; k < starts.size(); ++k) {
    ASSERT_TRUE(s.registry.add(s.spy, starts[k]));
    if (k == 9) {
      std::vector<char*> seen;
      s.registry.for_each([&](char* start) { seen.push_back(start); });
      EXPECT_EQ(seen, std::vector<char*>(starts.begin(), starts.begin() + 10));
    }
  }
  std::vector<char*> seen;
  s.registry.for_each([&](char* start) { seen.push_back(start); });
  EXPECT_EQ(seen, starts);
}

TEST(ChunkRegistry, ClearReturnsEveryTableAndTheRegistryStartsOver) {
  const std::vector<char*> starts = shuffled_starts(2000, seed + 3);
  spied_registry s;
  for (int round = 0; round < 2; ++round) {
    for (char* start : starts) {
      ASSERT_TRUE(s.registry.add(s.spy, start)) << "round " << round;
    }
    ASSERT_GT(s.spy.blocks_in_use(), 0u);
    s.registry.clear(s.spy);
    expect_everything_back(s.spy);
    EXPECT_EQ(s.registry.count(), 0u);
    for (char* start : {starts.front(), starts[starts.size() / 2], starts.back()}) {
      EXPECT_EQ(s.registry.find(start), npos) << "round " << round;
    }
    std::size_t visits = 0;
    s.registry.for_each([&](char*) { ++visits; });
    EXPECT_EQ(visits, 0u);
  }
  // Reused after clear, a start is numbered anew.
  ASSERT_TRUE(s.registry.add(s.spy, starts.back()));
  EXPECT_EQ(s.registry.find(starts.back()), 0u);
  EXPECT_EQ(s.registry.base(0), starts.back());
}

// An upstream that refuses every allocation beyond the next `allowed`, so that every allocation
// an add makes can be made to fail in turn, whatever the tables look like.
class refusing_upstream {
public:
  explicit refusing_upstream(spy_resource& spy) noexcept : spy_(spy) {}

  void allow(std::size_t allocations) noexcept { allowed_ = allocations; }
  std::size_t refused() const noexcept { return refused_; }

  void* try_allocate(std::size_t bytes, std::size_t alignment) noexcept {
    if (allowed_ == 0) {
      ++refused_;
      return nullptr;
    }
    --allowed_;
    return spy_.try_allocate(bytes, alignment);
  }
  void deallocate(void* p, std::size_t bytes, std::size_t alignment) noexcept {
    spy_.deallocate(p, bytes, alignment);
  }

private:
  spy_resource& spy_;
  std::size_t allowed_ = 0;
  std::size_t refused_ = 0;
};

// Each add is tried first with no allocation allowed, then with one, two, ... until it succeeds:
// every allocation of every growth fails once, after the ones before it in the same add succeeded.
// A failed add adds nothing and leaves every earlier chunk where it was.
TEST(ChunkRegistry, AddThatCannotGrowTheTablesAddsNothingAndKeepsEveryChunk) {
  const std::vector<char*> starts = shuffled_starts(2000, seed + 4);
  spied_registry s;
  refusing_upstream up(s.spy);
  std::vector<char*> added;
  std::size_t failed_adds = 0;
  for (char* start : starts) {
    for (std::size_t allowed = 0;; ++allowed) {
      ASSERT_LT(allowed, 64u) << "an add that never succeeds";
      up.allow(allowed);
      const std::size_t refused = up.refused();
      if (s.registry.add(up, start)) {
        break;
      }
      ++failed_adds;
      ASSERT_GT(up.refused(), refused) << "an add failed though the upstream refused nothing";
      ASSERT_EQ(s.registry.find(start), npos) << "chunk " << added.size() << ", seed " << seed;
      ASSERT_EQ(check_all(s.registry, added), "")
          << "after a failed add of chunk " << added.size() << " with " << allowed
          << " allocations allowed, seed " << seed;
    }
    added.push_back(start);
  }
  EXPECT_EQ(check_all(s.registry, added), "") << "seed " << seed;
  EXPECT_GE(failed_adds, 2u) << "the tables of 2000 chunks grow more than once";
  std::vector<char*> seen;
  s.registry.for_each([&](char* start) { seen.push_back(start); });
  EXPECT_EQ(seen, added);
  s.registry.clear(up);
  expect_everything_back(s.spy);
}

TEST(ChunkRegistry, AddOnANullUpstreamFailsAndLeavesTheRegistryEmpty) {
  const misuse_recorder misuse;
  memkit::null_resource null;
  chunk_registry r;
  EXPECT_FALSE(r.add(null, at(chunk_size)));
  EXPECT_EQ(r.count(), 0u);
  EXPECT_EQ(r.find(at(chunk_size)), npos);
  r.clear(null);
  EXPECT_EQ(misuse.count(memkit::misuse::foreign_pointer), 0u)
      << "clear returned a table the null upstream never gave";

  // The same registry works afterwards with an upstream that has memory.
  spy_resource spy;
  ASSERT_TRUE(r.add(spy, at(chunk_size)));
  EXPECT_EQ(r.find(at(chunk_size)), 0u);
  r.clear(spy);
  expect_everything_back(spy);
}

TEST(ChunkRegistry, AddingAStartTwiceIsCaughtAtLevelTwo) {
  if constexpr (MEMKIT_DEBUG < 2) {
    GTEST_SKIP() << "the check is MEMKIT_ASSERT_INTERNAL, MEMKIT_DEBUG >= 2";
  }
  EXPECT_DEATH(
      {
        spy_resource spy;
        chunk_registry r;
        r.add(spy, at(chunk_size));
        r.add(spy, at(2 * chunk_size));
        r.add(spy, at(chunk_size));
      },
      "memkit: assertion failed");
}

// One writer adds chunks under its lock, as an owner grows; two readers, without the lock, read
// count() and check every chunk below it both ways, newest first (the entries most recently
// published). A start not counted yet is either not found or found with its right number. The
// readers learn of chunks only through the registry, so a publication in the wrong order is a
// wrong value here and a data race under ThreadSanitizer. The writer waits, every 64 chunks, for
// each reader to finish a pass begun after that point, so that the readers see many counts.
TEST(ChunkRegistry, ReadersRacingOneWriterSeeEveryCountedChunkAtItsNumber) {
  constexpr std::size_t n = 4000;
  constexpr unsigned readers = 2;
  const std::vector<char*> starts = shuffled_starts(n, seed + 5);
  spied_registry s;
  std::mutex growth;
  std::atomic<bool> done{false};
  std::atomic<std::size_t> passes[readers] = {};
  std::atomic<std::size_t> errors{0};
  std::vector<std::string> first_error(readers);

  const auto read = [&](unsigned t) {
    std::mt19937_64 rng(seed + t);
    // \returns whether chunk k, below count c, is where it was added; records the error if not.
    const auto check = [&](std::uint32_t c, std::uint32_t k) {
      const char* wrong = s.registry.base(k) != starts[k]   ? "base"
                          : s.registry.find(starts[k]) != k ? "find"
                                                            : nullptr;
      if (wrong != nullptr) {
        errors.fetch_add(1);
        first_error[t] = std::string(wrong) + " of chunk " + std::to_string(k) +
                         " wrong at count " + std::to_string(c);
      }
      return wrong == nullptr;
    };
    while (!done.load(std::memory_order_relaxed)) {
      // The newest chunk right after each load of the count, where a count published before its
      // entries shows.
      for (int i = 0; i < 64; ++i) {
        const std::uint32_t c = s.registry.count();
        if (c > 0 && !check(c, c - 1)) {
          return;
        }
      }
      const std::uint32_t c = s.registry.count();
      if (c > n) {
        errors.fetch_add(1);
        first_error[t] = "count " + std::to_string(c) + " > " + std::to_string(n);
        return;
      }
      for (std::uint32_t k = c; k-- > 0;) {
        if (!check(c, k)) {
          return;
        }
      }
      if (c < n) {
        const std::uint32_t k = c + static_cast<std::uint32_t>(rng() % (n - c));
        const std::uint32_t found = s.registry.find(starts[k]);
        if (found != npos && found != k) {
          errors.fetch_add(1);
          first_error[t] =
              "find(start of uncounted " + std::to_string(k) + ") = " + std::to_string(found);
          return;
        }
      }
      passes[t].fetch_add(1, std::memory_order_relaxed);
    }
  };

  std::vector<std::thread> threads;
  for (unsigned t = 0; t < readers; ++t) {
    threads.emplace_back(read, t);
  }
  bool added_all = true;
  for (std::size_t k = 0; k < n && added_all && errors.load() == 0; ++k) {
    {
      const std::lock_guard<std::mutex> lock(growth);
      added_all = s.registry.add(s.spy, starts[k]);
    }
    if (k % 200 == 0) {
      std::size_t before[readers];
      for (unsigned t = 0; t < readers; ++t) {
        before[t] = passes[t].load(std::memory_order_relaxed);
      }
      for (unsigned t = 0; t < readers; ++t) {
        while (passes[t].load(std::memory_order_relaxed) < before[t] + 2 && errors.load() == 0) {
          std::this_thread::yield();
        }
      }
    }
  }
  // Relaxed: it orders nothing the readers check (they learn of chunks through the registry
  // alone); it only ends their loops.
  done.store(true, std::memory_order_relaxed);
  for (auto& t : threads) {
    t.join();
  }
  for (unsigned t = 0; t < readers; ++t) {
    EXPECT_EQ(first_error[t], "") << "reader " << t << ", seed " << seed;
    EXPECT_GT(passes[t].load(), n / 200) << "reader " << t;
  }
  ASSERT_TRUE(added_all);
  EXPECT_EQ(check_all(s.registry, starts), "") << "seed " << seed;
}

} // namespace
