// SPDX-License-Identifier: BSL-1.0
#include "memkit/concurrent_pool.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <gtest/gtest.h>
#include <random>
#include <set>
#include <thread>
#include <type_traits>
#include <vector>

#include "support/locked_spy.hpp"
#include "support/run_threads.hpp"
#include "support/spy_resource.hpp"
#include "support/stress.hpp"

namespace {

using memkit::test::misuse_recorder;
using memkit::test::spy_resource;

using memkit::test::locked_spy;
using memkit::test::run_threads;
using spy_ref = memkit::resource_ref<locked_spy>;
using spy_pool = memkit::concurrent_pool<spy_ref>;

static_assert(memkit::is_resource_v<memkit::concurrent_pool<>>);
static_assert(memkit::has_owns_v<memkit::concurrent_pool<>>);
static_assert(memkit::concurrent_pool<>::thread_safe);
static_assert(!std::is_copy_constructible_v<memkit::concurrent_pool<>>);
static_assert(!std::is_move_constructible_v<memkit::concurrent_pool<>>);

// Fixed so that a failure reproduces; printed by every randomised assertion.
constexpr std::uint64_t seed = 20261125;

void expect_everything_back(locked_spy& up) {
  EXPECT_EQ(up.spy().blocks_in_use(), 0u) << "chunks or tables not returned to the upstream";
  EXPECT_TRUE(up.spy().errors().empty())
      << (up.spy().errors().empty() ? "" : up.spy().errors().front());
}

TEST(ConcurrentPool, ConstructionObtainsNothingFromTheUpstream) {
  locked_spy up;
  {
    spy_pool pool(32, 8, spy_ref(up));
    EXPECT_EQ(up.spy().calls(), 0u);
    EXPECT_EQ(pool.capacity(), 0u);
    EXPECT_EQ(pool.chunk_count(), 0u);
    EXPECT_FALSE(pool.owns(&up));
  }
  EXPECT_EQ(up.spy().calls(), 0u);
}

TEST(ConcurrentPool, RoundsBlocksToTheirAlignmentAndSizesChunksToHoldThem) {
  memkit::concurrent_pool<> tiny(1, 1);
  EXPECT_EQ(tiny.block_size(), 8u);
  EXPECT_EQ(tiny.block_alignment(), 8u);
  memkit::concurrent_pool<> odd(24, 16);
  EXPECT_EQ(odd.block_size(), 32u);
  EXPECT_EQ(odd.max_size(), 32u);
  EXPECT_EQ(odd.max_alignment(), 16u);
  EXPECT_EQ(odd.chunk_size(), std::size_t{32} << 10);
  // Each block costs its bytes and a 4-byte link.
  EXPECT_EQ(odd.blocks_per_chunk(), (std::size_t{32} << 10) / 36);
  memkit::concurrent_pool<> page(4096, 4096);
  EXPECT_GE(page.blocks_per_chunk(), 16u);
  EXPECT_EQ(page.chunk_size(), std::size_t{128} << 10);
  memkit::concurrent_pool<> small_chunks(memkit::concurrent_pool_options{64, 64, 4096});
  EXPECT_EQ(small_chunks.chunk_size(), 4096u);
  EXPECT_EQ(small_chunks.blocks_per_chunk(), 4096u / 68);
  EXPECT_STREQ(tiny.name(), "memkit::concurrent_pool");
}

TEST(ConcurrentPool, ConstructorRejectsImpossibleBlocksAndChunks) {
  using pool = memkit::concurrent_pool<>;
  using options = memkit::concurrent_pool_options;
  EXPECT_THROW(pool(32, 3), memkit::bad_alignment);
  EXPECT_THROW(pool(32, 0), memkit::bad_alignment);
  EXPECT_THROW(pool(SIZE_MAX, 8), memkit::bad_size);
  EXPECT_THROW(pool(SIZE_MAX / 2 + 2, 8), memkit::bad_size);
  EXPECT_THROW(pool(options{32, 8, 0}), memkit::bad_size);
  EXPECT_THROW(pool(options{32, 3, 4096}), memkit::bad_alignment);
  EXPECT_THROW(pool(options{32, 8, SIZE_MAX}), memkit::bad_size);
}

TEST(ConcurrentPool, RoundsChunkSizesUpToAPowerOfTwoHoldingSixteenBlocks) {
  using pool = memkit::concurrent_pool<>;
  using options = memkit::concurrent_pool_options;
  EXPECT_EQ(pool(options{32, 8, 3000}).chunk_size(), 4096u);
  EXPECT_EQ(pool(options{4096, 8, 4096}).chunk_size(), std::size_t{128} << 10);
  EXPECT_EQ(pool(options{64, 8192, 4096}).chunk_size(), std::size_t{256} << 10);
  EXPECT_EQ(pool(options{64, 8192, 4096}).blocks_per_chunk(), 31u);
  EXPECT_EQ(pool(options{8, 8, 1}).blocks_per_chunk(), 21u); // in 256 bytes
}

TEST(ConcurrentPool, HonoursEveryAlignmentUpToItsBlockAlignment) {
  locked_spy up;
  {
    spy_pool pool(100, memkit::page_size, spy_ref(up));
    std::vector<void*> blocks;
    for (std::size_t a = 1; a <= memkit::page_size; a *= 2) {
      void* p = pool.allocate(100, a);
      EXPECT_TRUE(memkit::detail::is_aligned(p, memkit::page_size)) << "alignment " << a;
      blocks.push_back(p);
    }
    EXPECT_THROW((void)pool.allocate(8, 2 * memkit::page_size), memkit::bad_alignment);
    for (void* p : blocks) {
      pool.deallocate(p, 100, 8);
    }
    blocks.clear();
    // Chunks are aligned to their size, which is what finds a block's chunk from its address.
    for (std::size_t i = 0; i < 40; ++i) {
      blocks.push_back(pool.allocate(1, 1));
    }
    for (void* p : blocks) {
      pool.deallocate(p, 1, 1);
    }
  }
  expect_everything_back(up);
}

TEST(ConcurrentPool, RejectsRequestsNoBlockCanServe) {
  memkit::concurrent_pool<> pool(64, 16);
  EXPECT_THROW((void)pool.allocate(65, 8), memkit::bad_size);
  EXPECT_THROW((void)pool.allocate(8, 32), memkit::bad_alignment);
  EXPECT_THROW((void)pool.allocate(8, 3), memkit::bad_alignment);
  EXPECT_EQ(pool.try_allocate(SIZE_MAX, 8), nullptr);
  EXPECT_EQ(pool.try_allocate(8, 0), nullptr);
  EXPECT_EQ(pool.chunk_count(), 0u) << "a request no block can serve obtains nothing";
  EXPECT_EQ(pool.stats().failures, memkit::statistics_enabled ? 5u : 0u);
}

TEST(ConcurrentPool, HandsOutDistinctBlocksAndReusesFreedOnes) {
  locked_spy up;
  {
    spy_pool pool(48, 16, spy_ref(up));
    std::vector<void*> blocks;
    for (std::size_t i = 0; i < 3 * pool.blocks_per_chunk(); ++i) {
      blocks.push_back(pool.allocate(48, 16));
      std::memset(blocks.back(), static_cast<int>(i % 251), 48);
    }
    EXPECT_EQ(pool.chunk_count(), 3u);
    EXPECT_EQ(pool.in_use(), blocks.size());
    for (std::size_t i = 0; i < blocks.size(); ++i) {
      const auto* b = static_cast<const unsigned char*>(blocks[i]);
      ASSERT_TRUE(std::all_of(b, b + 48, [&](unsigned char c) { return c == i % 251; }))
          << "block " << i << " was overwritten";
    }
    const std::set<void*> distinct(blocks.begin(), blocks.end());
    EXPECT_EQ(distinct.size(), blocks.size());
    pool.deallocate(blocks[7], 48, 16);
    EXPECT_EQ(pool.allocate(48, 16), blocks[7]) << "the block freed last comes back first";
    for (void* p : blocks) {
      pool.deallocate(p, 48, 16);
    }
    EXPECT_EQ(pool.in_use(), 0u);
    EXPECT_EQ(up.spy().allocations(), 3u + 1u) << "three chunks and the address table";
  }
  expect_everything_back(up);
}

TEST(ConcurrentPool, ChunksComeAlignedToTheirSizeAndGoBackExactly) {
  locked_spy up;
  spy_pool pool(memkit::concurrent_pool_options{200, 8, std::size_t{32} << 10}, spy_ref(up));
  std::vector<void*> blocks;
  for (int i = 0; i < 1000; ++i) {
    blocks.push_back(pool.allocate(200, 8));
  }
  const std::size_t chunks = pool.chunk_count();
  EXPECT_EQ(chunks, (1000 + pool.blocks_per_chunk() - 1) / pool.blocks_per_chunk());
  for (void* p : blocks) {
    const auto start = memkit::detail::address(p) & ~(pool.chunk_size() - 1);
    EXPECT_TRUE(up.spy().owns(reinterpret_cast<void*>(start)));
  }
  pool.release();
  expect_everything_back(up);
  EXPECT_EQ(up.spy().deallocations(), up.spy().allocations());
  EXPECT_EQ(pool.chunk_count(), 0u);
  void* again = pool.allocate(200, 8);
  EXPECT_TRUE(pool.owns(again));
  pool.deallocate(again, 200, 8);
}

// 300 chunks: five buckets of the chunk table, and the address table grown five times while blocks
// of older chunks are found through it.
TEST(ConcurrentPool, FindsEveryChunkByNumberAndByAddressAsItGrows) {
  locked_spy up;
  {
    spy_pool pool(memkit::concurrent_pool_options{64, 64, 4096}, spy_ref(up));
    const std::size_t n = 300 * pool.blocks_per_chunk();
    std::vector<void*> blocks;
    for (std::size_t i = 0; i < n; ++i) {
      blocks.push_back(pool.allocate(64, 64));
      ASSERT_TRUE(pool.owns(blocks.front()));
      ASSERT_TRUE(pool.owns(blocks.back()));
    }
    EXPECT_EQ(pool.chunk_count(), 300u);
    EXPECT_EQ(std::set<void*>(blocks.begin(), blocks.end()).size(), n);
    std::mt19937_64 rng(seed);
    std::shuffle(blocks.begin(), blocks.end(), rng);
    for (void* p : blocks) {
      pool.deallocate(p, 64, 64);
    }
    EXPECT_EQ(pool.in_use(), 0u);
    for (std::size_t i = 0; i < n; ++i) {
      blocks[i] = pool.allocate(64, 64);
    }
    EXPECT_EQ(pool.chunk_count(), 300u) << "seed " << seed;
    pool.release();
    expect_everything_back(up);
  }
  expect_everything_back(up);
}

TEST(ConcurrentPool, OwnsEveryBlockAndNothingElse) {
  memkit::concurrent_pool<> pool(64, 64);
  memkit::concurrent_pool<> other(64, 64);
  void* p = pool.allocate(64, 64);
  void* q = other.allocate(64, 64);
  EXPECT_TRUE(pool.owns(p));
  EXPECT_TRUE(pool.owns(static_cast<char*>(p) + 63));
  EXPECT_FALSE(pool.owns(q));
  EXPECT_FALSE(other.owns(p));
  int local = 0;
  EXPECT_FALSE(pool.owns(&local));
  EXPECT_FALSE(pool.owns(nullptr));
  // The links after the last block are the pool's, not a block.
  auto* start = reinterpret_cast<char*>(memkit::detail::address(p) & ~(pool.chunk_size() - 1));
  EXPECT_TRUE(pool.owns(start + (pool.blocks_per_chunk() - 1) * 64));
  EXPECT_FALSE(pool.owns(start + pool.blocks_per_chunk() * 64));
  EXPECT_FALSE(pool.owns(start + pool.chunk_size()));
  pool.deallocate(p, 64, 64);
  other.deallocate(q, 64, 64);
}

TEST(ConcurrentPool, BoundedUpstreamGivesOutOfMemoryAndRecovers) {
  locked_spy up;
  {
    spy_pool pool(memkit::concurrent_pool_options{64, 8, 4096}, spy_ref(up));
    up.set_budget(8 * 4096 + 4096); // eight chunks and the tables
    std::vector<void*> blocks;
    try {
      for (;;) {
        blocks.push_back(pool.allocate(64, 8));
      }
    } catch (const memkit::out_of_memory& e) {
      EXPECT_STREQ(e.resource(), "memkit::concurrent_pool");
      EXPECT_EQ(e.size(), 64u);
    }
    EXPECT_EQ(pool.try_allocate(64, 8), nullptr);
    EXPECT_EQ(blocks.size(), pool.capacity());
    EXPECT_EQ(pool.chunk_count(), 8u);
    for (void* p : blocks) {
      pool.deallocate(p, 64, 8);
    }
    for (std::size_t i = 0; i < blocks.size(); ++i) {
      blocks[i] = pool.allocate(64, 8); // all served again without the upstream
    }
    EXPECT_EQ(pool.chunk_count(), 8u);
    for (void* p : blocks) {
      pool.deallocate(p, 64, 8);
    }
  }
  expect_everything_back(up);
}

TEST(ConcurrentPool, DeallocateOfNullDoesNothing) {
  misuse_recorder misuses;
  memkit::concurrent_pool<> pool(32);
  pool.deallocate(nullptr, 32, 8);
  EXPECT_TRUE(misuses.reports().empty());
  EXPECT_EQ(pool.chunk_count(), 0u);
}

TEST(ConcurrentPool, ReportsMisuseByKindAndIgnoresTheCall) {
  if constexpr (!memkit::deallocate_checks) {
    GTEST_SKIP() << "misuse checks need MEMKIT_DEBUG >= 1";
  }
  misuse_recorder misuses;
  memkit::concurrent_pool<> pool(32, 16);
  memkit::concurrent_pool<> other(32, 16);
  void* p = pool.allocate(32, 16);
  void* q = other.allocate(32, 16);
  int local = 0;
  pool.deallocate(&local, 32, 16);
  pool.deallocate(q, 32, 16);
  pool.deallocate(static_cast<char*>(p) + 16, 32, 16); // inside a block, not its start
  EXPECT_EQ(misuses.count(memkit::misuse::foreign_pointer), 3u);
  pool.deallocate(p, 33, 16);
  EXPECT_EQ(misuses.count(memkit::misuse::size_mismatch), 1u);
  pool.deallocate(p, 32, 32);
  pool.deallocate(p, 32, 3);
  EXPECT_EQ(misuses.count(memkit::misuse::alignment_mismatch), 2u);
  EXPECT_EQ(pool.in_use(), 1u) << "the rejected calls freed nothing";
  pool.deallocate(p, 32, 16);
  void* r = pool.allocate(32, 16);
  pool.deallocate(p, 24, 8); // p is r again: a correct free
  EXPECT_EQ(r, p);
  pool.deallocate(p, 32, 16); // the block is free now: a double free, even after others
  EXPECT_EQ(misuses.count(memkit::misuse::double_free), 1u);
  ASSERT_EQ(misuses.reports().size(), 7u);
  EXPECT_STREQ(misuses.reports().back().resource, "memkit::concurrent_pool");
  EXPECT_EQ(misuses.reports().back().pointer, p);
  EXPECT_EQ(pool.in_use(), 0u);
  void* a = pool.allocate(32, 16);
  void* b = pool.allocate(32, 16);
  EXPECT_NE(a, b) << "the double free did not put the block on the stack twice";
  pool.deallocate(a, 32, 16);
  pool.deallocate(b, 32, 16);
  other.deallocate(q, 32, 16);
}

TEST(ConcurrentPool, DefaultMisuseHandlerAbortsNamingThePoolAndTheMistake) {
  if constexpr (!memkit::deallocate_checks) {
    GTEST_SKIP() << "misuse checks need MEMKIT_DEBUG >= 1";
  }
  EXPECT_DEATH(
      {
        memkit::concurrent_pool<> pool(32);
        void* p = pool.allocate(32);
        pool.deallocate(p, 32);
        pool.deallocate(p, 32);
      },
      "memkit::concurrent_pool: double free");
}

TEST(ConcurrentPool, DestructionReturnsEverythingEvenWithBlocksInUse) {
  locked_spy up;
  {
    spy_pool pool(128, 8, spy_ref(up));
    for (int i = 0; i < 2000; ++i) {
      (void)pool.allocate(128, 8);
    }
    EXPECT_GT(up.spy().blocks_in_use(), 2u);
  }
  expect_everything_back(up);
}

TEST(ConcurrentPool, StatisticsCountEveryThreadsCalls) {
  if constexpr (!memkit::statistics_enabled) {
    GTEST_SKIP() << "statistics need MEMKIT_STATISTICS=1";
  }
  locked_spy up;
  spy_pool pool(32, 8, spy_ref(up));
  run_threads(2, [&](unsigned) {
    std::vector<void*> blocks;
    for (int round = 0; round < 100; ++round) {
      for (int i = 0; i < 50; ++i) {
        blocks.push_back(pool.allocate(20, 8));
      }
      for (void* p : blocks) {
        pool.deallocate(p, 20, 8);
      }
      blocks.clear();
    }
  });
  const memkit::statistics s = pool.stats();
  EXPECT_EQ(s.allocations, 10000u);
  EXPECT_EQ(s.deallocations, 10000u);
  EXPECT_EQ(s.blocks_in_use, 0u);
  EXPECT_EQ(s.bytes_in_use, 0u);
  EXPECT_GE(s.peak_blocks_in_use, 50u);
  EXPECT_LE(s.peak_blocks_in_use, 100u);
  // Each peak is its own running maximum, updated apart from the other under contention: only
  // their ranges are fixed.
  EXPECT_GE(s.peak_bytes_in_use, 20u * 50u);
  EXPECT_LE(s.peak_bytes_in_use, 20u * 100u);
  EXPECT_EQ(s.upstream_allocations, 1u + 1u) << "one chunk and the address table";
  EXPECT_EQ(s.upstream_bytes_in_use, up.spy().bytes_in_use());
  pool.release();
  EXPECT_EQ(pool.stats().upstream_bytes_in_use, 0u);
  EXPECT_EQ(pool.stats().upstream_deallocations, 2u);
}

TEST(ConcurrentPool, FourThreadsWithRemoteFreesKeepEveryStampAndReturnEveryByte) {
  locked_spy up;
  memkit::test::stress_options o;
  o.threads = 4;
  o.operations = 8'000;
  o.min_size = o.max_size = 96;
  o.alignment = 32;
  o.remote_percent = 40;
  o.seed = seed;
  {
    spy_pool pool(96, 32, spy_ref(up));
    const auto res = memkit::test::run_stress(pool, o);
    EXPECT_EQ(res.corrupted, 0u) << "seed " << o.seed << ": " << res.errors.front();
    EXPECT_EQ(res.misaligned, 0u) << "seed " << o.seed;
    EXPECT_EQ(res.failed_allocations, 0u) << "seed " << o.seed;
    EXPECT_GT(res.remote_frees, 1000u) << "seed " << o.seed;
    EXPECT_EQ(res.allocations, res.local_frees + res.remote_frees) << "seed " << o.seed;
    EXPECT_EQ(pool.in_use(), 0u);
    pool.release();
    expect_everything_back(up);
  }
  expect_everything_back(up);
}

// Two threads on the machine's two cores, each popping and pushing a handful of blocks as fast as
// it can, on a pool of one small chunk: nearly every compare-and-swap races the other thread's.
TEST(ConcurrentPool, TightAllocFreeOnTwoThreadsNeverSharesABlock) {
  memkit::concurrent_pool<> pool(memkit::concurrent_pool_options{16, 8, 4096});
  constexpr int iterations = 60'000;
  std::atomic<std::size_t> corrupted{0};
  run_threads(2, [&](unsigned t) {
    std::mt19937_64 rng(seed + t);
    void* held[4];
    for (int i = 0; i < iterations; ++i) {
      const std::size_t n = 1 + rng() % 4;
      const std::uint64_t stamp = (std::uint64_t{t} << 56) | static_cast<std::uint64_t>(i);
      for (std::size_t k = 0; k < n; ++k) {
        held[k] = pool.allocate(16, 8);
        std::memcpy(held[k], &stamp, sizeof stamp);
        std::memcpy(static_cast<char*>(held[k]) + 8, &k, sizeof k);
      }
      for (std::size_t k = 0; k < n; ++k) {
        std::uint64_t s = 0;
        std::size_t j = 0;
        std::memcpy(&s, held[k], sizeof s);
        std::memcpy(&j, static_cast<char*>(held[k]) + 8, sizeof j);
        corrupted.fetch_add(s != stamp || j != k ? 1 : 0, std::memory_order_relaxed);
        pool.deallocate(held[k], 16, 8);
      }
    }
  });
  EXPECT_EQ(corrupted.load(), 0u) << "seed " << seed;
  EXPECT_EQ(pool.in_use(), 0u);
  EXPECT_EQ(pool.chunk_count(), 1u) << "eight blocks in use at most never needed a second chunk";
}

TEST(ConcurrentPool, ExhaustionUnderContentionHandsEveryBlockToOneThreadOnly) {
  locked_spy up;
  {
    spy_pool pool(memkit::concurrent_pool_options{64, 8, 4096}, spy_ref(up));
    up.set_budget(20 * 4096 + 4096); // twenty chunks and the tables
    constexpr unsigned threads = 4;
    std::vector<std::vector<void*>> mine(threads);
    const auto grab = [&](unsigned t) {
      for (std::uint64_t i = 0;; ++i) {
        void* p = pool.try_allocate(64, 8);
        if (p == nullptr) {
          return;
        }
        const std::uint64_t stamp = std::uint64_t{t} << 32 | i;
        for (std::size_t w = 0; w < 8; ++w) {
          std::memcpy(static_cast<char*>(p) + 8 * w, &stamp, sizeof stamp);
        }
        mine[t].push_back(p);
      }
    };
    for (int round = 0; round < 3; ++round) {
      run_threads(threads, grab);
      std::set<void*> all;
      std::size_t corrupted = 0;
      for (unsigned t = 0; t < threads; ++t) {
        for (std::size_t i = 0; i < mine[t].size(); ++i) {
          all.insert(mine[t][i]);
          for (std::size_t w = 0; w < 8; ++w) {
            std::uint64_t s = 0;
            std::memcpy(&s, static_cast<char*>(mine[t][i]) + 8 * w, sizeof s);
            corrupted += s != (std::uint64_t{t} << 32 | i) ? 1 : 0;
          }
        }
      }
      EXPECT_EQ(corrupted, 0u) << "round " << round;
      EXPECT_EQ(pool.chunk_count(), 20u) << "round " << round;
      EXPECT_EQ(all.size(), pool.capacity()) << "round " << round << ": every block, once";
      // Every thread frees a share of every other thread's blocks.
      run_threads(threads, [&](unsigned t) {
        for (unsigned from = 0; from < threads; ++from) {
          for (std::size_t i = t; i < mine[from].size(); i += threads) {
            pool.deallocate(mine[from][i], 64, 8);
          }
        }
      });
      for (auto& v : mine) {
        v.clear();
      }
      EXPECT_EQ(pool.in_use(), 0u);
    }
  }
  expect_everything_back(up);
}

TEST(ConcurrentPool, ARacingDoubleFreeIsReportedOnceAndRejected) {
  if constexpr (!memkit::deallocate_checks) {
    GTEST_SKIP() << "misuse checks need MEMKIT_DEBUG >= 1";
  }
  misuse_recorder misuses;
  memkit::concurrent_pool<> pool(memkit::concurrent_pool_options{32, 8, 4096});
  constexpr int rounds = 500;
  std::atomic<void*> shared{nullptr};
  std::atomic<unsigned> arrived{0};
  run_threads(2, [&](unsigned t) {
    unsigned phase = 0;
    const auto barrier = [&] {
      phase += 2;
      arrived.fetch_add(1);
      // Spin first: both threads should run on the two cores; yield now and then for when they
      // share one.
      for (unsigned spins = 1; arrived.load() < phase; ++spins) {
        if (spins % 256 == 0) {
          std::this_thread::yield();
        }
      }
    };
    for (int round = 0; round < rounds; ++round) {
      if (t == 0) {
        shared.store(pool.allocate(32, 8));
      }
      barrier();
      // Both threads free the same block at (nearly) the same moment: one free wins the claim.
      pool.deallocate(shared.load(), 32, 8);
      barrier();
    }
  });
  EXPECT_EQ(misuses.count(memkit::misuse::double_free), static_cast<std::size_t>(rounds));
  EXPECT_EQ(misuses.reports().size(), static_cast<std::size_t>(rounds));
  EXPECT_EQ(pool.in_use(), 0u);
  // The stack holds every block once: all of them can be taken, each a different one.
  std::set<void*> all;
  for (std::size_t i = 0; i < pool.capacity(); ++i) {
    all.insert(pool.allocate(32, 8));
  }
  EXPECT_EQ(all.size(), pool.capacity());
  EXPECT_NE(pool.try_allocate(32, 8), nullptr) << "a new chunk after the last block";
}

} // namespace
