// SPDX-License-Identifier: BSL-1.0
#include "memkit/stack.hpp"

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
using spy_stack = memkit::stack<spy_ref>;

static_assert(memkit::is_resource_v<memkit::stack<>>);
static_assert(memkit::is_resource_v<spy_stack>);
static_assert(memkit::has_owns_v<memkit::stack<>>);
static_assert(!std::is_copy_constructible_v<memkit::stack<>>);
static_assert(!std::is_move_constructible_v<memkit::stack<>>);

TEST(Stack, HonoursEveryPowerOfTwoAlignmentWithoutOverlap) {
  spy_resource spy;
  {
    spy_stack s(1 << 16, spy_ref(spy));
    std::vector<std::pair<void*, std::size_t>> blocks;
    for (std::size_t align = 1; align <= 4096; align *= 2) {
      void* p = s.allocate(24, align);
      EXPECT_TRUE(memkit::detail::is_aligned(p, align)) << "alignment " << align;
      EXPECT_TRUE(s.owns(p));
      std::memset(p, static_cast<int>(blocks.size()), 24);
      blocks.emplace_back(p, 24);
    }
    for (std::size_t i = 0; i < blocks.size(); ++i) {
      const auto* bytes = static_cast<const unsigned char*>(blocks[i].first);
      for (std::size_t j = 0; j < 24; ++j) {
        ASSERT_EQ(bytes[j], i) << "block " << i << " overwritten (headers must not overlap it)";
      }
    }
    for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) {
      s.deallocate(it->first, it->second, 1);
    }
    EXPECT_EQ(s.used(), 0u);
    EXPECT_GE(s.max_alignment(), memkit::page_size);
  }
  EXPECT_EQ(spy.blocks_in_use(), 0u);
  EXPECT_TRUE(spy.errors().empty());
}

TEST(Stack, ObtainsItsRegionLazilyAndReturnsItExactly) {
  spy_resource spy;
  {
    spy_stack s(1000, spy_ref(spy));
    EXPECT_EQ(spy.calls(), 0u);
    EXPECT_EQ(s.capacity(), 1000u);
    EXPECT_EQ(s.remaining(), 1000u);
    const memkit::stack_marker empty = s.marker();
    void* p = s.allocate(10);
    EXPECT_EQ(spy.calls(), 1u);
    EXPECT_EQ(spy.bytes_in_use(), 1000u);
    s.rollback(empty); // taken before the region existed
    EXPECT_EQ(s.used(), 0u);
    s.release();
    EXPECT_EQ(spy.blocks_in_use(), 0u);
    EXPECT_FALSE(s.owns(p));
    (void)s.allocate(10);
    EXPECT_EQ(spy.blocks_in_use(), 1u) << "the region is obtained again on demand";
  }
  EXPECT_EQ(spy.blocks_in_use(), 0u);
  EXPECT_EQ(spy.allocations(), 2u);
  EXPECT_TRUE(spy.errors().empty());
}

TEST(Stack, FreesInReverseOrderAndReusesTheSpace) {
  memkit::stack<> s(4096);
  void* a = s.allocate(100, 8);
  void* b = s.allocate(1, 1);
  void* c = s.allocate(64, 64);
  s.deallocate(c, 64, 64);
  s.deallocate(b, 1, 1);
  EXPECT_EQ(s.allocate(1, 1), b);
  s.deallocate(b, 1, 1);
  s.deallocate(a, 100, 8);
  EXPECT_EQ(s.used(), 0u);
  EXPECT_EQ(s.remaining(), 4096u);
  EXPECT_EQ(s.allocate(100, 8), a);
}

TEST(Stack, ZeroSizeRequestsGetDistinctBlocks) {
  memkit::stack<> s(256);
  void* p = s.allocate(0, 1);
  void* q = s.allocate(0, 1);
  EXPECT_NE(p, q);
  EXPECT_TRUE(s.owns(p));
  s.deallocate(q, 0, 1);
  s.deallocate(p, 0, 1);
  EXPECT_EQ(s.used(), 0u);
}

TEST(Stack, RejectsImpossibleSizesAndInvalidAlignments) {
  memkit::stack<> s(256);
  EXPECT_EQ(s.try_allocate(SIZE_MAX, 8), nullptr);
  EXPECT_THROW((void)s.allocate(SIZE_MAX, 8), memkit::bad_size);
  EXPECT_THROW((void)s.allocate(s.max_size() + 1, 1), memkit::bad_size);
  EXPECT_THROW((void)s.allocate(16, 3), memkit::bad_alignment);
  EXPECT_THROW((void)s.allocate(16, 0), memkit::bad_alignment);
  void* whole = s.allocate(s.max_size(), 1);
  EXPECT_NE(whole, nullptr);
  EXPECT_EQ(s.remaining(), 0u);
}

