// SPDX-License-Identifier: BSL-1.0
#include "memkit/detail/address_table.hpp"

#include <cstddef>
#include <gtest/gtest.h>
#include <random>
#include <string>
#include <vector>

#include "support/spy_resource.hpp"

namespace {

using memkit::detail::address_table;
using memkit::test::spy_resource;

TEST(AddressTable, FindsWhatItRecordedAndForgetsWhatItErased) {
  spy_resource spy;
  address_table t;
  EXPECT_EQ(t.count(), 0u);
  EXPECT_EQ(spy.calls(), 0u); // nothing until the first insert
  std::vector<char> blocks(4096);
  for (std::size_t i = 0; i < 64; ++i) {
    ASSERT_TRUE(t.insert(spy, {&blocks[i * 64], i + 1, 16}));
  }
  EXPECT_EQ(t.count(), 64u);
  EXPECT_EQ(t.bytes(), 64u * 65 / 2);
  EXPECT_TRUE(t.well_formed());
  for (std::size_t i = 0; i < 64; ++i) {
    auto* e = t.find(&blocks[i * 64]);
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->bytes, i + 1);
  }
  EXPECT_EQ(t.find(&blocks[1]), nullptr);
  EXPECT_TRUE(t.covers(&blocks[64 * 3 + 3]));  // inside the block of 4 bytes
  EXPECT_FALSE(t.covers(&blocks[64 * 3 + 4])); // just past it
  for (std::size_t i = 0; i < 64; i += 2) {
    t.erase(t.find(&blocks[i * 64]));
  }
  EXPECT_TRUE(t.well_formed());
  EXPECT_EQ(t.count(), 32u);
  for (std::size_t i = 0; i < 64; ++i) {
    EXPECT_EQ(t.find(&blocks[i * 64]) != nullptr, i % 2 == 1) << i;
  }
  std::size_t cleared = 0;
  t.clear([&](const address_table::entry& e) { cleared += e.bytes; });
  EXPECT_EQ(cleared, 32u * 33);
  EXPECT_EQ(t.count(), 0u);
  EXPECT_EQ(t.bytes(), 0u);
  t.release(spy);
  EXPECT_EQ(spy.blocks_in_use(), 0u);
  EXPECT_TRUE(spy.errors().empty());
}

TEST(AddressTable, RandomInsertsAndErasesKeepEveryProbePathIntact) {
  const auto seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  spy_resource spy;
  address_table t;
  std::vector<char> blocks(1 << 16);
  std::vector<bool> in(blocks.size() / 16);
  for (int op = 0; op < 20000; ++op) {
    const std::size_t i = std::uniform_int_distribution<std::size_t>(0, in.size() - 1)(rng);
    void* p = &blocks[i * 16];
    if (in[i]) {
      t.erase(t.find(p));
    } else {
      ASSERT_TRUE(t.insert(spy, {p, 16, 16}));
    }
    in[i] = !in[i];
    if (op % 1000 == 0) {
      ASSERT_TRUE(t.well_formed());
    }
  }
  for (std::size_t i = 0; i < in.size(); ++i) {
    ASSERT_EQ(t.find(&blocks[i * 16]) != nullptr, in[i]) << i;
  }
  t.clear([](const address_table::entry&) {});
  t.release(spy);
  EXPECT_TRUE(spy.errors().empty());
}

TEST(AddressTable, InsertFailsCleanlyWhenTheSlotsCannotGrow) {
  spy_resource spy(0);
  address_table t;
  char block = 0;
  EXPECT_FALSE(t.insert(spy, {&block, 1, 1}));
  EXPECT_EQ(t.count(), 0u);
  EXPECT_EQ(t.find(&block), nullptr);
  t.release(spy);
}

} // namespace
