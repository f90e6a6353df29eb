// SPDX-License-Identifier: BSL-1.0
#include "memkit/allocator.hpp"

#include <array>
#include <cstdint>
#include <gtest/gtest.h>
#include <limits>
#include <list>
#include <map>
#include <memory>
#include <scoped_allocator>
#include <string>
#include <vector>

#include "memkit/audit.hpp"
#include "memkit/upstream.hpp"
#include "support/spy_resource.hpp"

namespace {

using memkit::test::spy_resource;
using spy_alloc = memkit::allocator<int, spy_resource>;
using traits = std::allocator_traits<spy_alloc>;

static_assert(std::is_same_v<traits::value_type, int>);
static_assert(!traits::is_always_equal::value,
              "stateful: never always equal, or containers free one instance's memory through "
              "another");
static_assert(traits::propagate_on_container_move_assignment::value);
static_assert(traits::propagate_on_container_swap::value);
static_assert(!traits::propagate_on_container_copy_assignment::value);
static_assert(
    std::is_same_v<traits::rebind_alloc<double>, memkit::allocator<double, spy_resource>>);
static_assert(std::is_nothrow_copy_constructible_v<spy_alloc>);
static_assert(std::is_nothrow_move_assignable_v<spy_alloc>);
static_assert(!std::is_default_constructible_v<spy_alloc>, "a resource must always be named");
static_assert(memkit::audit<spy_alloc>());
static_assert(
    memkit::is_sound_allocator_v<memkit::allocator<std::string, memkit::malloc_resource>>);

struct alignas(64) cache_line {
  std::array<char, 64> bytes;
};

TEST(Allocator, AsksTheResourceForNTimesTheSizeAlignedToTheType) {
  spy_resource spy;
  memkit::allocator<cache_line, spy_resource> a(spy);
  cache_line* p = a.allocate(3);
  EXPECT_TRUE(memkit::detail::is_aligned(p, 64));
  EXPECT_EQ(spy.bytes_in_use(), 3 * sizeof(cache_line));
  a.deallocate(p, 3);
  memkit::allocator<std::uint16_t, spy_resource> b(spy);
  std::uint16_t* q = b.allocate(5);
  EXPECT_EQ(spy.bytes_in_use(), 10u);
  b.deallocate(q, 5);
  EXPECT_EQ(spy.blocks_in_use(), 0u);
  EXPECT_TRUE(spy.errors().empty()) << spy.errors().front();
}

TEST(Allocator, ThrowsBadArrayNewLengthWithoutCallingTheResourceWhenTheSizeOverflows) {
  spy_resource spy;
  memkit::allocator<std::uint64_t, spy_resource> a(spy);
  const std::size_t too_many = std::numeric_limits<std::size_t>::max() / sizeof(std::uint64_t) + 1;
  EXPECT_THROW((void)a.allocate(too_many), std::bad_array_new_length);
  EXPECT_EQ(spy.calls(), 0u);
}

TEST(Allocator, PassesTheResourcesExceptionsThroughNamingTheResource) {
  alignas(16) std::array<unsigned char, 64> buffer{};
  memkit::buffer_resource buf(buffer.data(), buffer.size());
  memkit::allocator<int, memkit::buffer_resource> a(buf);
  int* p = a.allocate(8);
  try {
    (void)a.allocate(16);
    FAIL() << "the buffer is exhausted";
  } catch (const memkit::out_of_memory& e) {
    EXPECT_STREQ(e.resource(), "memkit::buffer_resource");
    EXPECT_EQ(e.size(), 16 * sizeof(int));
    EXPECT_EQ(e.alignment(), alignof(int));
  }
  a.deallocate(p, 8);
  EXPECT_EQ(buf.used(), 0u);
}

TEST(Allocator, MaxSizeIsTheResourcesMaxSizeInElements) {
  alignas(16) std::array<unsigned char, 100> buffer{};
  memkit::buffer_resource buf(buffer.data(), buffer.size());
  memkit::allocator<std::uint32_t, memkit::buffer_resource> a(buf);
  EXPECT_EQ(a.max_size(), 25u);
}

TEST(Allocator, EqualityMeansTheSameResource) {
  spy_resource s1;
  spy_resource s2;
  const spy_alloc a1(s1);
  const spy_alloc a1_copy(a1);
  const memkit::allocator<double, spy_resource> a1_rebound(a1);
  const spy_alloc a2(s2);
  EXPECT_TRUE(a1 == a1_copy);
  EXPECT_TRUE(a1 == a1_rebound);
  EXPECT_TRUE(a1_rebound == a1);
  EXPECT_FALSE(a1 != a1_rebound);
  EXPECT_TRUE(a1 != a2);
  EXPECT_FALSE(a1 == a2);
  EXPECT_EQ(&a1_rebound.resource(), &s1);
}

TEST(Allocator, TreatsInterchangeableResourceObjectsAsEqual) {
  memkit::malloc_resource m1;
  memkit::malloc_resource m2;
  EXPECT_TRUE((memkit::allocator<int, memkit::malloc_resource>(m1) ==
               memkit::allocator<int, memkit::malloc_resource>(m2)));
  spy_resource spy;
  spy_resource other;
  using ref = memkit::resource_ref<spy_resource>;
  ref r1(spy);
  ref r2(spy);
  ref r3(other);
  EXPECT_TRUE((memkit::allocator<int, ref>(r1) == memkit::allocator<int, ref>(r2)));
  EXPECT_FALSE((memkit::allocator<int, ref>(r1) == memkit::allocator<int, ref>(r3)));
}

TEST(Allocator, CopyConstructedContainersShareTheResource) {
  spy_resource spy;
  const spy_alloc a(spy);
  EXPECT_EQ(&traits::select_on_container_copy_construction(a).resource(), &spy);
  std::vector<int, spy_alloc> v({1, 2, 3}, a);
  const std::vector<int, spy_alloc> copy(v);
  EXPECT_EQ(&copy.get_allocator().resource(), &spy);
  EXPECT_EQ(spy.blocks_in_use(), 2u);
}

TEST(Allocator, BuildsContainersFromTheResourceDirectly) {
  spy_resource spy;
  {
    std::list<int, spy_alloc> l(spy);
    l.assign({1, 2, 3});
    std::map<int, int, std::less<>, memkit::allocator<std::pair<const int, int>, spy_resource>> m(
        spy);
    m[1] = 2;
    EXPECT_EQ(spy.blocks_in_use(), 4u);
  }
  EXPECT_EQ(spy.blocks_in_use(), 0u);
  EXPECT_TRUE(spy.errors().empty());
}

TEST(Allocator, PropagatesIntoNestedContainersThroughScopedAllocatorAdaptor) {
  spy_resource spy;
  using inner =
      std::basic_string<char, std::char_traits<char>, memkit::allocator<char, spy_resource>>;
  using outer_alloc = std::scoped_allocator_adaptor<memkit::allocator<inner, spy_resource>>;
  {
    const outer_alloc a{memkit::allocator<inner, spy_resource>(spy)};
    std::vector<inner, outer_alloc> v(a);
    v.emplace_back("a string long enough to leave the small-string buffer");
    EXPECT_EQ(&v.front().get_allocator().resource(), &spy);
    EXPECT_EQ(spy.blocks_in_use(), 2u);
  }
  EXPECT_EQ(spy.blocks_in_use(), 0u);
  EXPECT_TRUE(spy.errors().empty());
}

TEST(Allocator, ServesZeroElementsAsADistinctBlock) {
  spy_resource spy;
  spy_alloc a(spy);
  int* p = a.allocate(0);
  int* q = a.allocate(0);
  EXPECT_NE(p, nullptr);
  EXPECT_NE(p, q);
  a.deallocate(p, 0);
  a.deallocate(q, 0);
  EXPECT_EQ(spy.blocks_in_use(), 0u);
  EXPECT_TRUE(spy.errors().empty());
}

} // namespace
