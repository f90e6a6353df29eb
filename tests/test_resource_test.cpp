// SPDX-License-Identifier: BSL-1.0
#include "memkit/test_resource.hpp"

#include <cstring>
#include <gtest/gtest.h>
#include <memory_resource>
#include <stdexcept>
#include <string>
#include <vector>

#include "memkit/pool.hpp"
#include "support/spy_resource.hpp"

namespace {

using memkit::test_resource;
using memkit::test::misuse_recorder;

static_assert(memkit::is_resource_v<test_resource>);
static_assert(memkit::has_owns_v<test_resource>);
static_assert(std::is_base_of_v<std::pmr::memory_resource, test_resource>);
static_assert(std::is_final_v<test_resource>);

TEST(TestResource, CountsBlocksAndBytesInUsePeakAndTotal) {
  test_resource r;
  void* a = r.allocate(10, 8);
  void* b = r.allocate(20, 16);
  EXPECT_EQ(r.blocks_in_use(), 2u);
  EXPECT_EQ(r.bytes_in_use(), 30u);
  r.deallocate(a, 10, 8);
  void* c = r.allocate(5, 1);
  EXPECT_EQ(r.blocks_in_use(), 2u);
  EXPECT_EQ(r.bytes_in_use(), 25u);
  EXPECT_EQ(r.peak_blocks(), 2u);
  EXPECT_EQ(r.peak_bytes(), 30u);
  EXPECT_EQ(r.total_blocks(), 3u);
  EXPECT_EQ(r.total_bytes(), 35u);
  EXPECT_EQ(r.requests(), 3u);
  EXPECT_EQ(r.deallocations(), 1u);
  r.deallocate(b, 20, 16);
  r.deallocate(c, 5, 1);
  EXPECT_EQ(r.blocks_in_use(), 0u);
  EXPECT_EQ(r.bytes_in_use(), 0u);
}

TEST(TestResource, HonoursEveryPowerOfTwoAlignmentAndRejectsBadRequests) {
  test_resource r;
  for (std::size_t a = 1; a <= memkit::page_size; a *= 2) {
    void* p = r.allocate(24, a);
    EXPECT_TRUE(memkit::detail::is_aligned(p, a)) << "alignment " << a;
    EXPECT_TRUE(r.owns(static_cast<char*>(p) + 23));
    EXPECT_FALSE(r.owns(static_cast<char*>(p) + 24));
    r.deallocate(p, 24, a);
  }
  void* z = r.allocate(0, 8);
  EXPECT_TRUE(r.owns(z));
  r.deallocate(z, 0, 8);
  EXPECT_THROW((void)r.allocate(16, 3), memkit::bad_alignment);
  EXPECT_THROW((void)r.allocate(SIZE_MAX, 8), memkit::bad_size);
  EXPECT_EQ(r.try_allocate(16, 0), nullptr);
  r.deallocate(nullptr, 8, 8);
  EXPECT_EQ(r.blocks_in_use(), 0u);
}

TEST(TestResource, AllocationLimitFailsTheNthAllocationOnceNamingTheResource) {
  test_resource r("fixture");
  r.set_allocation_limit(2);
  void* a = r.allocate(8, 8);
  void* b = r.allocate(8, 8);
  try {
    (void)r.allocate(8, 8);
    ADD_FAILURE() << "the third allocation did not fail";
  } catch (const memkit::out_of_memory& e) {
    EXPECT_STREQ(e.resource(), "fixture");
  }
  void* c = r.allocate(8, 8);
  EXPECT_EQ(r.failures(), 1u);
  r.set_allocation_limit(0);
  EXPECT_EQ(r.try_allocate(8, 8), nullptr);
  r.set_allocation_limit(0);
  r.clear_allocation_limit();
  void* d = r.allocate(8, 8);
  for (void* p : {a, b, c, d}) {
    r.deallocate(p, 8, 8);
  }
  EXPECT_EQ(r.failures(), 2u);
}

TEST(TestResource, ReportsMisusedDeallocationsAndKeepsTheBlock) {
  misuse_recorder rec;
  test_resource r;
  int outside = 0;
  void* p = r.allocate(16, 8);
  r.deallocate(&outside, sizeof outside, alignof(int));
  r.deallocate(p, 8, 8);
  r.deallocate(p, 16, 16);
  EXPECT_EQ(rec.count(memkit::misuse::foreign_pointer), 1u);
  EXPECT_EQ(rec.count(memkit::misuse::size_mismatch), 1u);
  EXPECT_EQ(rec.count(memkit::misuse::alignment_mismatch), 1u);
  EXPECT_STREQ(misuse_recorder::reports()[0].resource, "memkit::test_resource");
  EXPECT_EQ(r.blocks_in_use(), 1u);
  r.deallocate(p, 16, 8);
  r.deallocate(p, 16, 8);
  EXPECT_EQ(rec.count(memkit::misuse::foreign_pointer), 2u);
}

TEST(TestResource, ServesStdPmrContainersAndIsEqualOnlyToItself) {
  test_resource r;
  test_resource other;
  EXPECT_TRUE(r.is_equal(r));
  EXPECT_FALSE(r.is_equal(other));
  {
    std::pmr::vector<int> v(&r);
    v.assign(100, 7);
    EXPECT_GE(r.bytes_in_use(), 100 * sizeof(int));
    std::pmr::memory_resource& base = r;
    void* p = base.allocate(64, 64);
    EXPECT_TRUE(memkit::detail::is_aligned(p, 64));
    base.deallocate(p, 64, 64);
  }
  EXPECT_EQ(r.blocks_in_use(), 0u);
}

TEST(TestResource, StandsUnderAStrategyAsItsUpstream) {
  test_resource r;
  {
    memkit::pool<memkit::resource_ref<test_resource>> pool(32, 8, memkit::resource_ref(r));
    void* p = pool.allocate(32, 8);
    EXPECT_EQ(r.blocks_in_use(), 1u);
    pool.deallocate(p, 32, 8);
  }
  EXPECT_EQ(r.blocks_in_use(), 0u);
  EXPECT_EQ(r.total_blocks(), 1u);
}

TEST(TestResource, DestructionWithBlocksInUseAbortsNamingTheResourceAndTheOldestBlock) {
  EXPECT_DEATH(
      {
        test_resource r("leaky");
        (void)r.allocate(12, 4);
        (void)r.allocate(30, 8);
      },
      "leaky: 2 block\\(s\\), 42 byte\\(s\\) leaked; the oldest at 0x[0-9a-f]+ \\(size 12, "
      "alignment 4; block #1\\)");
}

// A strong-guarantee push: either the element is added, or nothing changes and nothing leaks.
void push_copy(std::pmr::vector<std::pmr::string>& v, const char* s) { v.emplace_back(s); }

TEST(ExceptionTestLoop, FailsEveryAllocationPointInTurnUntilACleanRun) {
  test_resource r;
  std::vector<std::size_t> seen;
  const std::size_t runs = memkit::exception_test_loop(r, [&] {
    seen.push_back(r.requests());
    std::pmr::vector<std::pmr::string> v(&r);
    push_copy(v, "a string long enough to need the heap, not the small buffer");
    push_copy(v, "and another one, equally too long for any small string buffer");
  });
  // Each push allocates the vector's array and the string; the second reallocates the array.
  EXPECT_EQ(runs, 5u);
  EXPECT_EQ(seen.size(), runs);
  EXPECT_EQ(r.failures(), 4u);
  EXPECT_EQ(r.blocks_in_use(), 0u);
}

TEST(ExceptionTestLoop, ThrowsALeakReportNamingTheLeakedBlock) {
  test_resource r("loop");
  try {
    memkit::exception_test_loop(r, [&] {
      void* a = r.allocate(16, 8);
      void* b = r.allocate(24, 8); // throws in the second run, leaking `a`
      r.deallocate(b, 24, 8);
      r.deallocate(a, 16, 8);
    });
    ADD_FAILURE() << "the leak went unnoticed";
  } catch (const memkit::misuse_error& e) {
    EXPECT_EQ(e.report().kind, memkit::misuse::leak);
    EXPECT_EQ(e.report().size, 16u);
    EXPECT_EQ(e.report().allocation, 1u);
    EXPECT_NE(std::string(e.what()).find("loop: leak at"), std::string::npos) << e.what();
    r.deallocate(const_cast<void*>(e.report().pointer), 16, 8);
  }
  EXPECT_EQ(r.blocks_in_use(), 0u);
}

TEST(ExceptionTestLoop, LetsOtherExceptionsAndUnexplainedBadAllocThrough) {
  test_resource r;
  EXPECT_THROW(memkit::exception_test_loop(r, [] { throw std::runtime_error("boom"); }),
               std::runtime_error);
  EXPECT_THROW(memkit::exception_test_loop(r, [] { throw std::bad_alloc(); }), std::bad_alloc);
  EXPECT_EQ(memkit::exception_test_loop(r, [] {}), 1u);
}

TEST(DefaultResourceGuard, CountsUseOfTheDefaultResourceAndRestoresIt) {
  std::pmr::memory_resource* before = std::pmr::get_default_resource();
  {
    memkit::default_resource_guard guard(false);
    EXPECT_EQ(std::pmr::get_default_resource(), &guard.resource());
    test_resource r;
    std::pmr::vector<int> explicit_resource(100, 1, &r);
    EXPECT_EQ(guard.requests(), 0u);
    {
      std::pmr::vector<int> defaulted(100, 1);
      EXPECT_EQ(guard.requests(), 1u);
    }
  }
  EXPECT_EQ(std::pmr::get_default_resource(), before);
}

TEST(DefaultResourceGuard, PassesSilentlyWhenTheDefaultResourceIsUntouched) {
  memkit::default_resource_guard guard;
  test_resource r;
  std::pmr::string s("a string long enough to need the heap, not the small buffer", &r);
  EXPECT_EQ(guard.requests(), 0u);
}

TEST(DefaultResourceGuard, AbortsByDefaultWhenTheDefaultResourceWasUsed) {
  EXPECT_DEATH(
      {
        memkit::default_resource_guard guard;
        std::pmr::vector<int> v(10, 1);
        v.clear();
        v.shrink_to_fit();
      },
      "memkit::default_resource_guard: the default std::pmr resource was asked for memory 1 "
      "time\\(s\\)");
}

} // namespace
