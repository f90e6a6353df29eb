// SPDX-License-Identifier: BSL-1.0
#include "memkit/arena.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <gtest/gtest.h>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "support/spy_resource.hpp"

namespace {

using memkit::test::misuse_recorder;
using memkit::test::spy_resource;
using spy_ref = memkit::resource_ref<spy_resource>;
using spy_arena = memkit::arena<spy_ref>;

static_assert(memkit::is_resource_v<memkit::arena<>>);
static_assert(memkit::is_resource_v<spy_arena>);
static_assert(memkit::has_owns_v<memkit::arena<>>);
static_assert(!std::is_copy_constructible_v<memkit::arena<>>);
static_assert(!std::is_move_constructible_v<memkit::arena<>>);

/// The blocks one cycle of a request loop asks for: small and large, every alignment 1..4096.
struct request {
  std::size_t size;
  std::size_t alignment;
};
std::vector<request> mixed_requests() {
  std::vector<request> r;
  for (std::size_t i = 0; i < 200; ++i) {
    r.push_back({1 + (i * 37) % 300, std::size_t{1} << (i % 13)});
  }
  r.push_back({20000, 64}); // larger than any geometric block of the tests below
  r.push_back({7, 1});
  return r;
}

/// Fills each block with a byte derived from its index, then checks no block overwrote another.
void fill_and_verify(const std::vector<std::pair<void*, std::size_t>>& blocks) {
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    std::memset(blocks[i].first, static_cast<int>(i & 0xff), blocks[i].second);
  }
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    const auto* bytes = static_cast<const unsigned char*>(blocks[i].first);
    for (std::size_t j = 0; j < blocks[i].second; ++j) {
      ASSERT_EQ(bytes[j], i & 0xff) << "block " << i << " overwritten at byte " << j;
    }
  }
}

TEST(Arena, HonoursEveryPowerOfTwoAlignmentWithoutOverlap) {
  spy_resource spy;
  {
    spy_arena a{spy_ref(spy)};
    std::vector<std::pair<void*, std::size_t>> blocks;
    for (std::size_t align = 1; align <= 4096; align *= 2) {
      for (std::size_t size : {std::size_t{1}, std::size_t{24}, std::size_t{5000}}) {
        void* p = a.allocate(size, align);
        ASSERT_NE(p, nullptr);
        EXPECT_TRUE(memkit::detail::is_aligned(p, align)) << "alignment " << align;
        EXPECT_TRUE(a.owns(p));
        blocks.emplace_back(p, size);
      }
    }
    fill_and_verify(blocks);
    EXPECT_GE(a.max_alignment(), memkit::page_size);
  }
  EXPECT_EQ(spy.blocks_in_use(), 0u);
  EXPECT_TRUE(spy.errors().empty());
}

TEST(Arena, ZeroSizeRequestsGetDistinctBlocks) {
  memkit::arena<> a;
  void* p = a.allocate(0, 1);
  void* q = a.allocate(0, 1);
  ASSERT_NE(p, nullptr);
  EXPECT_NE(p, q);
  EXPECT_TRUE(a.owns(p));
  EXPECT_EQ(a.used(), 2u);
  a.deallocate(q, 0, 1); // the most recent zero-size block is reclaimed like a 1-byte one
  EXPECT_EQ(a.used(), 1u);
}

TEST(Arena, RejectsImpossibleSizesAndInvalidAlignments) {
  spy_resource spy;
  spy_arena a{spy_ref(spy)};
  EXPECT_EQ(a.try_allocate(SIZE_MAX, 8), nullptr);
  EXPECT_THROW((void)a.allocate(SIZE_MAX, 8), memkit::bad_size);
  EXPECT_EQ(a.try_allocate(memkit::unbounded_size - 8, 4096), nullptr); // padding overflows
  EXPECT_EQ(a.try_allocate(16, 3), nullptr);
  EXPECT_THROW((void)a.allocate(16, 3), memkit::bad_alignment);
  EXPECT_THROW((void)a.allocate(16, 0), memkit::bad_alignment);
  EXPECT_EQ(spy.allocations(), 0u) << "impossible requests must not reach the upstream";
}

