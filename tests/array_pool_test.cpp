// SPDX-License-Identifier: BSL-1.0
#include "memkit/array_pool.hpp"

#include <cstdint>
#include <cstring>
#include <gtest/gtest.h>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#if __has_include(<sys/mman.h>)
#include <sys/mman.h>
#define MEMKIT_TEST_HAS_MMAN 1
#endif

#include "support/spy_resource.hpp"

namespace {

using memkit::misuse;
using memkit::test::misuse_recorder;
using memkit::test::spy_resource;
using spy_ref = memkit::resource_ref<spy_resource>;
using spy_pool = memkit::array_pool<spy_ref>;

static_assert(memkit::is_resource_v<memkit::array_pool<>>);
static_assert(memkit::has_owns_v<memkit::array_pool<>>);
static_assert(!std::is_copy_constructible_v<memkit::array_pool<>>);
static_assert(!std::is_move_constructible_v<memkit::array_pool<>>);

/// The address `n` bytes before `p`, computed without pointer arithmetic outside an array.
void* before(const void* p, std::size_t n) {
  return reinterpret_cast<void*>(memkit::detail::address(p) - n);
}

/// Fills every block of a pool of `Block`-sized blocks with its index, then checks that the
/// blocks tile the storage exactly and that no write disturbed another block.
template <class Block>
void fill_completely_and_verify() {
  spy_resource spy;
  constexpr std::size_t capacity = 3000;
  {
    spy_pool pool(sizeof(Block), capacity, memkit::array_pool<>::natural_alignment(sizeof(Block)),
                  spy_ref(spy));
    EXPECT_EQ(pool.block_size(), sizeof(Block));
    EXPECT_EQ(pool.block_alignment(), sizeof(Block));
    std::vector<Block*> blocks;
    while (void* p = pool.try_allocate(sizeof(Block), alignof(Block))) {
      auto* b = static_cast<Block*>(p);
      *b = static_cast<Block>(blocks.size() *
                              2654435761u); // Knuth's multiplicative hash spreads bits
      blocks.push_back(b);
    }
    ASSERT_EQ(blocks.size(), capacity);
    EXPECT_EQ(pool.in_use(), capacity);
    EXPECT_THROW((void)pool.allocate(sizeof(Block), alignof(Block)), memkit::out_of_memory);
    std::set<Block*> distinct(blocks.begin(), blocks.end());
    EXPECT_EQ(distinct.size(), capacity);
    EXPECT_EQ(*distinct.rbegin() - *distinct.begin(), static_cast<std::ptrdiff_t>(capacity - 1));
    for (std::size_t i = 0; i < capacity; ++i) {
      ASSERT_EQ(*blocks[i], static_cast<Block>(i * 2654435761u)) << "block " << i;
      ASSERT_TRUE(pool.owns(blocks[i]));
    }
    for (Block* b : blocks) {
      pool.deallocate(b, sizeof(Block), alignof(Block));
    }
    EXPECT_EQ(pool.in_use(), 0u);
    EXPECT_EQ(spy.allocations(), 2u);
  }
  EXPECT_EQ(spy.blocks_in_use(), 0u);
  EXPECT_TRUE(spy.errors().empty());
}

TEST(ArrayPool, FillsOneByteBlocksCompletely) { fill_completely_and_verify<std::uint8_t>(); }
TEST(ArrayPool, FillsTwoByteBlocksCompletely) { fill_completely_and_verify<std::uint16_t>(); }
TEST(ArrayPool, FillsFourByteBlocksCompletely) { fill_completely_and_verify<std::uint32_t>(); }

TEST(ArrayPool, NaturalAlignmentIsTheLowestSetBitCappedAtTheDefault) {
  using pool = memkit::array_pool<>;
  EXPECT_EQ(pool::natural_alignment(1), 1u);
  EXPECT_EQ(pool::natural_alignment(3), 1u);
  EXPECT_EQ(pool::natural_alignment(6), 2u);
  EXPECT_EQ(pool::natural_alignment(12), 4u);
  EXPECT_EQ(pool::natural_alignment(24), 8u);
  EXPECT_EQ(pool::natural_alignment(4096), memkit::default_alignment);
  pool p(12, 10);
  EXPECT_EQ(p.block_size(), 12u);
  EXPECT_EQ(p.max_alignment(), 4u);
  pool rounded(5, 10, 4);
  EXPECT_EQ(rounded.block_size(), 8u);
  EXPECT_EQ(rounded.max_size(), 8u);
}

TEST(ArrayPool, AllocatesNothingUntilTheFirstAllocation) {
  spy_resource spy;
  spy_pool pool(8, 100, 8, spy_ref(spy));
  EXPECT_EQ(spy.calls(), 0u);
  EXPECT_FALSE(pool.owns(nullptr));
  void* p = pool.allocate(8, 8);
  EXPECT_EQ(spy.allocations(), 2u);
  pool.deallocate(p, 8, 8);
  (void)pool.allocate(8, 8);
  EXPECT_EQ(spy.calls(), 2u);
}

TEST(ArrayPool, ReturnsBothArraysWithTheirExactSizesAndAlignments) {
  spy_resource spy;
  {
    spy_pool pool(24, 1000, 8, spy_ref(spy));
    (void)pool.allocate(24, 8);
    EXPECT_EQ(spy.blocks_in_use(), 2u);
    EXPECT_EQ(spy.bytes_in_use(), 24u * 1000 + 4u * 1001); // storage + stack with its sentinel
    pool.release();
    EXPECT_EQ(spy.blocks_in_use(), 0u);
    EXPECT_EQ(pool.in_use(), 0u);
    (void)pool.allocate(24, 8); // acquires again after a release
    EXPECT_EQ(spy.allocations(), 4u);
  }
  EXPECT_EQ(spy.blocks_in_use(), 0u);
  EXPECT_EQ(spy.deallocations(), 4u);
  EXPECT_TRUE(spy.errors().empty());
}

TEST(ArrayPool, ReserveAcquiresBothArraysNowSoAllocationsMakeNoUpstreamCall) {
  spy_resource spy;
  spy_pool pool(4, 64, 4, spy_ref(spy));
  pool.reserve();
  EXPECT_EQ(spy.allocations(), 2u);
  pool.reserve();
  for (int i = 0; i < 64; ++i) {
    (void)pool.allocate(4, 4);
  }
  EXPECT_EQ(spy.calls(), 2u);
  spy_resource broke(0);
  spy_pool starved(4, 64, 4, spy_ref(broke));
  EXPECT_THROW(starved.reserve(), memkit::out_of_memory);
  spy_pool empty(4, 0, 4, spy_ref(broke));
  empty.reserve();
  EXPECT_EQ(empty.try_allocate(4, 4), nullptr);
  EXPECT_EQ(broke.calls(), 1u);
}

TEST(ArrayPool, FailsCleanlyWhenTheUpstreamCannotSupplyTheArrays) {
  spy_resource spy(100 * 8); // the storage fits, the stack does not
  spy_pool pool(8, 100, 8, spy_ref(spy));
  EXPECT_EQ(pool.try_allocate(8, 8), nullptr);
  EXPECT_EQ(spy.blocks_in_use(), 0u);
  try {
    (void)pool.allocate(8, 8);
    FAIL() << "allocate must throw";
  } catch (const memkit::out_of_memory& e) {
    EXPECT_STREQ(e.resource(), "memkit::array_pool");
  }
  spy.set_budget(memkit::unbounded_size);
  EXPECT_NE(pool.try_allocate(8, 8), nullptr);
  memkit::array_pool<memkit::null_resource> never(8, 10, 8);
  EXPECT_THROW((void)never.allocate(8, 8), memkit::out_of_memory);
  EXPECT_TRUE(spy.errors().empty());
}

TEST(ArrayPool, ConstructorRejectsImpossibleGeometry) {
  const std::size_t too_many = std::size_t{std::numeric_limits<std::uint32_t>::max()} + 1;
  EXPECT_THROW(memkit::array_pool<>(1, too_many), memkit::bad_size);
  EXPECT_THROW(memkit::array_pool<>(SIZE_MAX / 2, 3), memkit::bad_size);
  EXPECT_THROW(memkit::array_pool<>(SIZE_MAX, 1, 16), memkit::bad_size);
  EXPECT_THROW(memkit::array_pool<>(8, 10, 3), memkit::bad_alignment);
  EXPECT_THROW(memkit::array_pool<>(8, 10, 0), memkit::bad_alignment);
  memkit::array_pool<memkit::null_resource> largest(1, std::numeric_limits<std::uint32_t>::max());
  EXPECT_EQ(largest.capacity(), std::numeric_limits<std::uint32_t>::max());
}

TEST(ArrayPool, ServesEveryPowerOfTwoAlignmentUpToItsBlockAlignment) {
  spy_resource spy;
  spy_pool pool(4096, 13, 4096, spy_ref(spy));
  for (std::size_t a = 1; a <= 4096; a *= 2) {
    void* p = pool.allocate(1000, a);
    EXPECT_TRUE(memkit::detail::is_aligned(p, a)) << "alignment " << a;
  }
  EXPECT_THROW((void)pool.allocate(8, 8192), memkit::bad_alignment);
  EXPECT_EQ(pool.try_allocate(8, 8192), nullptr);
}

TEST(ArrayPool, RejectsOversizedAndBadlyAlignedRequests) {
  memkit::array_pool<> pool(6, 10);
  EXPECT_THROW((void)pool.allocate(SIZE_MAX, 1), memkit::bad_size);
  EXPECT_EQ(pool.try_allocate(SIZE_MAX, 1), nullptr);
  EXPECT_THROW((void)pool.allocate(7, 1), memkit::bad_size);
  EXPECT_THROW((void)pool.allocate(6, 4), memkit::bad_alignment);
  EXPECT_THROW((void)pool.allocate(6), memkit::bad_alignment); // default_alignment > 2
  EXPECT_EQ(pool.try_allocate(6, 0), nullptr);
  EXPECT_EQ(pool.try_allocate(6, 3), nullptr);
  EXPECT_EQ(pool.in_use(), 0u);
}

TEST(ArrayPool, ZeroSizeRequestsGetDistinctBlocks) {
  memkit::array_pool<> pool(0, 4);
  EXPECT_EQ(pool.block_size(), 1u);
  void* a = pool.allocate(0, 1);
  void* b = pool.allocate(0, 1);
  EXPECT_NE(a, b);
  pool.deallocate(a, 0, 1);
  pool.deallocate(b, 0, 1);
  EXPECT_EQ(pool.in_use(), 0u);
}

TEST(ArrayPool, OwnsExactlyTheStartsOfCarvedBlocks) {
  for (std::size_t size : {3u, 12u, 24u, 64u}) {
    memkit::array_pool<> pool(size, 100, 1);
    auto* a = static_cast<char*>(pool.allocate(size, 1));
    auto* b = static_cast<char*>(pool.allocate(size, 1));
    EXPECT_TRUE(pool.owns(a)) << size;
    EXPECT_TRUE(pool.owns(b)) << size;
    EXPECT_FALSE(pool.owns(a + 1)) << size;
    EXPECT_FALSE(pool.owns(b + size)) << size; // in storage, never handed out
    EXPECT_FALSE(pool.owns(before(a, size))) << size;
    EXPECT_FALSE(pool.owns(nullptr)) << size;
    pool.deallocate(a, size, 1);
    EXPECT_TRUE(pool.owns(a)) << size;
    pool.reset();
    EXPECT_FALSE(pool.owns(a)) << size;
  }
}

TEST(ArrayPool, ReusesTheMostRecentlyFreedBlockFirst) {
  memkit::array_pool<> pool(2, 16);
  void* a = pool.allocate(2, 2);
  void* b = pool.allocate(2, 2);
  void* c = pool.allocate(2, 2);
  pool.deallocate(a, 2, 2);
  pool.deallocate(c, 2, 2);
  EXPECT_EQ(pool.in_use(), 1u);
  EXPECT_EQ(pool.allocate(2, 2), c);
  EXPECT_EQ(pool.allocate(2, 2), a);
  EXPECT_EQ(pool.allocate(2, 2), static_cast<char*>(c) + 2);
  pool.deallocate(b, 2, 2);
}

TEST(ArrayPool, ResetFreesEveryBlockAndKeepsBothArrays) {
  spy_resource spy;
  spy_pool pool(4, 8, 4, spy_ref(spy));
  void* first = pool.allocate(4, 4);
  while (pool.try_allocate(4, 4) != nullptr) {
  }
  EXPECT_EQ(pool.in_use(), 8u);
  pool.reset();
  EXPECT_EQ(pool.in_use(), 0u);
  EXPECT_EQ(pool.allocate(4, 4), first);
  for (int i = 1; i < 8; ++i) {
    EXPECT_NE(pool.try_allocate(4, 4), nullptr);
  }
  EXPECT_EQ(pool.try_allocate(4, 4), nullptr);
  EXPECT_EQ(spy.allocations(), 2u);
  EXPECT_EQ(spy.blocks_in_use(), 2u);
}

#ifdef MEMKIT_TEST_HAS_MMAN
/// An upstream whose blocks are reserved address space with only the first page accessible, so a
/// strategy that writes memory it has not handed out faults.
class first_page_only_resource {
public:
  const char* name() const noexcept { return "first_page_only_resource"; }
  std::size_t max_size() const noexcept { return memkit::unbounded_size; }
  std::size_t max_alignment() const noexcept { return memkit::page_size; }
  void* allocate(std::size_t bytes, std::size_t alignment = memkit::default_alignment) {
    return memkit::detail::allocate_or_throw(*this, bytes, alignment);
  }
  void* try_allocate(std::size_t bytes,
                     std::size_t alignment = memkit::default_alignment) noexcept {
    if (alignment > memkit::page_size) {
      return nullptr;
    }
    void* p = ::mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED || ::mprotect(p, memkit::page_size, PROT_READ | PROT_WRITE) != 0) {
      return nullptr;
    }
    return p;
  }
  void deallocate(void* p, std::size_t bytes, std::size_t = memkit::default_alignment) noexcept {
    ::munmap(p, bytes);
  }
};

