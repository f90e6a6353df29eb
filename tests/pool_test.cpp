// SPDX-License-Identifier: BSL-1.0
#include "memkit/node_pool.hpp"
#include "memkit/pool.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <gtest/gtest.h>
#include <string>
#include <vector>

#include "support/spy_resource.hpp"

namespace {

using memkit::test::misuse_recorder;
using memkit::test::spy_resource;
using spy_ref = memkit::resource_ref<spy_resource>;
using spy_pool = memkit::pool<spy_ref>;

constexpr std::size_t header_bytes = 2 * sizeof(void*);

static_assert(memkit::is_resource_v<memkit::pool<>>);
static_assert(memkit::has_owns_v<memkit::pool<>>);
static_assert(memkit::is_resource_v<spy_pool>);
static_assert(!std::is_copy_constructible_v<memkit::pool<>>);
static_assert(!std::is_move_constructible_v<memkit::pool<>>);

memkit::pool_options options(std::size_t block_size, std::size_t first, std::size_t max,
                             std::size_t reserved = 0) {
  memkit::pool_options o;
  o.block_size = block_size;
  o.first_chunk_blocks = first;
  o.max_chunk_blocks = max;
  o.reserved_blocks = reserved;
  return o;
}

// Writes a pattern derived from the block index into each block, then checks every block still
// holds its own pattern: overlapping blocks would overwrite each other.
void fill_and_verify(const std::vector<void*>& blocks, std::size_t size) {
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    std::memset(blocks[i], static_cast<int>(i % 251), size);
  }
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    const auto* b = static_cast<const unsigned char*>(blocks[i]);
    ASSERT_TRUE(std::all_of(b, b + size, [&](unsigned char c) { return c == i % 251; }))
        << "block " << i << " was overwritten";
  }
}

TEST(Pool, ConstructionObtainsNothingFromTheUpstream) {
  spy_resource spy;
  spy_pool pool(32, 8, spy_ref(spy));
  EXPECT_EQ(spy.calls(), 0u);
  EXPECT_EQ(pool.capacity(), 0u);
  EXPECT_EQ(pool.chunk_count(), 0u);
  EXPECT_FALSE(pool.owns(&spy));
}

TEST(Pool, RoundsTheBlockSizeToItsAlignmentAndAPointer) {
  memkit::pool<> tiny(1, 1);
  EXPECT_EQ(tiny.block_size(), sizeof(void*));
  EXPECT_EQ(tiny.block_alignment(), alignof(void*));
  memkit::pool<> odd(24, 16);
  EXPECT_EQ(odd.block_size(), 32u);
  memkit::pool<> line(100, 64);
  EXPECT_EQ(line.block_size(), 128u);
  EXPECT_EQ(line.max_size(), 128u);
  EXPECT_EQ(line.max_alignment(), 64u);
  memkit::pool<> empty(0);
  EXPECT_EQ(empty.block_size(), memkit::default_alignment);
  EXPECT_STREQ(empty.name(), "memkit::pool");
}

TEST(Pool, ConstructorRejectsImpossibleBlocks) {
  EXPECT_THROW(memkit::pool<>(32, 3), memkit::bad_alignment);
  EXPECT_THROW(memkit::pool<>(32, 0), memkit::bad_alignment);
  EXPECT_THROW(memkit::pool<>(SIZE_MAX, 8), memkit::bad_size);
  EXPECT_THROW(memkit::pool<>(SIZE_MAX / 2 + 2, 8), memkit::bad_size);
}

TEST(Pool, HonoursEveryAlignmentUpToItsBlockAlignment) {
  spy_resource spy;
  for (std::size_t a = 1; a <= memkit::page_size; a *= 2) {
    spy_pool pool(a, a, spy_ref(spy));
    std::vector<void*> blocks;
    for (std::size_t smaller = 1; smaller <= pool.block_alignment(); smaller *= 2) {
      void* p = pool.allocate(a, smaller);
      EXPECT_TRUE(memkit::detail::is_aligned(p, pool.block_alignment())) << "alignment " << a;
      blocks.push_back(p);
    }
    fill_and_verify(blocks, a);
    EXPECT_THROW((void)pool.allocate(a, pool.block_alignment() * 2), memkit::bad_alignment);
    for (void* p : blocks) {
      pool.deallocate(p, a, 1);
    }
  }
  EXPECT_EQ(spy.blocks_in_use(), 0u);
  EXPECT_TRUE(spy.errors().empty());
}