TEST(Arena, AllocatesNothingUntilTheFirstRequest) {
  spy_resource spy;
  spy_arena a{spy_ref(spy)};
  EXPECT_EQ(spy.calls(), 0u);
  EXPECT_EQ(a.used(), 0u);
  EXPECT_EQ(a.remaining(), 0u);
  (void)a.allocate(8);
  EXPECT_EQ(spy.calls(), 1u);
  EXPECT_EQ(spy.bytes_in_use(), memkit::arena_options{}.first_block_size);
}

TEST(Arena, GrowsBlocksGeometricallyUpToTheMaximum) {
  spy_resource spy;
  spy_arena a{spy_ref(spy), memkit::arena_options{256, 1024}};
  std::vector<std::size_t> totals;
  for (int i = 0; i < 40; ++i) {
    (void)a.allocate(100, 8);
    if (totals.empty() || totals.back() != spy.bytes_in_use()) {
      totals.push_back(spy.bytes_in_use());
    }
  }
  ASSERT_GE(totals.size(), 5u);
  const std::vector<std::size_t> expected{256, 256 + 512, 256 + 512 + 1024, 256 + 512 + 2048,
                                          256 + 512 + 3072};
  EXPECT_TRUE(std::equal(expected.begin(), expected.end(), totals.begin()));
}

TEST(Arena, GivesOversizedRequestsABlockOfTheirOwn) {
  spy_resource spy;
  spy_arena a{spy_ref(spy), memkit::arena_options{256, 1024}};
  (void)a.allocate(8); // first block: 256
  std::size_t before = spy.bytes_in_use();
  void* big = a.allocate(10000, 8);
  const std::size_t own = spy.bytes_in_use() - before;
  EXPECT_GE(own, 10000u);
  EXPECT_LE(own, 10000u + 64) << "a block of its own size plus the header";
  EXPECT_TRUE(a.owns(big));
  EXPECT_EQ(a.remaining(), 0u);

  before = spy.bytes_in_use();
  (void)a.allocate(8);
  EXPECT_EQ(spy.bytes_in_use() - before, 512u) << "an oversized block does not advance growth";

  before = spy.bytes_in_use();
  void* aligned = a.allocate(10000, 4096);
  EXPECT_TRUE(memkit::detail::is_aligned(aligned, 4096));
  EXPECT_LE(spy.bytes_in_use() - before, 10000u + 4096 + 64) << "plus the alignment";
}

TEST(Arena, ReturnsEveryUpstreamBlockOnReleaseAndDestruction) {
  spy_resource spy;
  {
    spy_arena a{spy_ref(spy), memkit::arena_options{256, 4096}};
    for (const request& r : mixed_requests()) {
      (void)a.allocate(r.size, r.alignment);
    }
    ASSERT_GT(spy.blocks_in_use(), 3u);
    a.release();
    EXPECT_EQ(spy.blocks_in_use(), 0u);
    EXPECT_EQ(a.used(), 0u);
    for (const request& r : mixed_requests()) {
      (void)a.allocate(r.size, r.alignment);
    }
    a.reset(); // kept blocks are returned by the destructor too
  }
  EXPECT_EQ(spy.blocks_in_use(), 0u);
  EXPECT_EQ(spy.deallocations(), spy.allocations());
  EXPECT_TRUE(spy.errors().empty()) << spy.errors().front();
}

TEST(Arena, ResetKeepsBlocksSoASteadyCycleMakesNoUpstreamCalls) {
  spy_resource spy;
  alignas(64) std::array<std::byte, 512> buffer{};
  spy_arena a{buffer.data(), buffer.size(), spy_ref(spy), memkit::arena_options{256, 4096}};
  std::vector<void*> first_cycle;
  std::size_t calls_after_first_cycle = 0;
  for (int cycle = 0; cycle < 5; ++cycle) {
    std::vector<void*> blocks;
    for (const request& r : mixed_requests()) {
      blocks.push_back(a.allocate(r.size, r.alignment));
    }
    if (cycle == 0) {
      first_cycle = blocks;
      calls_after_first_cycle = spy.calls();
    } else {
      EXPECT_EQ(blocks, first_cycle) << "cycle " << cycle << " laid out differently";
    }
    EXPECT_EQ(spy.calls(), calls_after_first_cycle) << "cycle " << cycle;
    const std::size_t in_use = spy.blocks_in_use();
    a.reset();
    EXPECT_EQ(a.used(), 0u);
    EXPECT_EQ(spy.blocks_in_use(), in_use) << "reset keeps the upstream blocks";
    EXPECT_FALSE(a.owns(blocks.back()));
  }
  EXPECT_GT(calls_after_first_cycle, 0u);
}

