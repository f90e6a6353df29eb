// SPDX-License-Identifier: BSL-1.0
#include "memkit/detail/chunk_list.hpp"

#include <cstddef>
#include <gtest/gtest.h>
#include <vector>

#include "support/spy_resource.hpp"

namespace {

using memkit::detail::chunk;
using memkit::detail::chunk_growth;
using memkit::detail::chunk_list;
using memkit::test::spy_resource;

TEST(ChunkList, ObtainsChunksWithTheHeaderAtTheirEnd) {
  spy_resource spy;
  chunk_list list;
  const chunk* c = list.obtain(spy, 64, 32);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->bytes, 64 + sizeof(chunk));
  EXPECT_EQ(c->area(), 64u);
  EXPECT_EQ(c->blocks_end(), c->begin() + 64);
  EXPECT_TRUE(memkit::detail::is_aligned(c->begin(), 32));
  EXPECT_EQ(spy.bytes_in_use(), 64 + sizeof(chunk));
  EXPECT_TRUE(list.contains(c->begin()));
  EXPECT_TRUE(list.contains(c->begin() + 63));
  EXPECT_FALSE(list.contains(c->begin() + 64)); // the header is not a block
  EXPECT_TRUE(list.well_formed());
  std::size_t returned = 0;
  list.release(spy, 32, [&](std::size_t bytes) { returned += bytes; });
  EXPECT_EQ(returned, 64 + sizeof(chunk));
  EXPECT_EQ(spy.blocks_in_use(), 0u);
  EXPECT_TRUE(spy.errors().empty());
  EXPECT_EQ(list.count(), 0u);
}

TEST(ChunkList, HandsOutSpareChunksOldestFirstAndKeepsThemAllOnKeepAll) {
  spy_resource spy;
  chunk_list list;
  EXPECT_EQ(list.take_spare(), nullptr);
  const chunk* a = list.obtain(spy, 16, 16);
  const chunk* b = list.obtain(spy, 32, 16);
  EXPECT_EQ(list.take_spare(), a);
  const chunk* c = list.obtain(spy, 48, 16); // obtained ahead of need: spare after b
  EXPECT_EQ(list.take_spare(), b);
  EXPECT_EQ(list.take_spare(), c);
  EXPECT_EQ(list.take_spare(), nullptr);
  EXPECT_EQ(list.count(), 3u);
  EXPECT_TRUE(list.well_formed());
  list.keep_all();
  EXPECT_EQ(list.take_spare(), a);
  EXPECT_EQ(list.take_spare(), b);
  EXPECT_EQ(list.take_spare(), c);
  EXPECT_EQ(list.take_spare(), nullptr);
  list.release(spy, 16, [](std::size_t) {});
  EXPECT_EQ(spy.blocks_in_use(), 0u);
  EXPECT_TRUE(spy.errors().empty());
}

TEST(ChunkList, ObtainBlocksHalvesUnderABoundedUpstreamDownToTheNeed) {
  spy_resource spy(10 * 32 + sizeof(chunk));
  chunk_list list;
  std::size_t blocks = 0;
  const chunk* c = list.obtain_blocks(spy, 64, 3, 32, 16, blocks);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(blocks, 8u); // 64, 32 and 16 refused
  EXPECT_EQ(c->area(), 8u * 32);
  EXPECT_EQ(list.obtain_blocks(spy, 64, 3, 32, 16, blocks), nullptr);
  EXPECT_EQ(blocks, 8u);
  EXPECT_EQ(list.obtain_blocks(spy, SIZE_MAX, SIZE_MAX, 32, 16, blocks), nullptr);
  list.release(spy, 16, [](std::size_t) {});
  EXPECT_TRUE(spy.errors().empty());
}

TEST(ChunkGrowth, DoublesWhatWasObtainedUpToTheCap) {
  chunk_growth g(32, 100);
  EXPECT_EQ(g.next(), 32u);
  g.grew(32);
  EXPECT_EQ(g.next(), 64u);
  g.grew(64);
  EXPECT_EQ(g.next(), 100u);
  g.grew(10); // a halved chunk doubles from what it got
  EXPECT_EQ(g.next(), 20u);
  g.restart();
  EXPECT_EQ(g.next(), 32u);
  EXPECT_EQ(chunk_growth(8, 4).max(), 8u);
}

} // namespace