TEST(Stack, ThrowsOutOfMemoryNamingTheStackWhenExhausted) {
  alignas(16) std::array<std::byte, 256> buffer{};
  memkit::stack<> s(buffer.data(), buffer.size());
  (void)s.allocate(200, 8);
  EXPECT_EQ(s.try_allocate(100, 8), nullptr);
  try {
    (void)s.allocate(100, 8);
    FAIL() << "allocate must throw";
  } catch (const memkit::out_of_memory& e) {
    EXPECT_STREQ(e.resource(), "memkit::stack");
    EXPECT_NE(std::string(e.what()).find("memkit::stack"), std::string::npos);
  }
  memkit::stack<memkit::null_resource> never(1024);
  EXPECT_THROW((void)never.allocate(8), memkit::out_of_memory);
  spy_resource spy(100);
  spy_stack too_big(1024, spy_ref(spy));
  EXPECT_EQ(too_big.try_allocate(8), nullptr) << "the upstream refused the region";
}

TEST(Stack, ReportsALifoViolationAndLeavesTheStackUntouched) {
  misuse_recorder rec;
  memkit::stack<> s(1024);
  void* a = s.allocate(32, 16);
  void* b = s.allocate(32, 16);
  const std::size_t used = s.used();
  s.deallocate(a, 32, 16);
  ASSERT_EQ(rec.reports().size(), 1u);
  EXPECT_EQ(rec.reports()[0].kind, memkit::misuse::lifo_violation);
  EXPECT_STREQ(rec.reports()[0].resource, "memkit::stack");
  EXPECT_EQ(rec.reports()[0].pointer, a);
  EXPECT_EQ(s.used(), used);
  s.deallocate(b, 32, 16);
  s.deallocate(a, 32, 16);
  EXPECT_EQ(s.used(), 0u);
  EXPECT_EQ(rec.reports().size(), 1u);
}

TEST(Stack, ReportsASizeMismatchOnTheTopBlock) {
  misuse_recorder rec;
  memkit::stack<> s(1024);
  void* a = s.allocate(32, 16);
  s.deallocate(a, 16, 16);
  s.deallocate(a, 48, 16);
  EXPECT_EQ(rec.count(memkit::misuse::size_mismatch), 2u);
  EXPECT_EQ(s.used(), 32u + 16u) << "block and header still in use";
  s.deallocate(a, 32, 16);
  EXPECT_EQ(s.used(), 0u);
}

TEST(Stack, ReportsPointersOutsideTheRegionAsForeign) {
  misuse_recorder rec;
  memkit::stack<> s(1024);
  int x = 0;
  s.deallocate(&x, sizeof x, alignof(int)); // before the region exists
  memkit::stack<> other(1024);
  void* theirs = other.allocate(8);
  void* mine = s.allocate(8);
  s.deallocate(theirs, 8);
  s.deallocate(nullptr, 8); // not a misuse
  EXPECT_EQ(rec.count(memkit::misuse::foreign_pointer), 2u);
  EXPECT_EQ(rec.reports().size(), 2u);
  EXPECT_TRUE(s.owns(mine));
  s.deallocate(mine, 8);
  other.deallocate(theirs, 8);
  EXPECT_EQ(rec.reports().size(), 2u);
}

TEST(Stack, ReportsFreeingAFreedBlockAsADoubleFree) {
  misuse_recorder rec;
  memkit::stack<> s(1024);
  void* a = s.allocate(8);
  void* b = s.allocate(8);
  s.deallocate(b, 8);
  s.deallocate(b, 8);
  EXPECT_EQ(rec.count(memkit::misuse::double_free), 1u);
  EXPECT_EQ(s.allocate(8), b) << "the stack was left as it was";
  const memkit::stack_marker m = s.marker();
  void* c = s.allocate(8);
  s.rollback(m);
  s.deallocate(c, 8); // freed by the rollback
  EXPECT_EQ(rec.count(memkit::misuse::double_free), 2u);
  s.deallocate(b, 8);
  s.deallocate(a, 8);
  EXPECT_EQ(s.used(), 0u);
}

TEST(Stack, RollbackFreesEveryLiveBlockAfterTheMarkerAtOnce) {
  misuse_recorder rec;
  memkit::stack<> s(4096);
  void* a = s.allocate(16);
  void* b = s.allocate(16);
  const memkit::stack_marker m = s.marker();
  const std::size_t used = s.used();
  void* c = nullptr;
  for (int i = 0; i < 10; ++i) {
    c = s.allocate(40, 8);
  }
  EXPECT_TRUE(s.owns(c));
  s.rollback(m);
  EXPECT_EQ(s.used(), used);
  EXPECT_FALSE(s.owns(c));
  s.deallocate(b, 16); // the top before the marker is the top again
  s.deallocate(a, 16);
  EXPECT_EQ(s.used(), 0u);
  EXPECT_TRUE(rec.reports().empty());
}