TEST(Pool, ServesAlignmentsAbovePageSizeToo) {
  misuse_recorder rec;
  spy_resource spy;
  EXPECT_THROW(spy_pool(8192, 8192 * 3, spy_ref(spy)), memkit::bad_alignment);
  spy_pool pool(8192, 8192, spy_ref(spy));
  void* a = pool.allocate(8192, 8192);
  void* b = pool.allocate(100, 8192);
  EXPECT_TRUE(memkit::detail::is_aligned(a, 8192));
  EXPECT_TRUE(memkit::detail::is_aligned(b, 8192));
  EXPECT_THROW((void)pool.allocate(8192, 16384), memkit::bad_alignment);
  pool.deallocate(a, 8192, 8192);
  pool.deallocate(a, 8192, 8192);
  EXPECT_EQ(rec.count(memkit::misuse::double_free), 1u);
  pool.deallocate(b, 8192, 16384);
  EXPECT_EQ(rec.count(memkit::misuse::alignment_mismatch), 1u);
  EXPECT_EQ(pool.allocate(8192, 8192), a) << "the freed block is reused";
  pool.deallocate(a, 8192, 8192);
  pool.deallocate(b, 100, 8192);
  EXPECT_EQ(pool.in_use(), 0u);
  EXPECT_EQ(rec.reports().size(), 2u);
}

TEST(Pool, ZeroSizeRequestsGetDistinctBlocks) {
  memkit::pool<> pool(16);
  void* a = pool.allocate(0);
  void* b = pool.allocate(0);
  EXPECT_NE(a, nullptr);
  EXPECT_NE(a, b);
  pool.deallocate(a, 0);
  pool.deallocate(b, 0);
  EXPECT_EQ(pool.in_use(), 0u);
}

TEST(Pool, RejectsRequestsNoBlockCanServe) {
  spy_resource spy;
  spy_pool pool(32, 16, spy_ref(spy));
  EXPECT_THROW((void)pool.allocate(SIZE_MAX, 8), memkit::bad_size);
  EXPECT_THROW((void)pool.allocate(33, 8), memkit::bad_size);
  EXPECT_THROW((void)pool.allocate(8, 3), memkit::bad_alignment);
  EXPECT_THROW((void)pool.allocate(8, 32), memkit::bad_alignment);
  EXPECT_EQ(pool.try_allocate(SIZE_MAX, 8), nullptr);
  EXPECT_EQ(pool.try_allocate(8, 0), nullptr);
  EXPECT_EQ(spy.calls(), 0u);
  // The same checks hold once the free list is not empty (the fast path).
  pool.deallocate(pool.allocate(32), 32);
  EXPECT_EQ(pool.try_allocate(33, 8), nullptr);
  EXPECT_EQ(pool.try_allocate(8, 6), nullptr);
  EXPECT_EQ(pool.try_allocate(8, 32), nullptr);
  EXPECT_EQ(pool.in_use(), 0u);
}

TEST(Pool, CarvesBlocksLazilyInAddressOrder) {
  spy_resource spy;
  spy_pool pool(options(48, 8, 8), spy_ref(spy));
  char* first = static_cast<char*>(pool.allocate(48));
  EXPECT_EQ(pool.capacity(), 8u);
  EXPECT_EQ(pool.in_use(), 1u);
  for (std::size_t i = 1; i < 8; ++i) {
    EXPECT_EQ(pool.allocate(48), first + i * pool.block_size());
  }
  EXPECT_EQ(spy.allocations(), 1u);
  EXPECT_EQ(spy.bytes_in_use(), 8 * pool.block_size() + header_bytes);
}

TEST(Pool, ReusesTheMostRecentlyFreedBlockFirst) {
  memkit::pool<> pool(32);
  void* a = pool.allocate(32);
  void* b = pool.allocate(32);
  pool.deallocate(a, 32);
  pool.deallocate(b, 32);
  EXPECT_EQ(pool.allocate(32), b);
  EXPECT_EQ(pool.allocate(32), a);
  EXPECT_EQ(pool.in_use(), 2u);
  pool.deallocate(a, 32);
  pool.deallocate(b, 32);
}

