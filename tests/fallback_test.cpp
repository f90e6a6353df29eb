// SPDX-License-Identifier: BSL-1.0
#include "memkit/fallback.hpp"

#include <array>
#include <cstdint>
#include <gtest/gtest.h>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "memkit/arena.hpp"
#include "memkit/stack.hpp"
#include "memkit/upstream.hpp"
#include "support/spy_resource.hpp"

namespace {

using memkit::test::misuse_recorder;
using memkit::test::spy_resource;
using spy_ref = memkit::resource_ref<spy_resource>;
using buffer_then_spy = memkit::fallback<memkit::buffer_resource, spy_ref>;

static_assert(memkit::is_resource_v<buffer_then_spy>);
static_assert(memkit::has_owns_v<buffer_then_spy>, "both parts can tell: so can the whole");
static_assert(
    !memkit::has_owns_v<memkit::fallback<memkit::buffer_resource, memkit::malloc_resource>>,
    "owns() would be a guess when the secondary cannot tell");
static_assert(!std::is_copy_constructible_v<buffer_then_spy>);
static_assert(!std::is_move_constructible_v<buffer_then_spy>);

TEST(Fallback, OverflowsFromAFixedPrimaryToTheSecondary) {
  spy_resource spy;
  alignas(16) std::array<std::byte, 256> buffer{};
  {
    buffer_then_spy f(std::piecewise_construct, std::forward_as_tuple(buffer.data(), buffer.size()),
                      std::forward_as_tuple(spy));
    std::vector<void*> blocks;
    for (int i = 0; i < 20; ++i) {
      blocks.push_back(f.allocate(32, 16));
    }
    for (std::size_t i = 0; i < blocks.size(); ++i) {
      EXPECT_EQ(f.primary().owns(blocks[i]), i < 8) << "block " << i;
      EXPECT_TRUE(f.owns(blocks[i]));
    }
    EXPECT_EQ(spy.blocks_in_use(), 12u);
    for (void* p : blocks) {
      f.deallocate(p, 32, 16);
    }
    EXPECT_EQ(spy.blocks_in_use(), 0u);
  }
  EXPECT_TRUE(spy.errors().empty()) << spy.errors().front();
}

TEST(Fallback, RoutesInterleavedFreesToTheResourceThatAllocated) {
  spy_resource spy;
  memkit::stack<> primary(512);
  using refs = memkit::fallback<memkit::resource_ref<memkit::stack<>>, spy_ref>;
  refs f(std::piecewise_construct, std::forward_as_tuple(primary), std::forward_as_tuple(spy));
  // Sizes alternate between fitting and not fitting the room left in the stack.
  std::vector<std::pair<void*, std::size_t>> blocks;
  for (std::size_t size : {64u, 1000u, 64u, 600u, 100u, 2000u, 64u, 300u}) {
    blocks.emplace_back(f.allocate(size, 16), size);
  }
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    ASSERT_EQ(primary.owns(blocks[i].first), i % 2 == 0) << "block " << i;
  }
  ASSERT_EQ(spy.blocks_in_use(), 4u);
  misuse_recorder rec;
  for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) {
    f.deallocate(it->first, it->second, 16);
  }
  EXPECT_TRUE(rec.reports().empty()) << "the stack saw its own blocks, in LIFO order";
  EXPECT_EQ(primary.used(), 0u);
  EXPECT_EQ(spy.blocks_in_use(), 0u);
  EXPECT_TRUE(spy.errors().empty()) << "nothing of the stack's came back to the spy";
}

TEST(Fallback, ConstructsANonMovableArenaInPlace) {
  spy_resource spy;
  alignas(16) std::array<std::byte, 128> buffer{};
  {
    memkit::fallback<memkit::arena<memkit::null_resource>, spy_ref> f(
        std::piecewise_construct, std::forward_as_tuple(buffer.data(), buffer.size()),
        std::forward_as_tuple(spy));
    void* small = f.allocate(64);
    void* big = f.allocate(1000);
    EXPECT_TRUE(memkit::detail::in_range(small, buffer.data(), buffer.size()));
    EXPECT_FALSE(f.primary().owns(big));
    EXPECT_EQ(spy.blocks_in_use(), 1u) << "the null upstream made the arena fail over";
    f.deallocate(big, 1000);
    f.deallocate(small, 64);
    EXPECT_EQ(f.primary().used(), 0u);
  }
  EXPECT_EQ(spy.blocks_in_use(), 0u);
  EXPECT_TRUE(spy.errors().empty());
}

TEST(Fallback, DefaultConstructsBothResources) {
  memkit::fallback<memkit::arena<>, memkit::malloc_resource> f;
  void* p = f.allocate(100, 64);
  EXPECT_TRUE(memkit::detail::is_aligned(p, 64));
  EXPECT_TRUE(f.primary().owns(p));
  f.deallocate(p, 100, 64);
  EXPECT_EQ(f.allocate(100, 64), p) << "the arena reclaimed its most recent block";
}

