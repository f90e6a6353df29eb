// SPDX-License-Identifier: BSL-1.0
#include "memkit/huge_page.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <gtest/gtest.h>
#include <iostream>
#include <string>
#include <vector>

#include "memkit/allocator.hpp"
#include "memkit/pool.hpp"
#include "support/spy_resource.hpp"

namespace {

using memkit::huge_page_resource;
using memkit::test::misuse_recorder;

constexpr std::size_t two_mib = std::size_t{1} << 21;

static_assert(memkit::is_resource_v<huge_page_resource>);
static_assert(huge_page_resource::huge_page_size == two_mib);
static_assert(huge_page_resource::region_size(0) == two_mib);
static_assert(huge_page_resource::region_size(1) == two_mib);
static_assert(huge_page_resource::region_size(two_mib) == two_mib);
static_assert(huge_page_resource::region_size(two_mib + 1) == 2 * two_mib);

// The policy as the sysfs file states it, read independently of memkit's parser.
memkit::thp_policy policy_from_sysfs() {
  std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  if (!std::getline(in, line)) {
    return memkit::thp_policy::unavailable;
  }
  if (line.find("[always]") != std::string::npos) {
    return memkit::thp_policy::always;
  }
  if (line.find("[madvise]") != std::string::npos) {
    return memkit::thp_policy::madvise;
  }
  if (line.find("[never]") != std::string::npos) {
    return memkit::thp_policy::never;
  }
  return memkit::thp_policy::unavailable;
}

TEST(HugePageResource, RegionsAreTwoMebibyteAlignedAndRounded) {
  huge_page_resource r;
  EXPECT_EQ(r.max_alignment(), two_mib);
  EXPECT_STREQ(r.name(), "memkit::huge_page_resource");
  void* a = r.allocate(1);
  void* b = r.allocate(two_mib + 1);
  EXPECT_TRUE(memkit::detail::is_aligned(a, two_mib));
  EXPECT_TRUE(memkit::detail::is_aligned(b, two_mib));
  // The whole rounded region is usable.
  std::memset(b, 0x5a, huge_page_resource::region_size(two_mib + 1));
  r.deallocate(a, 1);
  r.deallocate(b, two_mib + 1);
}

TEST(HugePageResource, HonoursEveryAlignmentUpToTwoMebibytes) {
  huge_page_resource r;
  for (std::size_t a = 1; a <= two_mib; a *= 2) {
    void* p = r.allocate(100, a);
    EXPECT_TRUE(memkit::detail::is_aligned(p, a)) << "alignment " << a;
    r.deallocate(p, 100, a);
  }
  EXPECT_THROW((void)r.allocate(100, 2 * two_mib), memkit::bad_alignment);
}

TEST(HugePageResource, RejectsImpossibleRequests) {
  huge_page_resource r;
  EXPECT_THROW((void)r.allocate(SIZE_MAX, 8), memkit::bad_size);
  EXPECT_THROW((void)r.allocate(r.max_size() + 1, 8), memkit::bad_size);
  EXPECT_THROW((void)r.allocate(64, 3), memkit::bad_alignment);
  EXPECT_EQ(r.try_allocate(64, 0), nullptr);
  EXPECT_EQ(r.try_allocate(SIZE_MAX, 8), nullptr);
}

TEST(HugePageResource, ZeroSizeRequestsGetDistinctRegions) {
  huge_page_resource r;
  void* a = r.allocate(0);
  void* b = r.allocate(0);
  EXPECT_NE(a, nullptr);
  EXPECT_NE(a, b);
  r.deallocate(a, 0);
  r.deallocate(b, 0);
}

TEST(HugePageResource, RegionsAreZeroedAndDoNotOverlap) {
  huge_page_resource r;
  const std::size_t size = 3 * two_mib / 2;
  std::vector<unsigned char*> regions;
  for (int i = 0; i < 4; ++i) {
    auto* p = static_cast<unsigned char*>(r.allocate(size));
    EXPECT_TRUE(std::all_of(p, p + size, [](unsigned char c) { return c == 0; }));
    regions.push_back(p);
  }
  for (std::size_t i = 0; i < regions.size(); ++i) {
    std::memset(regions[i], static_cast<int>(i + 1), size);
  }
  for (std::size_t i = 0; i < regions.size(); ++i) {
    const unsigned char* p = regions[i];
    EXPECT_TRUE(std::all_of(p, p + size, [&](unsigned char c) { return c == i + 1; }));
    r.deallocate(regions[i], size);
  }
}

TEST(HugePageResource, PolicyAgreesWithSysfs) {
  const memkit::thp_policy policy = huge_page_resource::transparent_huge_page_policy();
  EXPECT_EQ(policy, policy_from_sysfs());
  EXPECT_EQ(huge_page_resource::transparent_huge_pages_available(),
            policy == memkit::thp_policy::always || policy == memkit::thp_policy::madvise);
}

TEST(HugePageResource, HugePageReportIsConsistentWithThePolicy) {
  huge_page_resource r;
  const std::size_t size = 8 * two_mib;
  auto* p = static_cast<char*>(r.allocate(size));
  EXPECT_EQ(huge_page_resource::huge_page_bytes(p, size), 0u) << "untouched memory has no pages";
  std::memset(p, 1, size);
  const std::size_t huge = huge_page_resource::huge_page_bytes(p, size);
  EXPECT_LE(huge, size);
  EXPECT_EQ(huge % two_mib, 0u) << "huge pages come in whole 2 MiB pages";
  if (!huge_page_resource::transparent_huge_pages_available()) {
    EXPECT_EQ(huge, 0u) << "THP is off, yet the kernel reports huge pages";
  }
  std::cout << "[ info     ] THP policy " << static_cast<int>(policy_from_sysfs())
            << " (0 always, 1 madvise, 2 never, 3 unavailable): " << huge / two_mib << " of "
            << size / two_mib << " pages are huge\n";
  // A sub-range reports at most its own size.
  EXPECT_LE(huge_page_resource::huge_page_bytes(p + size / 2, two_mib), two_mib);
  EXPECT_EQ(huge_page_resource::huge_page_bytes(nullptr, size), 0u);
  r.deallocate(p, size);
}

TEST(HugePageResource, ReportsPointersAndSizesItCannotHaveHandedOut) {
  misuse_recorder rec;
  huge_page_resource r;
  auto* p = static_cast<char*>(r.allocate(100));
  r.deallocate(p + 4096, 100);
  r.deallocate(p, SIZE_MAX);
  r.deallocate(p, 100, 3);
  ASSERT_EQ(rec.reports().size(), 3u);
  EXPECT_EQ(rec.reports()[0].kind, memkit::misuse::foreign_pointer);
  EXPECT_STREQ(rec.reports()[0].resource, "memkit::huge_page_resource");
  EXPECT_EQ(rec.reports()[1].kind, memkit::misuse::size_mismatch);
  EXPECT_EQ(rec.reports()[2].kind, memkit::misuse::alignment_mismatch);
  p[two_mib - 1] = 1; // still mapped: every ignored call left the region alone
  r.deallocate(nullptr, 100);
  r.deallocate(p, 100);
}

TEST(HugePageResource, DefaultMisuseHandlerAbortsNamingTheResourceAndTheMistake) {
  huge_page_resource r;
  auto* p = static_cast<char*>(r.allocate(100));
  EXPECT_DEATH(r.deallocate(p + 64, 100), "memkit::huge_page_resource: foreign pointer");
  r.deallocate(p, 100);
}

TEST(HugePageResource, ServesAsThePoolsUpstream) {
  memkit::pool<huge_page_resource> pool(64);
  std::vector<void*> blocks;
  for (int i = 0; i < 992; ++i) {
    blocks.push_back(pool.allocate(64));
  }
  EXPECT_TRUE(pool.owns(blocks.front()));
  EXPECT_TRUE(pool.owns(blocks.back()));
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    std::memset(blocks[i], static_cast<int>(i), 64);
  }
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    const auto* b = static_cast<const unsigned char*>(blocks[i]);
    EXPECT_TRUE(std::all_of(b, b + 64, [&](unsigned char c) { return c == i % 256; }));
  }
  // Chunks of 32, 64, ... 512 blocks: each its own 2 MiB region.
  EXPECT_EQ(pool.chunk_count(), 5u);
}

} // namespace

