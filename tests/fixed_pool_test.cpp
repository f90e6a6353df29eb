// SPDX-License-Identifier: BSL-1.0
#include "memkit/fixed_pool.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <gtest/gtest.h>
#include <random>
#include <string>
#include <utility>
#include <vector>

#if __has_include(<sys/mman.h>)
#include <sys/mman.h>
#define MEMKIT_TEST_HAS_MMAN 1
#endif

#include "support/spy_resource.hpp"

namespace {

using memkit::fixed_pool;
using memkit::inline_fixed_pool;
using memkit::misuse;
using memkit::test::misuse_recorder;

static_assert(memkit::is_resource_v<fixed_pool>);
static_assert(memkit::has_owns_v<fixed_pool>);
static_assert(memkit::is_resource_v<inline_fixed_pool<16, 4>>);
static_assert(!std::is_copy_constructible_v<fixed_pool>);
static_assert(!std::is_move_constructible_v<inline_fixed_pool<16, 4>>);

/// Storage for tests, aligned to a page so capacities are predictable; offset to misalign it.
struct aligned_buffer {
  alignas(4096) unsigned char bytes[64 * 1024];
};

void fill(void* p, std::size_t n, unsigned char tag) { std::memset(p, tag, n); }

bool holds(const void* p, std::size_t n, unsigned char tag) {
  const auto* b = static_cast<const unsigned char*>(p);
  return std::all_of(b, b + n, [tag](unsigned char c) { return c == tag; });
}

TEST(BlockIndex, MatchesDivisionAndRejectsEveryOffsetOffABlockBoundary) {
  for (std::size_t stride : {1u, 2u, 3u, 8u, 12u, 24u, 40u, 48u, 96u, 100u, 4096u, 4104u}) {
    const memkit::detail::block_index index(stride);
    const std::size_t count = 1000;
    for (std::size_t offset = 0; offset < (count + 2) * stride; ++offset) {
      const bool boundary = offset % stride == 0 && offset / stride < count;
      ASSERT_EQ(index(offset) < count, boundary) << "stride " << stride << " offset " << offset;
      if (boundary) {
        ASSERT_EQ(index(offset), offset / stride);
      }
    }
    // Offsets below the array wrap around to huge values; none may map inside it.
    for (std::size_t back = 1; back <= 4 * stride; ++back) {
      ASSERT_GE(index(std::size_t{0} - back), count) << "stride " << stride << " back " << back;
    }
  }
}

TEST(FixedPool, RoundsBlockSizeToItsAlignmentAndAtLeastAPointer) {
  aligned_buffer buf;
  fixed_pool tiny(buf.bytes, 64, 1, 1);
  EXPECT_EQ(tiny.block_size(), sizeof(void*));
  EXPECT_EQ(tiny.block_alignment(), alignof(void*));
  EXPECT_EQ(tiny.capacity(), 64 / sizeof(void*));

  fixed_pool odd(buf.bytes, 1000, 24, 16);
  EXPECT_EQ(odd.block_size(), 32u);
  EXPECT_EQ(odd.max_size(), 32u);
  EXPECT_EQ(odd.max_alignment(), 16u);
  EXPECT_EQ(odd.capacity(), 1000u / 32);

  fixed_pool natural(buf.bytes, 1000, 24, 8);
  EXPECT_EQ(natural.block_size(), 24u);
  EXPECT_EQ(natural.capacity(), 1000u / 24);
  EXPECT_EQ(fixed_pool::block_size_for(24, 8), 24u);
  EXPECT_EQ(fixed_pool::block_alignment_for(2), alignof(void*));
}

TEST(FixedPool, StartsAtTheFirstAlignedAddressAndCountsTheBlocksThatFit) {
  aligned_buffer buf;
  fixed_pool pool(buf.bytes + 1, 1000, 64, 64);
  EXPECT_EQ(pool.capacity(), (1000u - 63) / 64);
  void* first = pool.allocate(64, 64);
  EXPECT_EQ(first, buf.bytes + 64);

  fixed_pool too_small(buf.bytes + 1, 63, 8, 64);
  EXPECT_EQ(too_small.capacity(), 0u);
  fixed_pool none(nullptr, 0, 16);
  EXPECT_EQ(none.capacity(), 0u);
  EXPECT_EQ(none.try_allocate(1, 1), nullptr);
}

TEST(FixedPool, ServesEveryPowerOfTwoAlignmentUpToItsBlockAlignment) {
  aligned_buffer buf;
  fixed_pool pool(buf.bytes + 8, sizeof(buf.bytes) - 8, 100, 4096);
  EXPECT_EQ(pool.block_size(), 4096u);
  for (std::size_t a = 1; a <= 4096; a *= 2) {
    void* p = pool.allocate(100, a);
    EXPECT_TRUE(memkit::detail::is_aligned(p, a)) << "alignment " << a;
  }
  EXPECT_EQ(pool.in_use(), 13u);
  EXPECT_THROW((void)pool.allocate(8, 8192), memkit::bad_alignment);
  EXPECT_EQ(pool.try_allocate(8, 8192), nullptr);
}

TEST(FixedPool, ZeroSizeRequestsGetDistinctBlocks) {
  aligned_buffer buf;
  fixed_pool pool(buf.bytes, 256, 16);
  void* a = pool.allocate(0, 1);
  void* b = pool.allocate(0);
  ASSERT_NE(a, nullptr);
  EXPECT_NE(a, b);
  pool.deallocate(a, 0, 1);
  pool.deallocate(b, 0);
  EXPECT_EQ(pool.in_use(), 0u);
}

TEST(FixedPool, RejectsOversizedAndBadlyAlignedRequests) {
  misuse_recorder rec;
  aligned_buffer buf;
  fixed_pool pool(buf.bytes, 256, 32, 16);
  EXPECT_THROW((void)pool.allocate(SIZE_MAX, 8), memkit::bad_size);
  EXPECT_EQ(pool.try_allocate(SIZE_MAX, 8), nullptr);
  EXPECT_THROW((void)pool.allocate(33, 8), memkit::bad_size);
  EXPECT_THROW((void)pool.allocate(16, 3), memkit::bad_alignment);
  EXPECT_THROW((void)pool.allocate(16, 32), memkit::bad_alignment);
  EXPECT_EQ(pool.try_allocate(16, 0), nullptr);
  EXPECT_EQ(pool.try_allocate(16, 24), nullptr);
  EXPECT_EQ(pool.in_use(), 0u);
  EXPECT_NE(pool.try_allocate(32, 16), nullptr);
  EXPECT_TRUE(rec.reports().empty());
}

TEST(FixedPool, ThrowsOutOfMemoryNamingItselfWhenExhausted) {
  aligned_buffer buf;
  fixed_pool pool(buf.bytes, 4 * 32, 32);
  for (int i = 0; i < 4; ++i) {
    EXPECT_NE(pool.try_allocate(32), nullptr);
  }
  EXPECT_EQ(pool.try_allocate(32), nullptr);
  try {
    (void)pool.allocate(24, 8);
    FAIL() << "allocate must throw when every block is in use";
  } catch (const memkit::out_of_memory& e) {
    EXPECT_STREQ(e.resource(), "memkit::fixed_pool");
    EXPECT_EQ(e.size(), 24u);
    EXPECT_EQ(e.alignment(), 8u);
    EXPECT_NE(std::string(e.what()).find("memkit::fixed_pool: out of memory"), std::string::npos);
  }
}

TEST(FixedPool, BlocksDoNotOverlapAndKeepTheirContents) {
  aligned_buffer buf;
  fixed_pool pool(buf.bytes + 3, 5000, 40, 8);
  std::vector<void*> blocks;
  while (void* p = pool.try_allocate(40, 8)) {
    fill(p, 40, static_cast<unsigned char>(blocks.size()));
    blocks.push_back(p);
  }
  ASSERT_EQ(blocks.size(), pool.capacity());
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    EXPECT_TRUE(holds(blocks[i], 40, static_cast<unsigned char>(i))) << "block " << i;
    EXPECT_TRUE(memkit::detail::in_range(blocks[i], buf.bytes + 3, 5000 - 39));
  }
}