TEST(Arena, UsedAndRemainingCountBytesHandedOutIncludingPadding) {
  alignas(16) std::array<std::byte, 256> buffer{};
  memkit::arena<memkit::null_resource> a(buffer.data(), buffer.size());
  (void)a.allocate(1, 1);
  (void)a.allocate(8, 8); // 7 bytes of padding
  EXPECT_EQ(a.used(), 16u);
  EXPECT_EQ(a.remaining(), 240u);
  (void)a.allocate(0, 16);
  EXPECT_EQ(a.used(), 17u);
}

TEST(Arena, UsesTheCallerBufferFirstAndNeverFreesIt) {
  spy_resource spy;
  alignas(16) std::array<std::byte, 256> buffer{};
  std::vector<void*> blocks;
  {
    spy_arena a{buffer.data(), buffer.size(), spy_ref(spy)};
    for (int i = 0; i < 16; ++i) {
      blocks.push_back(a.allocate(16, 16));
      EXPECT_TRUE(memkit::detail::in_range(blocks.back(), buffer.data(), buffer.size()));
    }
    EXPECT_EQ(spy.calls(), 0u);
    EXPECT_EQ(a.remaining(), 0u);
    void* from_upstream = a.allocate(16, 16);
    EXPECT_FALSE(memkit::detail::in_range(from_upstream, buffer.data(), buffer.size()));
    EXPECT_EQ(spy.blocks_in_use(), 1u);
    for (void* p : blocks) {
      EXPECT_TRUE(a.owns(p));
    }
    EXPECT_TRUE(a.owns(from_upstream));
    a.release();
    EXPECT_EQ(spy.blocks_in_use(), 0u);
    EXPECT_EQ(a.allocate(16, 16), buffer.data()) << "after release the buffer is used again";
  }
  EXPECT_EQ(spy.blocks_in_use(), 0u);
  EXPECT_TRUE(spy.errors().empty()) << "the caller buffer must never reach the upstream";
}

TEST(Arena, NullUpstreamFailsLoudlyNamingTheArena) {
  alignas(16) std::array<std::byte, 128> buffer{};
  memkit::arena<memkit::null_resource> a(buffer.data(), buffer.size());
  (void)a.allocate(100, 8);
  EXPECT_EQ(a.try_allocate(64, 8), nullptr);
  try {
    (void)a.allocate(64, 8);
    FAIL() << "allocate must throw";
  } catch (const memkit::out_of_memory& e) {
    EXPECT_STREQ(e.resource(), "memkit::arena");
    EXPECT_EQ(e.size(), 64u);
    EXPECT_NE(std::string(e.what()).find("memkit::arena"), std::string::npos);
  }
  memkit::arena<memkit::null_resource> empty;
  EXPECT_THROW((void)empty.allocate(1, 1), memkit::out_of_memory);
}

TEST(Arena, ThrowsOutOfMemoryWhenTheUpstreamIsExhausted) {
  spy_resource spy(300);
  spy_arena a{spy_ref(spy), memkit::arena_options{256, 1024}};
  (void)a.allocate(200, 8);
  EXPECT_EQ(a.try_allocate(200, 8), nullptr);
  EXPECT_THROW((void)a.allocate(200, 8), memkit::out_of_memory);
  EXPECT_EQ(spy.blocks_in_use(), 1u);
}

TEST(Arena, AsksForAnExactBlockWhenTheUpstreamRefusesAFullOne) {
  spy_resource spy(600);
  spy_arena a{spy_ref(spy), memkit::arena_options{1024, 1024}};
  void* p = a.allocate(100, 8);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(spy.failures(), 1u);
  EXPECT_GE(spy.bytes_in_use(), 100u);
  EXPECT_LE(spy.bytes_in_use(), 100u + 64);
}