TEST(Stack, RollbackReportsMarkersAboveTheTopOrFromAnotherStack) {
  misuse_recorder rec;
  memkit::stack<> s(1024);
  memkit::stack<> other(1024);
  void* a = s.allocate(16);
  const memkit::stack_marker low = s.marker();
  (void)s.allocate(16);
  const memkit::stack_marker high = s.marker();
  s.rollback(low);
  const std::size_t used = s.used();
  s.rollback(high);
  s.rollback(other.marker());
  s.rollback(memkit::stack_marker{});
  EXPECT_EQ(rec.count(memkit::misuse::bad_marker), 3u);
  EXPECT_EQ(s.used(), used);
  s.deallocate(a, 16);
  EXPECT_EQ(s.used(), 0u);
  EXPECT_EQ(rec.reports().size(), 3u);
}

TEST(Stack, WorksOverACallerBufferWithoutTouchingTheUpstream) {
  alignas(16) std::array<std::byte, 512> buffer{};
  {
    memkit::stack<memkit::null_resource> s(buffer.data(), buffer.size());
    EXPECT_EQ(s.capacity(), 512u);
    void* p = s.allocate(64, 16);
    EXPECT_TRUE(memkit::detail::in_range(p, buffer.data(), buffer.size()));
    EXPECT_EQ(s.used() + s.remaining(), 512u);
    s.release(); // a caller buffer is kept: release only frees the blocks
    EXPECT_EQ(s.used(), 0u);
    EXPECT_EQ(s.allocate(64, 16), p);
  }
  // null_resource reports any pointer returned to it, so reaching here without a report proves
  // the buffer never went to the upstream.
}

TEST(Stack, OwnsExactlyTheUsedPartOfTheRegion) {
  alignas(16) std::array<std::byte, 512> buffer{};
  memkit::stack<> s(buffer.data(), buffer.size());
  EXPECT_FALSE(s.owns(buffer.data()));
  void* p = s.allocate(32, 16);
  EXPECT_TRUE(s.owns(p));
  EXPECT_TRUE(s.owns(static_cast<char*>(p) + 31));
  EXPECT_FALSE(s.owns(static_cast<char*>(p) + 32));
  int x = 0;
  EXPECT_FALSE(s.owns(&x));
  s.deallocate(p, 32, 16);
  EXPECT_FALSE(s.owns(p));
}

TEST(Stack, ResetFreesEverythingAndKeepsTheRegion) {
  spy_resource spy;
  spy_stack s(1024, spy_ref(spy));
  for (int i = 0; i < 10; ++i) {
    (void)s.allocate(50);
  }
  s.reset();
  EXPECT_EQ(s.used(), 0u);
  EXPECT_EQ(s.remaining(), 1024u);
  (void)s.allocate(50);
  EXPECT_EQ(spy.calls(), 1u);
  EXPECT_EQ(spy.blocks_in_use(), 1u);
}

TEST(Stack, DefaultMisuseHandlerAbortsOnALifoViolation) {
  memkit::stack<> s(1024);
  void* a = s.allocate(16);
  (void)s.allocate(16);
  EXPECT_DEATH(s.deallocate(a, 16), "memkit::stack: LIFO violation");
}

TEST(Stack, RandomNestedLifetimesNeverOverlap) {
  const auto seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  misuse_recorder rec;
  spy_resource spy;
  {
    spy_stack s(1 << 20, spy_ref(spy));
    struct live {
      unsigned char* p;
      std::size_t size;
      std::size_t alignment;
      unsigned char tag;
    };
    std::vector<live> blocks;
    for (int step = 0; step < 5000; ++step) {
      if (blocks.empty() || std::uniform_int_distribution<int>(0, 2)(rng) != 0) {
        const std::size_t size = std::uniform_int_distribution<std::size_t>(0, 300)(rng);
        const std::size_t align = std::size_t{1} << std::uniform_int_distribution<int>(0, 8)(rng);
        auto* p = static_cast<unsigned char*>(s.try_allocate(size, align));
        if (p == nullptr) {
          continue;
        }
        ASSERT_TRUE(memkit::detail::is_aligned(p, align));
        const auto tag = static_cast<unsigned char>(step);
        std::memset(p, tag, size);
        blocks.push_back({p, size, align, tag});
      } else {
        const live b = blocks.back();
        blocks.pop_back();
        for (std::size_t j = 0; j < b.size; ++j) {
          ASSERT_EQ(b.p[j], b.tag) << "block overwritten at byte " << j;
        }
        s.deallocate(b.p, b.size, b.alignment);
      }
    }
    while (!blocks.empty()) {
      s.deallocate(blocks.back().p, blocks.back().size, blocks.back().alignment);
      blocks.pop_back();
    }
    EXPECT_EQ(s.used(), 0u);
  }
  EXPECT_TRUE(rec.reports().empty());
  EXPECT_EQ(spy.blocks_in_use(), 0u);
  EXPECT_TRUE(spy.errors().empty());
}

} // namespace