TEST(FixedPool, ReusesTheMostRecentlyFreedBlockFirst) {
  aligned_buffer buf;
  fixed_pool pool(buf.bytes, 1024, 16);
  void* a = pool.allocate(16);
  void* b = pool.allocate(16);
  void* c = pool.allocate(16);
  pool.deallocate(a, 16);
  pool.deallocate(c, 16);
  EXPECT_EQ(pool.in_use(), 1u);
  EXPECT_EQ(pool.allocate(16), c);
  EXPECT_EQ(pool.allocate(16), a);
  EXPECT_EQ(pool.allocate(16), static_cast<char*>(c) + 16); // then the next untouched block
  EXPECT_EQ(pool.in_use(), 4u);
  pool.deallocate(b, 16);
}

TEST(FixedPool, OwnsExactlyTheStartsOfCarvedBlocks) {
  aligned_buffer buf;
  fixed_pool pool(buf.bytes, 1024, 24, 8);
  void* a = pool.allocate(24, 8);
  void* b = pool.allocate(24, 8);
  EXPECT_TRUE(pool.owns(a));
  EXPECT_TRUE(pool.owns(b));
  EXPECT_FALSE(pool.owns(static_cast<char*>(a) + 8));
  EXPECT_FALSE(pool.owns(static_cast<char*>(b) + 24)); // in storage, never handed out
  EXPECT_FALSE(pool.owns(buf.bytes + 1000));
  EXPECT_FALSE(pool.owns(nullptr));
  int local = 0;
  EXPECT_FALSE(pool.owns(&local));
  pool.deallocate(a, 24, 8);
  EXPECT_TRUE(pool.owns(a)); // free, but still managed by the pool
}