TEST(Arena, DeallocateReclaimsOnlyTheMostRecentBlock) {
  alignas(16) std::array<std::byte, 256> buffer{};
  memkit::arena<memkit::null_resource> a(buffer.data(), buffer.size());
  void* first = a.allocate(16, 16);
  void* second = a.allocate(16, 16);
  a.deallocate(first, 16, 16);
  EXPECT_EQ(a.used(), 32u) << "an older block stays in use";
  a.deallocate(second, 8, 16);
  EXPECT_EQ(a.used(), 32u) << "a wrong size is not the most recent block";
  a.deallocate(second, 16, 16);
  EXPECT_EQ(a.used(), 16u);
  EXPECT_EQ(a.allocate(16, 16), second);
  int x = 0;
  a.deallocate(&x, sizeof x, alignof(int));
  a.deallocate(nullptr, 16, 16);
  EXPECT_EQ(a.used(), 32u);
}

TEST(Arena, OwnsIsExactOverTheBufferAndEveryBlock) {
  spy_resource spy;
  alignas(16) std::array<std::byte, 64> buffer{};
  spy_arena a{buffer.data(), buffer.size(), spy_ref(spy), memkit::arena_options{256, 256}};
  std::vector<void*> blocks;
  for (int i = 0; i < 40; ++i) {
    blocks.push_back(a.allocate(48, 16));
  }
  ASSERT_GT(spy.blocks_in_use(), 3u);
  for (void* p : blocks) {
    EXPECT_TRUE(a.owns(p));
    EXPECT_TRUE(a.owns(static_cast<char*>(p) + 47));
  }
  int x = 0;
  EXPECT_FALSE(a.owns(&x));
  EXPECT_FALSE(a.owns(nullptr));
  EXPECT_FALSE(a.owns(buffer.data() + 48)) << "the buffer tail was never handed out";
  void* next = a.allocate(16, 16);
  a.deallocate(next, 16, 16);
  EXPECT_FALSE(a.owns(next)) << "reclaimed memory is no longer owned";
}

TEST(Arena, RollbackFreesEverythingAllocatedAfterTheMarker) {
  alignas(16) std::array<std::byte, 256> buffer{};
  memkit::arena<memkit::null_resource> a(buffer.data(), buffer.size());
  (void)a.allocate(16, 16);
  const memkit::arena_marker m = a.marker();
  void* p = a.allocate(32, 16);
  (void)a.allocate(64, 16);
  EXPECT_EQ(a.used(), 112u);
  a.rollback(m);
  EXPECT_EQ(a.used(), 16u);
  EXPECT_FALSE(a.owns(p));
  EXPECT_EQ(a.allocate(32, 16), p);
  a.rollback(m); // the same marker can be used again
  EXPECT_EQ(a.used(), 16u);
}

TEST(Arena, RollbackKeepsBlocksObtainedAfterTheMarkerForReuse) {
  spy_resource spy;
  {
    spy_arena a{spy_ref(spy), memkit::arena_options{256, 1024}};
    (void)a.allocate(100, 8);
    const memkit::arena_marker m = a.marker();
    const std::size_t used_at_marker = a.used();
    std::size_t calls = 0;
    std::vector<void*> first_round;
    for (int round = 0; round < 3; ++round) {
      std::vector<void*> blocks;
      for (const request& r : mixed_requests()) {
        blocks.push_back(a.allocate(r.size, r.alignment));
      }
      if (round == 0) {
        calls = spy.calls();
        first_round = blocks;
      }
      EXPECT_EQ(spy.calls(), calls) << "round " << round << " went to the upstream";
      EXPECT_EQ(blocks, first_round);
      const std::size_t kept = spy.blocks_in_use();
      a.rollback(m);
      EXPECT_EQ(a.used(), used_at_marker);
      EXPECT_EQ(spy.blocks_in_use(), kept);
      EXPECT_FALSE(a.owns(blocks.front()));
    }
  }
  EXPECT_EQ(spy.blocks_in_use(), 0u);
  EXPECT_TRUE(spy.errors().empty());
}