TEST(ArrayPool, NeverTouchesStorageItHasNotHandedOut) {
  const std::size_t capacity = std::size_t{1} << 28; // 256 MiB of storage, 1 GiB of stack
  memkit::array_pool<first_page_only_resource> pool(1, capacity);
  std::vector<void*> blocks;
  for (std::size_t i = 0; i < memkit::page_size; ++i) {
    blocks.push_back(pool.allocate(1, 1));
    std::memset(blocks.back(), 0x5A, 1);
  }
  // One page of stack holds page_size / 4 - 1 indices besides the sentinel.
  for (std::size_t i = 0; i < memkit::page_size / 4 - 1; ++i) {
    pool.deallocate(blocks[i], 1, 1);
  }
  EXPECT_EQ(pool.in_use(), memkit::page_size - (memkit::page_size / 4 - 1));
  pool.reset();
  EXPECT_EQ(pool.allocate(1, 1), blocks[0]);
}
#endif

TEST(ArrayPool, ReportsForeignPointersAndKeepsItsState) {
  misuse_recorder rec;
  memkit::array_pool<> pool(12, 100);
  int local = 0;
  pool.deallocate(&local, sizeof local, alignof(int)); // before the arrays exist
  auto* a = static_cast<char*>(pool.allocate(12, 4));
  auto* b = static_cast<char*>(pool.allocate(12, 4));
  pool.deallocate(&local, sizeof local, alignof(int)); // outside the storage
  pool.deallocate(a + 4, 8, 4);                        // inside a block
  pool.deallocate(b + 12, 12, 4);                      // never handed out
  pool.deallocate(before(a, 12), 12, 4);               // just before the storage
  EXPECT_EQ(rec.count(misuse::foreign_pointer), 5u);
  ASSERT_EQ(rec.reports().size(), 5u);
  EXPECT_STREQ(rec.reports()[0].resource, "memkit::array_pool");
  EXPECT_EQ(rec.reports()[2].pointer, a + 4);
  EXPECT_EQ(pool.in_use(), 2u);
  EXPECT_EQ(pool.allocate(12, 4), b + 12);
}

