// SPDX-License-Identifier: BSL-1.0
#include "memkit/aligned.hpp"

#include <algorithm>
#include <array>
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
using spy_aligned = memkit::aligned<spy_ref>;

static_assert(memkit::is_resource_v<memkit::aligned<>>);
static_assert(memkit::is_resource_v<memkit::aligned<memkit::malloc_resource, 128>>);
static_assert(!memkit::has_owns_v<memkit::aligned<>>, "malloc_resource cannot answer owns");
static_assert(memkit::has_owns_v<spy_aligned>, "owns is forwarded when the upstream has it");
static_assert(!std::is_copy_constructible_v<memkit::aligned<>>);

std::uintptr_t line_of(const void* p) { return memkit::detail::address(p) / 64; }

TEST(Aligned, RoundsSizeAndAlignmentUpToACacheLine) {
  spy_resource spy;
  spy_aligned r(spy_ref{spy});
  void* a = r.allocate(1, 1);
  EXPECT_TRUE(memkit::detail::is_aligned(a, 64));
  EXPECT_EQ(spy.bytes_in_use(), 64u);
  void* b = r.allocate(65, 8);
  EXPECT_TRUE(memkit::detail::is_aligned(b, 64));
  EXPECT_EQ(spy.bytes_in_use(), 64u + 128u);
  void* c = r.allocate(128, 64);
  EXPECT_EQ(spy.bytes_in_use(), 64u + 128u + 128u);
  r.deallocate(a, 1, 1);
  r.deallocate(b, 65, 8);
  r.deallocate(c, 128, 64);
  EXPECT_EQ(spy.blocks_in_use(), 0u);
  EXPECT_TRUE(spy.errors().empty()) << spy.errors().front();
}

TEST(Aligned, ForwardsLargerAlignmentsUnchanged) {
  spy_resource spy;
  spy_aligned r(spy_ref{spy});
  void* p = r.allocate(10, 4096);
  EXPECT_TRUE(memkit::detail::is_aligned(p, 4096));
  EXPECT_EQ(spy.bytes_in_use(), 64u) << "the size is rounded to Alignment, not to the alignment";
  r.deallocate(p, 10, 4096);
  EXPECT_TRUE(spy.errors().empty()) << spy.errors().front();
}

TEST(Aligned, HonoursEveryPowerOfTwoAlignment) {
  spy_resource spy;
  spy_aligned r(spy_ref{spy});
  for (std::size_t a = 1; a <= memkit::page_size; a *= 2) {
    void* p = r.allocate(24, a);
    EXPECT_TRUE(memkit::detail::is_aligned(p, a < 64 ? 64 : a)) << "alignment " << a;
    r.deallocate(p, 24, a);
  }
  EXPECT_EQ(spy.blocks_in_use(), 0u);
  EXPECT_TRUE(spy.errors().empty()) << spy.errors().front();
}

TEST(Aligned, NoTwoBlocksShareACacheLine) {
  memkit::aligned<> r;
  std::vector<std::pair<char*, std::size_t>> blocks;
  for (std::size_t i = 0; i < 200; ++i) {
    const std::size_t size = 1 + (i * 37) % 150;
    blocks.emplace_back(static_cast<char*>(r.allocate(size, 8)), size);
  }
  std::vector<std::uintptr_t> lines;
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    auto [p, size] = blocks[i];
    std::memset(p, static_cast<int>(i), size);
    for (std::uintptr_t l = line_of(p); l <= line_of(p + size - 1); ++l) {
      lines.push_back(l);
    }
  }
  std::sort(lines.begin(), lines.end());
  EXPECT_EQ(std::adjacent_find(lines.begin(), lines.end()), lines.end())
      << "two blocks touch the same cache line";
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    auto [p, size] = blocks[i];
    EXPECT_TRUE(std::all_of(p, p + size, [&](char c) { return c == static_cast<char>(i); }));
    r.deallocate(p, size, 8);
  }
}

TEST(Aligned, CustomAlignmentRoundsToItsOwnGranule) {
  spy_resource spy;
  memkit::aligned<spy_ref, 256> r(spy_ref{spy});
  void* p = r.allocate(300);
  EXPECT_TRUE(memkit::detail::is_aligned(p, 256));
  EXPECT_EQ(spy.bytes_in_use(), 512u);
  r.deallocate(p, 300);
  EXPECT_EQ(spy.blocks_in_use(), 0u);
  EXPECT_TRUE(spy.errors().empty()) << spy.errors().front();
}