TEST(FixedPool, ResetMakesEveryBlockFreeAgain) {
  aligned_buffer buf;
  fixed_pool pool(buf.bytes, 8 * 64, 64);
  void* first = pool.allocate(64);
  while (pool.try_allocate(64) != nullptr) {
  }
  EXPECT_EQ(pool.in_use(), 8u);
  pool.reset();
  EXPECT_EQ(pool.in_use(), 0u);
  EXPECT_FALSE(pool.owns(first));
  EXPECT_EQ(pool.allocate(64), first);
  for (int i = 1; i < 8; ++i) {
    EXPECT_NE(pool.try_allocate(64), nullptr);
  }
  EXPECT_EQ(pool.try_allocate(64), nullptr);
}

#ifdef MEMKIT_TEST_HAS_MMAN
TEST(FixedPool, NeverTouchesStorageItHasNotHandedOut) {
  // A 1 GiB reservation of which only the first 64 KiB are accessible: writing anywhere else
  // (an eagerly built free list, say) faults.
  const std::size_t reserved = std::size_t{1} << 30;
  const std::size_t open = 64 * 1024;
  void* map =
      ::mmap(nullptr, reserved, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  ASSERT_NE(map, MAP_FAILED);
  ASSERT_EQ(::mprotect(map, open, PROT_READ | PROT_WRITE), 0);
  {
    fixed_pool pool(map, reserved, 64, 64);
    EXPECT_EQ(pool.capacity(), reserved / 64);
    std::vector<void*> blocks;
    for (std::size_t i = 0; i < open / 64; ++i) {
      blocks.push_back(pool.allocate(64, 64));
      fill(blocks.back(), 64, 0xAB);
    }
    for (void* p : blocks) {
      pool.deallocate(p, 64, 64);
    }
    pool.reset();
    for (std::size_t i = 0; i < open / 64; ++i) {
      EXPECT_EQ(pool.allocate(64, 64), static_cast<char*>(map) + i * 64);
    }
  }
  ::munmap(map, reserved);
}
#endif

TEST(FixedPool, ReportsForeignPointersAndKeepsItsState) {
  misuse_recorder rec;
  aligned_buffer buf;
  fixed_pool pool(buf.bytes, 1024, 32);
  void* a = pool.allocate(32);
  void* b = pool.allocate(32);
  alignas(std::max_align_t) std::byte local[64]{};
  pool.deallocate(local, 32);                       // outside the storage
  pool.deallocate(static_cast<char*>(a) + 8, 8, 8); // inside a block
  pool.deallocate(static_cast<char*>(b) + 32, 32);  // never handed out
  pool.deallocate(reinterpret_cast<void*>(memkit::detail::address(buf.bytes) - 32), 32);
  EXPECT_EQ(rec.count(misuse::foreign_pointer), 4u);
  ASSERT_EQ(rec.reports().size(), 4u);
  EXPECT_EQ(rec.reports()[0].pointer, local);
  EXPECT_STREQ(rec.reports()[0].resource, "memkit::fixed_pool");
  EXPECT_EQ(pool.in_use(), 2u);
  EXPECT_EQ(pool.allocate(32), static_cast<char*>(b) + 32);
}

TEST(FixedPool, ReportsSizeAndAlignmentMismatchesAndKeepsTheBlock) {
  misuse_recorder rec;
  aligned_buffer buf;
  fixed_pool pool(buf.bytes, 1024, 32, 16);
  void* a = pool.allocate(32, 16);
  pool.deallocate(a, 33, 16);
  EXPECT_EQ(rec.count(misuse::size_mismatch), 1u);
  pool.deallocate(a, 32, 32);
  pool.deallocate(a, 32, 3);
  EXPECT_EQ(rec.count(misuse::alignment_mismatch), 2u);
  EXPECT_EQ(rec.reports().size(), 3u);
  EXPECT_EQ(pool.in_use(), 1u);
  pool.deallocate(a, 32, 16);
  EXPECT_EQ(pool.in_use(), 0u);
  EXPECT_EQ(rec.reports().size(), 3u);
}

TEST(FixedPool, ReportsFreeingTheBlockAtTheHeadOfTheFreeListAsDoubleFree) {
  misuse_recorder rec;
  aligned_buffer buf;
  fixed_pool pool(buf.bytes, 1024, 16);
  void* a = pool.allocate(16);
  void* b = pool.allocate(16);
  pool.deallocate(a, 16);
  pool.deallocate(a, 16);
  ASSERT_EQ(rec.count(misuse::double_free), 1u);
  EXPECT_EQ(rec.reports()[0].pointer, a);
  EXPECT_EQ(pool.in_use(), 1u);
  // The free list still holds `a` once: it comes back once, then fresh blocks follow.
  EXPECT_EQ(pool.allocate(16), a);
  EXPECT_EQ(pool.allocate(16), static_cast<char*>(b) + 16);
}

TEST(FixedPool, DeallocatingNullDoesNothing) {
  misuse_recorder rec;
  aligned_buffer buf;
  fixed_pool pool(buf.bytes, 1024, 16);
  pool.deallocate(nullptr, 16);
  pool.deallocate(nullptr, 1000, 3);
  void* a = pool.allocate(16);
  pool.deallocate(nullptr, 16);
  EXPECT_TRUE(rec.reports().empty());
  EXPECT_EQ(pool.in_use(), 1u);
  pool.deallocate(a, 16);
}

TEST(FixedPool, DefaultMisuseHandlerAbortsNamingThePoolAndTheMistake) {
  aligned_buffer buf;
  fixed_pool pool(buf.bytes, 1024, 16);
  void* a = pool.allocate(16);
  pool.deallocate(a, 16);
  EXPECT_DEATH(pool.deallocate(a, 16), "memkit::fixed_pool: double free");
}

TEST(FixedPool, RandomAllocateAndFreeKeepsEveryBlockIntact) {
  const std::uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  misuse_recorder rec;
  aligned_buffer buf;
  fixed_pool pool(buf.bytes + 5, 20000, 24, 8);
  std::vector<std::pair<void*, unsigned char>> live;
  for (int step = 0; step < 20000; ++step) {
    if (live.empty() || rng() % 3 != 0) {
      // The size comes from the tag, so that only the bytes asked for are filled and checked
      // (AddressSanitizer builds poison the rest of the block).
      const auto tag = static_cast<unsigned char>(rng());
      void* p = pool.try_allocate(1 + tag % 24u, std::size_t{1} << (rng() % 4));
      if (p == nullptr) {
        ASSERT_EQ(live.size(), pool.capacity());
        continue;
      }
      ASSERT_TRUE(pool.owns(p));
      fill(p, 1 + tag % 24u, tag);
      live.emplace_back(p, tag);
    } else {
      const std::size_t i = rng() % live.size();
      ASSERT_TRUE(holds(live[i].first, 1 + live[i].second % 24u, live[i].second));
      pool.deallocate(live[i].first, 24, 8);
      live[i] = live.back();
      live.pop_back();
    }
    ASSERT_EQ(pool.in_use(), live.size());
  }
  for (const auto& [p, tag] : live) {
    ASSERT_TRUE(holds(p, 1 + tag % 24u, tag));
  }
  EXPECT_TRUE(rec.reports().empty());
}

TEST(InlineFixedPool, HoldsExactlyItsCapacityInsideTheObject) {
  inline_fixed_pool<20, 10, 4> pool;
  EXPECT_EQ(pool.capacity(), 10u);
  EXPECT_EQ(pool.block_size(), 24u);
  EXPECT_EQ(pool.block_alignment(), alignof(void*));
  const auto* self = reinterpret_cast<const unsigned char*>(&pool);
  std::vector<void*> blocks;
  while (void* p = pool.try_allocate(20, 4)) {
    EXPECT_TRUE(memkit::detail::in_range(p, self, sizeof pool));
    fill(p, 20, static_cast<unsigned char>(blocks.size()));
    blocks.push_back(p);
  }
  ASSERT_EQ(blocks.size(), 10u);
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    EXPECT_TRUE(holds(blocks[i], 20, static_cast<unsigned char>(i)));
  }
  EXPECT_THROW((void)pool.allocate(20, 4), memkit::out_of_memory);
}