TEST(Pool, ChunksDoubleUpToTheCap) {
  spy_resource spy;
  spy_pool pool(options(16, 2, 8), spy_ref(spy));
  const std::size_t expected_capacity[] = {2, 6, 14, 22, 30};
  std::vector<void*> blocks;
  for (std::size_t step = 0; step < 5; ++step) {
    while (blocks.size() < expected_capacity[step]) {
      blocks.push_back(pool.allocate(16));
    }
    EXPECT_EQ(pool.capacity(), expected_capacity[step]);
    EXPECT_EQ(pool.chunk_count(), step + 1);
  }
  EXPECT_EQ(spy.bytes_in_use(), 30 * pool.block_size() + 5 * header_bytes);
  fill_and_verify(blocks, pool.block_size());
}

TEST(Pool, ConstructorRejectsZeroChunkSizes) {
  EXPECT_THROW(memkit::pool<>(options(8, 0, 16)), memkit::bad_size);
  EXPECT_THROW(memkit::pool<>(options(8, 16, 0)), memkit::bad_size);
  EXPECT_THROW(memkit::node_pool<>(memkit::malloc_resource{}, options(8, 0, 16)), memkit::bad_size);
}

TEST(Pool, CapBelowTheFirstChunkIsRaisedToIt) {
  spy_resource spy;
  spy_pool pool(options(8, 2, 1), spy_ref(spy));
  pool.deallocate(pool.allocate(8), 8);
  EXPECT_EQ(pool.capacity(), 2u);
  for (int i = 0; i < 3; ++i) {
    (void)pool.allocate(8);
  }
  EXPECT_EQ(pool.capacity(), 4u); // two chunks of two blocks: the cap is 2, not 1
  EXPECT_EQ(pool.chunk_count(), 2u);
}

TEST(Pool, ReservedBlocksAreTheOnlyConstructorAllocation) {
  spy_resource spy;
  spy_pool pool(options(32, 32, 4096, 100), spy_ref(spy));
  EXPECT_EQ(spy.allocations(), 1u);
  EXPECT_EQ(pool.capacity(), 100u);
  std::vector<void*> blocks;
  for (int i = 0; i < 100; ++i) {
    blocks.push_back(pool.allocate(32));
  }
  EXPECT_EQ(spy.calls(), 1u);
  blocks.push_back(pool.allocate(32));
  EXPECT_EQ(spy.calls(), 2u);
  fill_and_verify(blocks, 32);
}

TEST(Pool, ReserveCountsFreeAndUncarvedBlocks) {
  spy_resource spy;
  spy_pool pool(options(32, 32, 4096), spy_ref(spy));
  std::vector<void*> blocks;
  for (int i = 0; i < 10; ++i) {
    blocks.push_back(pool.allocate(32));
  }
  pool.deallocate(blocks.back(), 32);
  blocks.pop_back();
  pool.reserve(23); // 1 free + 22 uncarved
  EXPECT_EQ(spy.calls(), 1u);
  pool.reserve(24 + 100);
  EXPECT_EQ(spy.calls(), 2u);
  EXPECT_EQ(pool.capacity(), 32u + 101u);
  for (int i = 0; i < 124; ++i) {
    blocks.push_back(pool.allocate(32));
  }
  EXPECT_EQ(spy.calls(), 2u);
  fill_and_verify(blocks, 32);
}

TEST(Pool, ResetKeepsEveryChunkAndStopsUpstreamCalls) {
  spy_resource spy;
  spy_pool pool(options(24, 4, 64), spy_ref(spy));
  for (int round = 0; round < 3; ++round) {
    std::vector<void*> blocks;
    for (int i = 0; i < 500; ++i) {
      blocks.push_back(pool.allocate(24));
    }
    fill_and_verify(blocks, 24);
    EXPECT_EQ(pool.in_use(), 500u);
    pool.reset();
    EXPECT_EQ(pool.in_use(), 0u);
  }
  EXPECT_EQ(spy.allocations(), pool.chunk_count());
  EXPECT_EQ(spy.deallocations(), 0u);
  EXPECT_GE(pool.capacity(), 500u);
}

TEST(Pool, ReserveAfterResetAppendsBehindTheChunksStillToCarve) {
  spy_resource spy;
  spy_pool pool(options(16, 4, 4), spy_ref(spy));
  std::vector<void*> blocks;
  for (int i = 0; i < 8; ++i) {
    blocks.push_back(pool.allocate(16));
  }
  pool.reset();
  blocks.clear();
  pool.reserve(20);
  EXPECT_EQ(pool.capacity(), 20u);
  for (int i = 0; i < 20; ++i) {
    blocks.push_back(pool.allocate(16));
  }
  EXPECT_EQ(spy.allocations(), 3u);
  fill_and_verify(blocks, 16);
}