TEST(ArrayPool, ReportsSizeAndAlignmentMismatchesAndKeepsTheBlock) {
  misuse_recorder rec;
  memkit::array_pool<> pool(4, 10);
  void* a = pool.allocate(4, 4);
  pool.deallocate(a, 5, 4);
  EXPECT_EQ(rec.count(misuse::size_mismatch), 1u);
  pool.deallocate(a, 4, 8);
  pool.deallocate(a, 4, 0);
  EXPECT_EQ(rec.count(misuse::alignment_mismatch), 2u);
  EXPECT_EQ(pool.in_use(), 1u);
  pool.deallocate(a, 4, 4);
  EXPECT_EQ(pool.in_use(), 0u);
  EXPECT_EQ(rec.reports().size(), 3u);
}

TEST(ArrayPool, ReportsFreeingTheBlockOnTopOfTheFreeStackAsDoubleFree) {
  misuse_recorder rec;
  memkit::array_pool<> pool(1, 10);
  auto* a = static_cast<char*>(pool.allocate(1, 1));
  auto* b = static_cast<char*>(pool.allocate(1, 1));
  pool.deallocate(a, 1, 1);
  pool.deallocate(a, 1, 1);
  ASSERT_EQ(rec.count(misuse::double_free), 1u);
  EXPECT_EQ(rec.reports()[0].pointer, a);
  EXPECT_EQ(pool.in_use(), 1u);
  EXPECT_EQ(pool.allocate(1, 1), a);
  EXPECT_EQ(pool.allocate(1, 1), b + 1);
}