TEST(InlineFixedPool, HonoursOverAlignedBlocks) {
  inline_fixed_pool<100, 3, 256> pool;
  EXPECT_EQ(pool.capacity(), 3u);
  EXPECT_EQ(pool.max_alignment(), 256u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(memkit::detail::is_aligned(pool.allocate(100, 256), 256));
  }
}

TEST(InlineFixedPool, WorksThroughAFixedPoolReference) {
  misuse_recorder rec;
  inline_fixed_pool<8, 2> pool;
  fixed_pool& base = pool;
  void* p = base.allocate(8);
  EXPECT_TRUE(pool.owns(p));
  base.deallocate(p, 8);
  base.deallocate(p, 8);
  EXPECT_EQ(rec.count(misuse::double_free), 1u);
  EXPECT_STREQ(base.name(), "memkit::fixed_pool");
}

} // namespace

namespace {

TEST(FixedPool, ConstructorRejectsImpossibleBlocks) {
  alignas(64) static unsigned char storage[1024];
  EXPECT_THROW(memkit::fixed_pool(storage, sizeof storage, 32, 3), memkit::bad_alignment);
  EXPECT_THROW(memkit::fixed_pool(storage, sizeof storage, 32, 0), memkit::bad_alignment);
  EXPECT_THROW(memkit::fixed_pool(storage, sizeof storage, SIZE_MAX, 8), memkit::bad_size);
  EXPECT_THROW(memkit::fixed_pool(storage, sizeof storage, memkit::unbounded_size + 1, 8),
               memkit::bad_size);
  memkit::fixed_pool zero(storage, sizeof storage, 0, 8); // served as the smallest block
  EXPECT_EQ(zero.block_size(), sizeof(void*));
  memkit::fixed_pool none(nullptr, 0, 32, 16); // no storage: always exhausted
  EXPECT_EQ(none.capacity(), 0u);
  EXPECT_THROW((void)none.allocate(32, 16), memkit::out_of_memory);
}

} // namespace