TEST(Pool, ReleaseReturnsEveryChunkWithItsExactSizeAndAlignment) {
  spy_resource spy;
  spy_pool pool(options(40, 3, 50), spy_ref(spy));
  for (int i = 0; i < 1000; ++i) {
    (void)pool.allocate(40, 8);
  }
  EXPECT_GT(spy.blocks_in_use(), 1u);
  pool.release();
  EXPECT_EQ(spy.blocks_in_use(), 0u);
  EXPECT_TRUE(spy.errors().empty()) << spy.errors().front();
  EXPECT_EQ(pool.capacity(), 0u);
  EXPECT_EQ(pool.chunk_count(), 0u);
  // It starts over from the first chunk size.
  (void)pool.allocate(40);
  EXPECT_EQ(pool.capacity(), 3u);
}

TEST(Pool, DestructionReturnsEverythingEvenWithBlocksInUse) {
  spy_resource spy;
  {
    spy_pool pool(memkit::pool_options{100, 256, 10}, spy_ref(spy));
    for (int i = 0; i < 300; ++i) {
      (void)pool.allocate(100, 256);
    }
  }
  EXPECT_EQ(spy.blocks_in_use(), 0u);
  EXPECT_TRUE(spy.errors().empty());
}

TEST(Pool, OwnsEveryBlockOfEveryChunkAndNothingElse) {
  spy_resource spy;
  spy_pool pool(options(32, 2, 16), spy_ref(spy));
  std::vector<char*> blocks;
  for (int i = 0; i < 100; ++i) {
    blocks.push_back(static_cast<char*>(pool.allocate(32)));
  }
  for (char* p : blocks) {
    EXPECT_TRUE(pool.owns(p));
    EXPECT_TRUE(pool.owns(p + 31));
  }
  int local = 0;
  EXPECT_FALSE(pool.owns(&local));
  EXPECT_FALSE(pool.owns(nullptr));
  // The header after the first chunk's two blocks is bookkeeping, not a block.
  EXPECT_FALSE(pool.owns(blocks[1] + 32));
  pool.release();
  EXPECT_FALSE(pool.owns(blocks[0]));
}

TEST(Pool, BlocksNeverOverlapAcrossFreesAndReallocations) {
  memkit::pool<> pool(options(56, 4, 128));
  std::vector<void*> blocks;
  for (int i = 0; i < 2000; ++i) {
    blocks.push_back(pool.allocate(56));
  }
  fill_and_verify(blocks, 56);
  for (std::size_t i = 0; i < blocks.size(); i += 2) {
    pool.deallocate(blocks[i], 56);
  }
  for (std::size_t i = 0; i < blocks.size(); i += 2) {
    blocks[i] = pool.allocate(56);
  }
  for (int i = 0; i < 500; ++i) {
    blocks.push_back(pool.allocate(56));
  }
  fill_and_verify(blocks, 56);
  std::vector<void*> sorted = blocks;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end());
  EXPECT_EQ(pool.in_use(), 2500u);
}

TEST(Pool, NullUpstreamFailsLoudlyNamingThePool) {
  memkit::pool<memkit::null_resource> pool(32);
  EXPECT_EQ(pool.try_allocate(32), nullptr);
  try {
    (void)pool.allocate(32, 8);
    FAIL() << "allocate must throw";
  } catch (const memkit::out_of_memory& e) {
    EXPECT_STREQ(e.resource(), "memkit::pool");
    EXPECT_EQ(e.size(), 32u);
    EXPECT_EQ(e.alignment(), 8u);
    EXPECT_NE(std::string(e.what()).find("memkit::pool: out of memory"), std::string::npos);
  }
  EXPECT_EQ(pool.in_use(), 0u);
  EXPECT_EQ(pool.capacity(), 0u);
}

TEST(Pool, FailedReservationThrowsAndLeavesNothingBehind) {
  EXPECT_THROW(memkit::pool<memkit::null_resource>(options(32, 32, 64, 1)), memkit::out_of_memory);
  spy_resource spy(1000);
  spy_pool pool(32, 8, spy_ref(spy));
  EXPECT_FALSE(pool.try_reserve(100));
  EXPECT_THROW(pool.reserve(100), memkit::out_of_memory);
  EXPECT_EQ(pool.capacity(), 0u);
  EXPECT_EQ(spy.blocks_in_use(), 0u);
  // The first growth step (32 blocks) no longer fits, so the pool settles for the 20 asked for.
  EXPECT_TRUE(pool.try_reserve(20));
  EXPECT_EQ(pool.capacity(), 20u);
}