TEST(ArrayPool, DeallocatingNullDoesNothing) {
  misuse_recorder rec;
  memkit::array_pool<> pool(8, 10);
  pool.deallocate(nullptr, 8, 8);
  void* a = pool.allocate(8, 8);
  pool.deallocate(nullptr, 8, 8);
  pool.deallocate(nullptr, 100, 3);
  EXPECT_TRUE(rec.reports().empty());
  EXPECT_EQ(pool.in_use(), 1u);
  pool.deallocate(a, 8, 8);
}

TEST(ArrayPool, DefaultMisuseHandlerAbortsNamingThePoolAndTheMistake) {
  memkit::array_pool<> pool(8, 10);
  void* a = pool.allocate(8, 8);
  EXPECT_DEATH(pool.deallocate(a, 9, 8), "memkit::array_pool: size mismatch");
  pool.deallocate(a, 8, 8);
}

TEST(ArrayPool, RandomAllocateAndFreeKeepsEveryBlockIntact) {
  const std::uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  misuse_recorder rec;
  spy_resource spy;
  {
    spy_pool pool(3, 500, 1, spy_ref(spy));
    std::vector<std::pair<unsigned char*, unsigned char>> live;
    for (int step = 0; step < 20000; ++step) {
      if (live.empty() || rng() % 3 != 0) {
        auto* p = static_cast<unsigned char*>(pool.try_allocate(3, 1));
        if (p == nullptr) {
          ASSERT_EQ(live.size(), pool.capacity());
          continue;
        }
        const auto tag = static_cast<unsigned char>(rng());
        std::memset(p, tag, 3);
        live.emplace_back(p, tag);
      } else {
        const std::size_t i = rng() % live.size();
        const auto [p, tag] = live[i];
        ASSERT_TRUE(p[0] == tag && p[1] == tag && p[2] == tag);
        pool.deallocate(p, 3, 1);
        live[i] = live.back();
        live.pop_back();
      }
      ASSERT_EQ(pool.in_use(), live.size());
    }
  }
  EXPECT_TRUE(rec.reports().empty());
  EXPECT_EQ(spy.blocks_in_use(), 0u);
  EXPECT_TRUE(spy.errors().empty());
}

} // namespace