namespace {

using memkit::huge_page_cache;

static_assert(memkit::is_resource_v<huge_page_cache>);

TEST(HugePageCache, ReusesAReturnedRegionOfTheSameRegionSize) {
  huge_page_cache c;
  EXPECT_STREQ(c.name(), "memkit::huge_page_cache");
  auto* a = static_cast<char*>(c.allocate(100));
  EXPECT_TRUE(memkit::detail::is_aligned(a, two_mib));
  a[0] = 42;
  c.deallocate(a, 100);
  EXPECT_EQ(c.cached_regions(), 1u);
  EXPECT_EQ(c.cached_bytes(), two_mib);
  // Any request that rounds to one 2 MiB region gets it back, contents as they were left.
  auto* b = static_cast<char*>(c.allocate(two_mib, 4096));
  EXPECT_EQ(b, a);
  EXPECT_EQ(b[0], 42) << "a reused region is not zero-filled";
  EXPECT_EQ(c.cached_regions(), 0u);
  EXPECT_EQ(c.cached_bytes(), 0u);
  c.deallocate(b, two_mib, 4096);
}

TEST(HugePageCache, ServesOtherRegionSizesFreshAndZeroed) {
  huge_page_cache c;
  auto* small = static_cast<char*>(c.allocate(1));
  std::memset(small, 1, two_mib);
  c.deallocate(small, 1);
  auto* large = static_cast<unsigned char*>(c.allocate(two_mib + 1));
  EXPECT_NE(static_cast<void*>(large), static_cast<void*>(small));
  EXPECT_TRUE(std::all_of(large, large + 2 * two_mib, [](unsigned char x) { return x == 0; }));
  EXPECT_EQ(c.cached_regions(), 1u) << "the 2 MiB region is still kept";
  c.deallocate(large, two_mib + 1);
  EXPECT_EQ(c.cached_bytes(), 3 * two_mib);
}

TEST(HugePageCache, TakesTheMostRecentlyReturnedRegionFirst) {
  huge_page_cache c;
  void* a = c.allocate(10);
  void* b = c.allocate(10);
  c.deallocate(a, 10);
  c.deallocate(b, 10);
  EXPECT_EQ(c.allocate(10), b);
  EXPECT_EQ(c.allocate(10), a);
  c.deallocate(a, 10);
  c.deallocate(b, 10);
}

TEST(HugePageCache, KeepsNoMoreThanItsByteLimit) {
  huge_page_cache c(3 * two_mib);
  std::vector<void*> blocks;
  for (int i = 0; i < 4; ++i) {
    blocks.push_back(c.allocate(two_mib));
  }
  for (void* p : blocks) {
    c.deallocate(p, two_mib);
  }
  EXPECT_EQ(c.cached_regions(), 3u);
  EXPECT_EQ(c.cached_bytes(), 3 * two_mib);
  // A region larger than what is left under the limit is unmapped, not kept.
  void* big = c.allocate(2 * two_mib);
  c.deallocate(big, 2 * two_mib);
  EXPECT_EQ(c.cached_bytes(), 3 * two_mib);
}

TEST(HugePageCache, KeepsNoMoreThanMaxRegions) {
  huge_page_cache c(std::size_t{1} << 40);
  std::vector<void*> blocks;
  for (std::size_t i = 0; i <= huge_page_cache::max_regions; ++i) {
    blocks.push_back(c.allocate(64));
  }
  for (void* p : blocks) {
    c.deallocate(p, 64);
  }
  EXPECT_EQ(c.cached_regions(), huge_page_cache::max_regions);
}

TEST(HugePageCache, TrimAndDestructionReturnTheKeptRegions) {
  huge_page_cache c;
  void* p = c.allocate(64);
  c.deallocate(p, 64);
  c.trim();
  EXPECT_EQ(c.cached_regions(), 0u);
  EXPECT_EQ(c.cached_bytes(), 0u);
  // Trimmed regions are unmapped: the next request maps a fresh, zero-filled one.
  auto* q = static_cast<unsigned char*>(c.allocate(64));
  EXPECT_EQ(q[0], 0);
  q[0] = 1;
  c.deallocate(q, 64);
}

TEST(HugePageCache, GrowingVectorReusesItsRegionsAndKeepsItsHugePages) {
  huge_page_cache c;
  using vector = std::vector<int, memkit::allocator<int, huge_page_cache>>;
  const std::size_t ints = (std::size_t{8} << 20) / sizeof(int);
  std::size_t first_huge = 0;
  for (int round = 0; round < 2; ++round) {
    vector v(c);
    for (std::size_t i = 0; i < ints; ++i) {
      v.push_back(static_cast<int>(i));
    }
    const std::size_t huge = huge_page_resource::huge_page_bytes(v.data(), ints * sizeof(int));
    if (round == 0) {
      first_huge = huge;
    } else {
      EXPECT_EQ(huge, first_huge) << "the second round reuses the first round's pages";
      EXPECT_EQ(c.cached_regions(), 3u) << "two 2 MiB regions and one of 4 MiB are kept";
    }
  }
  // Two regions of 2 MiB, one of 4 and one of 8: what the doubling cycles through.
  EXPECT_EQ(c.cached_bytes(), 16 * (std::size_t{1} << 20));
}

TEST(HugePageCache, ReportsMisuseUnderItsOwnNameAndKeepsNothingForIt) {
  misuse_recorder rec;
  huge_page_cache c;
  auto* p = static_cast<char*>(c.allocate(100));
  c.deallocate(p + 4096, 100);
  c.deallocate(p, SIZE_MAX);
  c.deallocate(p, 100, 3);
  c.deallocate(nullptr, 100);
  ASSERT_EQ(rec.reports().size(), 3u);
  EXPECT_EQ(rec.reports()[0].kind, memkit::misuse::foreign_pointer);
  EXPECT_STREQ(rec.reports()[0].resource, "memkit::huge_page_cache");
  EXPECT_EQ(rec.reports()[1].kind, memkit::misuse::size_mismatch);
  EXPECT_EQ(rec.reports()[2].kind, memkit::misuse::alignment_mismatch);
  EXPECT_EQ(c.cached_regions(), 0u);
  c.deallocate(p, 100);
}

} // namespace