TEST(Fallback, HonoursEveryAlignmentFromEitherResource) {
  spy_resource spy;
  alignas(16) std::array<std::byte, 64> buffer{};
  buffer_then_spy f(std::piecewise_construct, std::forward_as_tuple(buffer.data(), buffer.size()),
                    std::forward_as_tuple(spy));
  std::vector<std::pair<void*, std::size_t>> blocks;
  for (std::size_t align = 1; align <= 4096; align *= 2) {
    void* p = f.allocate(8, align);
    EXPECT_TRUE(memkit::detail::is_aligned(p, align)) << "alignment " << align;
    blocks.emplace_back(p, align);
  }
  void* zero = f.allocate(0, 8);
  EXPECT_NE(zero, nullptr);
  f.deallocate(zero, 0, 8);
  for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) {
    f.deallocate(it->first, 8, it->second);
  }
  EXPECT_EQ(spy.blocks_in_use(), 0u);
  EXPECT_TRUE(spy.errors().empty());
}

TEST(Fallback, FailsWithTheRightErrorWhenNeitherCanServe) {
  alignas(16) std::array<std::byte, 64> buffer{};
  memkit::fallback<memkit::buffer_resource, memkit::null_resource> f(
      std::piecewise_construct, std::forward_as_tuple(buffer.data(), buffer.size()),
      std::forward_as_tuple());
  (void)f.allocate(64, 1);
  EXPECT_EQ(f.try_allocate(8, 8), nullptr);
  try {
    (void)f.allocate(8, 8);
    FAIL() << "allocate must throw";
  } catch (const memkit::out_of_memory& e) {
    EXPECT_STREQ(e.resource(), "memkit::fallback");
  }
  EXPECT_THROW((void)f.allocate(8, 3), memkit::bad_alignment);
  EXPECT_THROW((void)f.allocate(SIZE_MAX, 8), memkit::bad_size);
}

TEST(Fallback, ReportsTheLargerLimitsOfBoth) {
  alignas(16) std::array<std::byte, 64> buffer{};
  memkit::fallback<memkit::buffer_resource, memkit::stack<>> f(
      std::piecewise_construct, std::forward_as_tuple(buffer.data(), buffer.size()),
      std::forward_as_tuple(4096));
  EXPECT_EQ(f.max_size(), f.secondary().max_size());
  EXPECT_GT(f.max_size(), f.primary().max_size());
  EXPECT_EQ(f.max_alignment(), memkit::unbounded_alignment);
  void* p = f.allocate(1000);
  EXPECT_TRUE(f.secondary().owns(p)) << "too big for the primary, within the secondary's max_size";
  f.deallocate(p, 1000);
  EXPECT_EQ(f.secondary().used(), 0u);
}

TEST(Fallback, OwnsIsTheUnionOfBoth) {
  spy_resource spy;
  alignas(16) std::array<std::byte, 32> buffer{};
  buffer_then_spy f(std::piecewise_construct, std::forward_as_tuple(buffer.data(), buffer.size()),
                    std::forward_as_tuple(spy));
  void* a = f.allocate(32, 16);
  void* b = f.allocate(32, 16);
  int x = 0;
  EXPECT_TRUE(f.owns(a));
  EXPECT_TRUE(f.owns(b));
  EXPECT_FALSE(f.owns(&x));
  f.deallocate(b, 32, 16);
  EXPECT_FALSE(f.owns(b));
  f.deallocate(a, 32, 16);
  EXPECT_FALSE(f.owns(a));
}

TEST(Fallback, SendsAForeignPointerToTheSecondaryOnly) {
  misuse_recorder rec;
  alignas(16) std::array<std::byte, 64> buffer{};
  memkit::fallback<memkit::buffer_resource, memkit::null_resource> f(
      std::piecewise_construct, std::forward_as_tuple(buffer.data(), buffer.size()),
      std::forward_as_tuple());
  (void)f.allocate(16, 16);
  int x = 0;
  f.deallocate(&x, sizeof x, alignof(int));
  f.deallocate(nullptr, 8, 8);
  ASSERT_EQ(rec.reports().size(), 1u);
  EXPECT_STREQ(rec.reports()[0].resource, "memkit::null_resource");
  EXPECT_EQ(rec.reports()[0].kind, memkit::misuse::foreign_pointer);
  EXPECT_EQ(f.primary().used(), 16u);
}

TEST(Fallback, DefaultMisuseHandlerAbortsOnAPointerNeitherAllocated) {
  alignas(16) std::array<std::byte, 64> buffer{};
  memkit::fallback<memkit::buffer_resource, memkit::null_resource> f(
      std::piecewise_construct, std::forward_as_tuple(buffer.data(), buffer.size()),
      std::forward_as_tuple());
  int x = 0;
  EXPECT_DEATH(f.deallocate(&x, sizeof x, alignof(int)), "memkit::null_resource: foreign pointer");
}

} // namespace
