// SPDX-License-Identifier: BSL-1.0
// tests/remote_queue_test.cpp: the MPSC batch list of memkit/detail/remote_queue.hpp.
#include "memkit/detail/remote_queue.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace {

using memkit::detail::free_chain;
using memkit::detail::free_list;
using memkit::detail::prepend;
using memkit::detail::remote_queue;

struct alignas(16) block {
  unsigned char bytes[32];
};

TEST(RemoteQueue, TakeAllReturnsEveryPostedChainNewestFirst) {
  std::vector<block> blocks(6);
  remote_queue q;
  EXPECT_FALSE(q.has_posts());
  EXPECT_EQ(q.take_all(), nullptr);
  free_chain a;
  prepend(a, &blocks[1], sizeof(block));
  prepend(a, &blocks[0], sizeof(block));
  free_chain b;
  for (std::size_t i = 5; i >= 2; --i) {
    prepend(b, &blocks[i], sizeof(block));
  }
  EXPECT_EQ(b.count, 4u);
  EXPECT_EQ(b.last, &blocks[5]);
  q.post(a);
  q.post(b);
  EXPECT_TRUE(q.has_posts());
  std::vector<void*> seen;
  for (void* p = q.take_all(); p != nullptr; p = free_list::next(p)) {
    seen.push_back(p);
  }
  const std::vector<void*> expected{&blocks[2], &blocks[3], &blocks[4],
                                    &blocks[5], &blocks[0], &blocks[1]};
  EXPECT_EQ(seen, expected);
  EXPECT_FALSE(q.has_posts());
}

TEST(RemoteQueue, EveryBlockOfManyProducersArrivesExactlyOnce) {
  constexpr unsigned producers = 4;
  constexpr std::size_t per_producer = 20'000;
  constexpr std::size_t batch = 7;
  std::vector<block> blocks(producers * per_producer);
  std::vector<int> arrivals(blocks.size(), 0);
  remote_queue q;
  std::atomic<unsigned> finished{0};
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < producers; ++t) {
    threads.emplace_back([&, t] {
      free_chain c;
      for (std::size_t i = 0; i < per_producer; ++i) {
        prepend(c, &blocks[t * per_producer + i], sizeof(block));
        if (c.count == batch || i + 1 == per_producer) {
          q.post(c);
          c = free_chain{};
        }
      }
      finished.fetch_add(1);
    });
  }
  std::size_t received = 0;
  auto take = [&] {
    for (void* p = q.take_all(); p != nullptr; p = free_list::next(p)) {
      ++arrivals[static_cast<std::size_t>(static_cast<block*>(p) - blocks.data())];
      ++received;
    }
  };
  while (finished.load() < producers) {
    take();
  }
  take();
  for (auto& t : threads) {
    t.join();
  }
  EXPECT_EQ(received, blocks.size());
  for (int n : arrivals) {
    ASSERT_EQ(n, 1);
  }
}

} // namespace
