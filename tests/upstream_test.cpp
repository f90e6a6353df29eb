// SPDX-License-Identifier: BSL-1.0
#include "memkit/upstream.hpp"

#include <array>
#include <cstdint>
#include <gtest/gtest.h>
#include <memory_resource>

#include "support/spy_resource.hpp"

namespace {

using memkit::test::misuse_recorder;

static_assert(memkit::is_resource_v<memkit::malloc_resource>);
static_assert(memkit::is_resource_v<memkit::new_delete_resource>);
static_assert(memkit::is_resource_v<memkit::null_resource>);
static_assert(memkit::is_resource_v<memkit::buffer_resource>);
static_assert(memkit::is_resource_v<memkit::pmr_upstream>);
static_assert(memkit::is_resource_v<memkit::resource_ref<memkit::malloc_resource>>);
static_assert(memkit::has_owns_v<memkit::buffer_resource>);
static_assert(!memkit::has_owns_v<memkit::malloc_resource>);
static_assert(!memkit::has_owns_v<memkit::resource_ref<memkit::malloc_resource>>);
static_assert(memkit::has_owns_v<memkit::resource_ref<memkit::buffer_resource>>);

template <class R>
void expect_heap_like(R& r) {
  for (std::size_t a = 1; a <= 4096; a *= 2) {
    void* p = r.allocate(24, a);
    ASSERT_NE(p, nullptr);
    EXPECT_TRUE(memkit::detail::is_aligned(p, a)) << "alignment " << a;
    r.deallocate(p, 24, a);
  }
  void* z = r.allocate(0, 8);
  EXPECT_NE(z, nullptr);
  r.deallocate(z, 0, 8);
  EXPECT_THROW((void)r.allocate(16, 3), memkit::bad_alignment);
  EXPECT_THROW((void)r.allocate(SIZE_MAX, 8), memkit::bad_size);
  EXPECT_EQ(r.try_allocate(SIZE_MAX, 8), nullptr);
  EXPECT_EQ(r.try_allocate(16, 0), nullptr);
}

TEST(MallocResource, HonoursEveryAlignmentAndRejectsBadRequests) {
  memkit::malloc_resource r;
  expect_heap_like(r);
}

TEST(NewDeleteResource, HonoursEveryAlignmentAndRejectsBadRequests) {
  memkit::new_delete_resource r;
  expect_heap_like(r);
}

TEST(PmrUpstream, ForwardsToTheWrappedResourceAndTurnsExceptionsIntoNull) {
  std::array<std::byte, 256> buffer{};
  std::pmr::monotonic_buffer_resource mono(buffer.data(), buffer.size(),
                                           std::pmr::null_memory_resource());
  memkit::pmr_upstream up(&mono);
  void* p = up.allocate(64, 64);
  EXPECT_TRUE(memkit::detail::in_range(p, buffer.data(), buffer.size()));
  up.deallocate(p, 64, 64);
  EXPECT_EQ(up.try_allocate(1024, 8), nullptr);
  EXPECT_THROW((void)up.allocate(1024, 8), memkit::out_of_memory);
  memkit::pmr_upstream def;
  expect_heap_like(def);
}

TEST(NullResource, AlwaysFailsLoudlyNamingItself) {
  memkit::null_resource r;
  EXPECT_EQ(r.try_allocate(8, 8), nullptr);
  try {
    (void)r.allocate(8, 8);
    FAIL() << "allocate must throw";
  } catch (const memkit::out_of_memory& e) {
    EXPECT_STREQ(e.resource(), "memkit::null_resource");
    EXPECT_EQ(e.size(), 8u);
    EXPECT_EQ(e.alignment(), 8u);
    EXPECT_NE(std::string(e.what()).find("memkit::null_resource"), std::string::npos);
  }
}

TEST(NullResource, ReportsAnyPointerReturnedToItAsForeign) {
  misuse_recorder rec;
  memkit::null_resource r;
  int x = 0;
  r.deallocate(&x, sizeof x, alignof(int));
  r.deallocate(nullptr, 8, 8);
  ASSERT_EQ(rec.reports().size(), 1u);
  EXPECT_EQ(rec.reports()[0].kind, memkit::misuse::foreign_pointer);
  EXPECT_EQ(rec.reports()[0].pointer, &x);
}

TEST(BufferResource, BumpsThroughTheBufferAndFailsWhenFull) {
  alignas(64) std::array<std::byte, 128> buffer{};
  memkit::buffer_resource r(buffer.data(), buffer.size());
  void* a = r.allocate(10, 1);
  void* b = r.allocate(16, 16);
  EXPECT_EQ(a, buffer.data());
  EXPECT_TRUE(memkit::detail::is_aligned(b, 16));
  EXPECT_TRUE(r.owns(a));
  EXPECT_TRUE(r.owns(b));
  EXPECT_EQ(r.used(), 32u);
  EXPECT_EQ(r.try_allocate(200, 1), nullptr);
  EXPECT_THROW((void)r.allocate(129, 1), memkit::bad_size);
  EXPECT_THROW((void)r.allocate(96, 64), memkit::out_of_memory);
  r.deallocate(b, 16, 16); // the most recent block is reclaimed
  EXPECT_EQ(r.used(), 16u);
  r.release();
  EXPECT_EQ(r.used(), 0u);
  EXPECT_EQ(r.remaining(), buffer.size());
}

TEST(BufferResource, ReportsForeignPointersAndKeepsItsState) {
  misuse_recorder rec;
  std::array<std::byte, 64> buffer{};
  memkit::buffer_resource r(buffer.data(), buffer.size());
  void* a = r.allocate(8, 8);
  int x = 0;
  r.deallocate(&x, sizeof x, alignof(int));
  EXPECT_EQ(rec.count(memkit::misuse::foreign_pointer), 1u);
  EXPECT_EQ(r.used(), 8u);
  r.deallocate(a, 8, 8);
}

TEST(ResourceRef, SharesOneUpstreamBetweenHandles) {
  memkit::test::spy_resource spy;
  memkit::resource_ref<memkit::test::spy_resource> a(spy);
  auto b = a;
  EXPECT_EQ(a, b);
  void* p = a.allocate(32, 16);
  EXPECT_EQ(spy.blocks_in_use(), 1u);
  b.deallocate(p, 32, 16);
  EXPECT_EQ(spy.blocks_in_use(), 0u);
  EXPECT_TRUE(spy.errors().empty());
}

} // namespace