TEST(Arena, RollbackReportsMarkersItCannotHonourAndKeepsItsState) {
  misuse_recorder rec;
  spy_resource spy;
  spy_arena a{spy_ref(spy), memkit::arena_options{256, 1024}};
  spy_arena other{spy_ref(spy)};
  (void)a.allocate(100, 8);
  const memkit::arena_marker early = a.marker();
  (void)a.allocate(50, 8);
  const memkit::arena_marker same_block = a.marker();
  for (int i = 0; i < 10; ++i) {
    (void)a.allocate(200, 8);
  }
  const memkit::arena_marker later_block = a.marker();
  (void)a.allocate(8, 8);
  a.rollback(early);
  const std::size_t used = a.used();
  void* next = a.try_allocate(1, 1);
  a.deallocate(next, 1, 1);

  a.rollback(same_block);             // ahead of the top, in the current block
  a.rollback(later_block);            // ahead of the top, in a block rolled back since
  a.rollback(other.marker());         // another arena's
  a.rollback(memkit::arena_marker{}); // nobody's
  EXPECT_EQ(rec.count(memkit::misuse::bad_marker), 4u);
  EXPECT_EQ(a.used(), used);
  EXPECT_EQ(a.allocate(1, 1), next) << "a rejected rollback must not move the top";

  const memkit::arena_marker before_reset = a.marker();
  a.reset();
  (void)a.allocate(300, 8);
  a.rollback(before_reset);
  EXPECT_EQ(rec.count(memkit::misuse::bad_marker), 5u);
  EXPECT_EQ(a.used(), 300u);
  for (const auto& r : misuse_recorder::reports()) {
    EXPECT_STREQ(r.resource, "memkit::arena");
  }
}

TEST(Arena, DefaultMisuseHandlerAbortsOnAForeignMarker) {
  memkit::arena<> a;
  memkit::arena<> b;
  EXPECT_DEATH(a.rollback(b.marker()), "memkit::arena: bad marker");
}

TEST(Arena, ConstructorRejectsZeroBlockSizes) {
  alignas(16) std::array<std::byte, 64> buffer{};
  EXPECT_THROW(memkit::arena<>(memkit::malloc_resource{}, memkit::arena_options{0, 4096}),
               memkit::bad_size);
  EXPECT_THROW(memkit::arena<>(memkit::malloc_resource{}, memkit::arena_options{4096, 0}),
               memkit::bad_size);
  EXPECT_THROW(memkit::arena<>(buffer.data(), buffer.size(), memkit::malloc_resource{},
                               memkit::arena_options{0, 0}),
               memkit::bad_size);
}

TEST(Arena, RaisesBlockOptionsTooSmallToServeAnything) {
  spy_resource spy;
  {
    spy_arena a{spy_ref(spy), memkit::arena_options{1, 1}};
    std::vector<std::pair<void*, std::size_t>> blocks;
    for (int i = 0; i < 20; ++i) {
      blocks.emplace_back(a.allocate(24, 8), 24);
    }
    fill_and_verify(blocks);
  }
  EXPECT_EQ(spy.blocks_in_use(), 0u);
  EXPECT_TRUE(spy.errors().empty());
}

TEST(Arena, RandomRequestsNeverOverlapAndAllReturn) {
  const auto seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  spy_resource spy;
  {
    alignas(16) std::array<std::byte, 1000> buffer{};
    spy_arena a{buffer.data(), buffer.size(), spy_ref(spy), memkit::arena_options{512, 8192}};
    for (int round = 0; round < 3; ++round) {
      std::vector<std::pair<void*, std::size_t>> blocks;
      for (int i = 0; i < 500; ++i) {
        const std::size_t size = std::uniform_int_distribution<std::size_t>(0, 3000)(rng);
        const std::size_t align = std::size_t{1} << std::uniform_int_distribution<int>(0, 12)(rng);
        void* p = a.allocate(size, align);
        ASSERT_TRUE(memkit::detail::is_aligned(p, align));
        blocks.emplace_back(p, size);
      }
      fill_and_verify(blocks);
      for (const auto& b : blocks) {
        ASSERT_TRUE(a.owns(b.first));
      }
      a.reset();
    }
  }
  EXPECT_EQ(spy.blocks_in_use(), 0u);
  EXPECT_TRUE(spy.errors().empty());
}

} // namespace