TEST(Pool, ShrinksItsChunkRequestsToUseABoundedUpstreamToTheEnd) {
  // Room for the first chunk (8 blocks) and a chunk of 4: the second chunk asks for 16, then 8,
  // then 4, which fits; after that even one block is refused and the pool reports exhaustion.
  const std::size_t block = 64;
  spy_resource spy(8 * block + header_bytes + 4 * block + header_bytes);
  spy_pool pool(options(block, 8, 64), spy_ref(spy));
  std::vector<void*> blocks;
  for (int i = 0; i < 12; ++i) {
    blocks.push_back(pool.allocate(block));
  }
  EXPECT_EQ(pool.capacity(), 12u);
  EXPECT_EQ(pool.chunk_count(), 2u);
  EXPECT_EQ(pool.try_allocate(block), nullptr);
  EXPECT_THROW((void)pool.allocate(block), memkit::out_of_memory);
  EXPECT_EQ(pool.in_use(), 12u);
  fill_and_verify(blocks, block);
  pool.deallocate(blocks.back(), block);
  EXPECT_EQ(pool.allocate(block), blocks.back());
  pool.release();
  EXPECT_EQ(spy.blocks_in_use(), 0u);
  EXPECT_TRUE(spy.errors().empty());
}

TEST(Pool, DeallocateOfNullDoesNothing) {
  memkit::pool<> pool(32);
  void* p = pool.allocate(32);
  pool.deallocate(p, 32);
  pool.deallocate(nullptr, 32);
  EXPECT_EQ(pool.in_use(), 0u);
  EXPECT_EQ(pool.allocate(32), p) << "the free list must be untouched";
  pool.deallocate(p, 32);
}

TEST(Pool, ReportsSizeAndAlignmentMismatchesAndIgnoresThem) {
  misuse_recorder rec;
  memkit::pool<> pool(32, 16);
  void* p = pool.allocate(32, 16);
  pool.deallocate(p, 33, 16);
  pool.deallocate(p, 32, 32);
  pool.deallocate(p, 32, 12);
  ASSERT_EQ(rec.reports().size(), 3u);
  EXPECT_EQ(rec.reports()[0].kind, memkit::misuse::size_mismatch);
  EXPECT_EQ(rec.reports()[0].size, 33u);
  EXPECT_STREQ(rec.reports()[0].resource, "memkit::pool");
  EXPECT_EQ(rec.reports()[1].kind, memkit::misuse::alignment_mismatch);
  EXPECT_EQ(rec.reports()[1].pointer, p);
  EXPECT_EQ(rec.reports()[2].kind, memkit::misuse::alignment_mismatch)
      << "no block was allocated with an alignment that is not a power of two";
  EXPECT_EQ(pool.in_use(), 1u);
  void* q = pool.allocate(32, 16);
  EXPECT_NE(q, p) << "an ignored deallocate must not put the block on the free list";
  pool.deallocate(p, 32, 16);
  pool.deallocate(q, 32, 16);
  EXPECT_EQ(rec.reports().size(), 3u);
}

TEST(Pool, ReportsAnImmediateDoubleFreeAndKeepsTheFreeListIntact) {
  misuse_recorder rec;
  memkit::pool<> pool(32);
  void* a = pool.allocate(32);
  void* b = pool.allocate(32);
  pool.deallocate(a, 32);
  pool.deallocate(a, 32);
  EXPECT_EQ(rec.count(memkit::misuse::double_free), 1u);
  EXPECT_EQ(pool.in_use(), 1u);
  void* c = pool.allocate(32);
  void* d = pool.allocate(32);
  EXPECT_EQ(c, a);
  EXPECT_NE(d, a) << "a double free that was acted on would hand out the block twice";
  EXPECT_NE(d, b);
  pool.deallocate(b, 32);
  pool.deallocate(c, 32);
  pool.deallocate(d, 32);
}

TEST(Pool, DefaultMisuseHandlerAbortsNamingThePoolAndTheMistake) {
  memkit::pool<> pool(32);
  void* p = pool.allocate(32);
  pool.deallocate(p, 32);
  EXPECT_DEATH(pool.deallocate(p, 32), "memkit::pool: double free");
}

} // namespace