TEST(Aligned, ZeroSizeRequestsGetDistinctLines) {
  memkit::aligned<> r;
  void* a = r.allocate(0);
  void* b = r.allocate(0);
  EXPECT_NE(a, nullptr);
  EXPECT_NE(line_of(a), line_of(b));
  r.deallocate(a, 0);
  r.deallocate(b, 0);
}

TEST(Aligned, RejectsImpossibleRequests) {
  spy_resource spy;
  spy_aligned r(spy_ref{spy});
  EXPECT_EQ(r.max_size(), memkit::unbounded_size & ~std::size_t{63});
  EXPECT_EQ(r.max_alignment(), spy.max_alignment());
  EXPECT_THROW((void)r.allocate(SIZE_MAX, 8), memkit::bad_size);
  EXPECT_THROW((void)r.allocate(SIZE_MAX - 10, 8), memkit::bad_size);
  EXPECT_THROW((void)r.allocate(16, 3), memkit::bad_alignment);
  EXPECT_EQ(r.try_allocate(16, 0), nullptr);
  EXPECT_EQ(r.try_allocate(16, 96), nullptr) << "96 is not a power of two, even if above 64";
  EXPECT_EQ(r.try_allocate(SIZE_MAX, 8), nullptr);
  EXPECT_EQ(spy.allocations(), 0u);
}

TEST(Aligned, ExhaustedUpstreamFailsNamingTheDecorator) {
  memkit::aligned<memkit::null_resource> r;
  EXPECT_EQ(r.try_allocate(8), nullptr);
  try {
    (void)r.allocate(8, 8);
    FAIL() << "allocate must throw";
  } catch (const memkit::out_of_memory& e) {
    EXPECT_STREQ(e.resource(), "memkit::aligned");
    EXPECT_NE(std::string(e.what()).find("memkit::aligned: out of memory"), std::string::npos);
  }
  spy_resource spy(100);
  spy_aligned bounded(spy_ref{spy});
  void* p = bounded.allocate(64);
  EXPECT_THROW((void)bounded.allocate(1), memkit::out_of_memory) << "64 + 64 exceeds 100";
  bounded.deallocate(p, 64);
  EXPECT_EQ(spy.blocks_in_use(), 0u);
}

TEST(Aligned, OwnsForwardsToTheUpstream) {
  alignas(64) std::array<std::byte, 512> buffer{};
  memkit::buffer_resource buf(buffer.data(), buffer.size());
  memkit::aligned<memkit::resource_ref<memkit::buffer_resource>> r(
      memkit::resource_ref<memkit::buffer_resource>{buf});
  void* p = r.allocate(10);
  EXPECT_TRUE(r.owns(p));
  int local = 0;
  EXPECT_FALSE(r.owns(&local));
  void* q = r.allocate(10);
  EXPECT_EQ(static_cast<char*>(q) - static_cast<char*>(p), 64);
}

TEST(Aligned, ReportsPointersAndSizesItCannotHaveHandedOut) {
  misuse_recorder rec;
  spy_resource spy;
  spy_aligned r(spy_ref{spy});
  char* p = static_cast<char*>(r.allocate(40));
  r.deallocate(p + 8, 40);
  r.deallocate(p, SIZE_MAX);
  r.deallocate(p, 40, 48);
  ASSERT_EQ(rec.reports().size(), 3u);
  EXPECT_EQ(rec.reports()[0].kind, memkit::misuse::foreign_pointer);
  EXPECT_STREQ(rec.reports()[0].resource, "memkit::aligned");
  EXPECT_EQ(rec.reports()[1].kind, memkit::misuse::size_mismatch);
  EXPECT_EQ(rec.reports()[2].kind, memkit::misuse::alignment_mismatch);
  EXPECT_EQ(spy.blocks_in_use(), 1u) << "ignored calls must not reach the upstream";
  r.deallocate(nullptr, 40);
  r.deallocate(p, 40);
  EXPECT_EQ(spy.blocks_in_use(), 0u);
  EXPECT_TRUE(spy.errors().empty()) << spy.errors().front();
}

TEST(Aligned, DefaultMisuseHandlerAbortsNamingTheDecoratorAndTheMistake) {
  spy_resource spy;
  spy_aligned r(spy_ref{spy});
  char* p = static_cast<char*>(r.allocate(8));
  EXPECT_DEATH(r.deallocate(p + 1, 8), "memkit::aligned: foreign pointer");
  r.deallocate(p, 8);
  EXPECT_TRUE(spy.errors().empty());
}

} // namespace
