// SPDX-License-Identifier: BSL-1.0
#include "memkit/detail/carver.hpp"

#include <array>
#include <cstddef>
#include <gtest/gtest.h>

#include "memkit/error.hpp"

namespace {

using memkit::detail::carver;

TEST(Carver, HandsOutEqualBlocksFrontToBackUntilTooFewBytesAreLeft) {
  alignas(16) std::array<char, 100> storage{};
  carver c(storage.data(), storage.data() + storage.size());
  EXPECT_EQ(c.remaining(), 100u);
  EXPECT_EQ(c.carve(32), storage.data());
  EXPECT_EQ(c.carve(32), storage.data() + 32);
  EXPECT_EQ(c.carve(32), storage.data() + 64);
  EXPECT_EQ(c.remaining(), 4u);
  EXPECT_FALSE(c.can_carve(32));
  EXPECT_EQ(c.carve(32), nullptr);
  EXPECT_EQ(c.next(), storage.data() + 96); // a refusal changes nothing
  EXPECT_EQ(c.carve(4), storage.data() + 96);
  EXPECT_EQ(c.remaining(), 0u);
}

TEST(Carver, IsExhaustedExactlyWhenAWholeNumberOfBlocksIsUsedUp) {
  alignas(16) std::array<char, 64> storage{};
  carver c(storage.data(), storage.data() + storage.size());
  EXPECT_FALSE(c.exhausted());
  EXPECT_EQ(c.take(32), storage.data());
  EXPECT_FALSE(c.exhausted());
  EXPECT_EQ(c.take(32), storage.data() + 32);
  EXPECT_TRUE(c.exhausted());
  EXPECT_EQ(c.end(), storage.data() + 64);
}

TEST(Carver, TakeBatchCarvesUpToNBlocksAndAtLeastOne) {
  alignas(16) std::array<char, 160> storage{};
  carver c(storage.data(), storage.data() + storage.size());
  std::size_t taken = 0;
  EXPECT_EQ(c.take_batch(32, 2, taken), storage.data());
  EXPECT_EQ(taken, 2u);
  EXPECT_EQ(c.take_batch(32, 0, taken), storage.data() + 64); // 0 asks for one
  EXPECT_EQ(taken, 1u);
  EXPECT_EQ(c.take_batch(32, 10, taken), storage.data() + 96); // only two are left
  EXPECT_EQ(taken, 2u);
  EXPECT_TRUE(c.exhausted());
}

TEST(Carver, DefaultConstructedHasNothingToCarve) {
  carver c;
  EXPECT_TRUE(c.exhausted());
  EXPECT_EQ(c.remaining(), 0u);
  EXPECT_EQ(c.carve(1), nullptr);
}

TEST(Carver, ThrowBadGeometryNamesTheAlignmentFirstThenTheSize) {
  EXPECT_THROW(memkit::detail::throw_bad_geometry("x", 8, 3), memkit::bad_alignment);
  EXPECT_THROW(memkit::detail::throw_bad_geometry("x", 8, 0), memkit::bad_alignment);
  try {
    memkit::detail::throw_bad_geometry("memkit::x", 0, 16);
    FAIL() << "no exception";
  } catch (const memkit::bad_size& e) {
    EXPECT_STREQ(e.resource(), "memkit::x");
  }
}

TEST(Carver, RejectBlockReportsTheMistakeAndIgnoresNull) {
  static memkit::misuse_report last;
  static int reports = 0;
  reports = 0; // again, for a repeated run (--gtest_repeat)
  const auto previous = memkit::set_misuse_handler([](const memkit::misuse_report& r) {
    last = r;
    ++reports;
  });
  int block = 0;
  memkit::detail::reject_block("memkit::x", false, &block, 8, 8, 16, 16);
  EXPECT_EQ(last.kind, memkit::misuse::foreign_pointer);
  memkit::detail::reject_block("memkit::x", true, &block, 32, 8, 16, 16);
  EXPECT_EQ(last.kind, memkit::misuse::size_mismatch);
  memkit::detail::reject_block("memkit::x", true, &block, 8, 32, 16, 16);
  EXPECT_EQ(last.kind, memkit::misuse::alignment_mismatch);
  memkit::detail::reject_block("memkit::x", true, &block, 8, 8, 16, 16);
  EXPECT_EQ(last.kind, memkit::misuse::double_free);
  EXPECT_STREQ(last.resource, "memkit::x");
  memkit::detail::reject_block("memkit::x", false, nullptr, 8, 8, 16, 16);
  EXPECT_EQ(reports, 4);
  memkit::set_misuse_handler(previous);
}

} // namespace
