// SPDX-License-Identifier: BSL-1.0
// tests/stress_test.cpp: the stress harness (tests/support/stress.hpp) finds what it is for.
#include "support/stress.hpp"

#include <memkit/upstream.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <memory>

namespace {

/// Hands out blocks that overlap their predecessor by half: the defect a content check must see.
class overlapping {
public:
  void* try_allocate(std::size_t bytes, std::size_t) noexcept {
    if (next_ + bytes > sizeof(buffer_)) {
      return nullptr;
    }
    void* p = buffer_ + next_;
    next_ += bytes / 2 == 0 ? 1 : bytes / 2;
    next_ = (next_ + alignof(std::max_align_t) - 1) & ~(alignof(std::max_align_t) - 1);
    return p;
  }
  void deallocate(void*, std::size_t, std::size_t) noexcept {}

private:
  alignas(std::max_align_t) unsigned char buffer_[1 << 20];
  std::size_t next_ = 0;
};

TEST(Stress, ACorrectResourceKeepsEveryStampAndGetsEveryBlockBack) {
  memkit::malloc_resource r; // a correct thread-safe resource
  memkit::test::stress_options o;
  o.threads = 4;
  o.operations = 5'000;
  const auto res = memkit::test::run_stress(r, o);
  EXPECT_EQ(res.corrupted, 0u) << "seed " << o.seed;
  EXPECT_EQ(res.misaligned, 0u);
  EXPECT_EQ(res.failed_allocations, 0u);
  EXPECT_GT(res.remote_frees, 0u) << "some blocks must cross threads";
  EXPECT_GT(res.local_frees, 0u);
  EXPECT_EQ(res.allocations, res.local_frees + res.remote_frees) << "every block freed once";
}

TEST(Stress, OverlappingBlocksAreReportedAsCorruption) {
  auto r = std::make_unique<overlapping>();
  memkit::test::stress_options o;
  o.threads = 1; // the defect is in the blocks, not in a race
  o.operations = 2'000;
  const auto res = memkit::test::run_stress(*r, o);
  EXPECT_GT(res.corrupted, 0u);
  ASSERT_FALSE(res.errors.empty());
  EXPECT_NE(res.errors.front().find("changed at byte"), std::string::npos) << res.errors.front();
}

} // namespace
