// SPDX-License-Identifier: BSL-1.0
#include "memkit/detail/free_list.hpp"

#include <array>
#include <cstddef>
#include <gtest/gtest.h>
#include <vector>

namespace {

using memkit::detail::free_chain;
using memkit::detail::free_list;

constexpr std::size_t block_size = 32;

struct blocks {
  alignas(16) std::array<std::array<std::byte, block_size>, 10> storage{};
  void* operator[](std::size_t i) { return storage[i].data(); }
};

TEST(FreeList, PopsInReverseOrderOfPushes) {
  blocks b;
  free_list list;
  EXPECT_TRUE(list.empty());
  EXPECT_EQ(list.head(), nullptr);
  for (std::size_t i = 0; i < 3; ++i) {
    list.push(b[i], block_size);
    EXPECT_EQ(list.head(), b[i]);
  }
  EXPECT_EQ(list.pop(), b[2]);
  EXPECT_EQ(list.pop(), b[1]);
  EXPECT_EQ(list.pop(), b[0]);
  EXPECT_TRUE(list.empty());
}

TEST(FreeList, CountsUpToItsLimit) {
  blocks b;
  free_list list;
  EXPECT_EQ(list.count(), 0u);
  for (std::size_t i = 0; i < 10; ++i) {
    list.push(b[i], block_size);
  }
  EXPECT_EQ(list.count(), 10u);
  EXPECT_EQ(list.count(4), 4u);
  EXPECT_EQ(list.count(0), 0u);
  EXPECT_EQ(list.count(100), 10u);
}

TEST(FreeList, ClearForgetsEveryBlock) {
  blocks b;
  free_list list;
  list.push(b[0], block_size);
  list.push(b[1], block_size);
  list.clear();
  EXPECT_TRUE(list.empty());
  EXPECT_EQ(list.count(), 0u);
}

TEST(FreeList, PopChainTakesUpToNBlocksInPopOrderAndTerminatesThem) {
  blocks b;
  free_list list;
  for (std::size_t i = 0; i < 10; ++i) {
    list.push(b[i], block_size);
  }
  const free_chain c = list.pop_chain(4);
  EXPECT_EQ(c.count, 4u);
  EXPECT_EQ(c.first, b[9]);
  EXPECT_EQ(c.last, b[6]);
  std::vector<void*> walked;
  for (void* p = c.first; p != nullptr; p = free_list::next(p)) {
    walked.push_back(p);
  }
  EXPECT_EQ(walked, (std::vector<void*>{b[9], b[8], b[7], b[6]}));
  EXPECT_EQ(list.count(), 6u);
  EXPECT_EQ(list.head(), b[5]);
}

TEST(FreeList, PopChainOfMoreThanTheListTakesItAll) {
  blocks b;
  free_list list;
  EXPECT_EQ(list.pop_chain(3).count, 0u);
  list.push(b[0], block_size);
  list.push(b[1], block_size);
  EXPECT_EQ(list.pop_chain(0).count, 0u);
  const free_chain c = list.pop_chain(5);
  EXPECT_EQ(c.count, 2u);
  EXPECT_EQ(c.first, b[1]);
  EXPECT_EQ(c.last, b[0]);
  EXPECT_EQ(free_list::next(c.last), nullptr);
  EXPECT_TRUE(list.empty());
}

TEST(FreeList, PushChainPutsTheChainInFrontInItsOrder) {
  blocks b;
  free_list from;
  free_list to;
  for (std::size_t i = 0; i < 6; ++i) {
    from.push(b[i], block_size);
  }
  to.push(b[9], block_size);
  to.push_chain(from.pop_chain(3), block_size);
  EXPECT_EQ(to.count(), 4u);
  EXPECT_EQ(to.pop(), b[5]);
  EXPECT_EQ(to.pop(), b[4]);
  EXPECT_EQ(to.pop(), b[3]);
  EXPECT_EQ(to.pop(), b[9]);
  EXPECT_TRUE(to.empty());
  EXPECT_EQ(from.count(), 3u);
}

TEST(FreeList, PushRunPutsConsecutiveBlocksInFrontInAddressOrder) {
  blocks b;
  free_list list;
  list.push(b[9], block_size);
  list.push_run(static_cast<char*>(b[2]), 0, block_size); // nothing
  EXPECT_EQ(list.head(), b[9]);
  list.push_run(static_cast<char*>(b[2]), 4, block_size);
  EXPECT_EQ(list.count(), 5u);
  for (std::size_t i = 2; i < 6; ++i) {
    EXPECT_EQ(list.pop(), b[i]);
  }
  EXPECT_EQ(list.pop(), b[9]);
  EXPECT_TRUE(list.empty());
}

} // namespace
