// SPDX-License-Identifier: BSL-1.0
// tests/thread/remote_test.cpp: remote frees (memkit/detail/thread/remote.hpp): the MPSC batch
// queue and the per-destination batches of the freeing thread.
#include "memkit/detail/thread/remote.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace {

using memkit::detail::free_chain;
using memkit::detail::free_list;
using memkit::detail::thread::prepend;
using memkit::detail::thread::remote_queue;

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

namespace {

using memkit::detail::thread::remote_cache;

// A destination as remote_cache sees one: a queue named `remote`, cache-line aligned as heaps are.
struct alignas(64) destination {
  remote_queue remote;
  std::vector<void*> taken() {
    std::vector<void*> v;
    for (void* p = remote.take_all(); p != nullptr; p = free_list::next(p)) {
      v.push_back(p);
    }
    return v;
  }
};

TEST(RemoteCache, PostsABatchWhenItReachesTheLimitAndNotBefore) {
  std::vector<block> blocks(5);
  destination d;
  remote_cache c;
  for (std::size_t i = 0; i < 2; ++i) {
    c.add(&d, &blocks[i], sizeof(block), 3);
  }
  EXPECT_FALSE(d.remote.has_posts());
  EXPECT_EQ(c.pending(), 2u);
  EXPECT_TRUE(c.holds(&d, &blocks[1], false)); // the newest block of its batch
  EXPECT_FALSE(c.holds(&d, &blocks[0], false));
  EXPECT_TRUE(c.holds(&d, &blocks[0], true)); // found by the walk
  c.add(&d, &blocks[2], sizeof(block), 3);
  EXPECT_EQ(c.pending(), 0u);
  EXPECT_EQ(d.taken(), (std::vector<void*>{&blocks[2], &blocks[1], &blocks[0]}));
  EXPECT_FALSE(c.holds(&d, &blocks[2], true));
}

TEST(RemoteCache, ADestinationTakingAnOccupiedSlotPostsTheOlderBatchFirst) {
  std::vector<block> blocks(3);
  // Eight heaps apart: the same slot of the direct-mapped table.
  std::vector<destination> d(remote_cache::slots + 1);
  remote_cache c;
  c.add(&d[0], &blocks[0], sizeof(block), 64);
  c.add(&d[0], &blocks[1], sizeof(block), 64);
  c.add(&d[remote_cache::slots], &blocks[2], sizeof(block), 64);
  EXPECT_EQ(d[0].taken(), (std::vector<void*>{&blocks[1], &blocks[0]}));
  EXPECT_FALSE(d[remote_cache::slots].remote.has_posts());
  EXPECT_EQ(c.pending(), 1u);
}

TEST(RemoteCache, FlushPostsEveryBatchToItsOwnDestination) {
  std::vector<block> blocks(remote_cache::slots * 2);
  std::vector<destination> d(remote_cache::slots);
  remote_cache c;
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    c.add(&d[i % d.size()], &blocks[i], sizeof(block), 64);
  }
  EXPECT_EQ(c.pending(), blocks.size());
  c.flush<destination>();
  EXPECT_EQ(c.pending(), 0u);
  for (std::size_t k = 0; k < d.size(); ++k) {
    EXPECT_EQ(d[k].taken(), (std::vector<void*>{&blocks[k + d.size()], &blocks[k]})) << k;
  }
  c.flush<destination>(); // nothing pending: nothing posted
  for (destination& x : d) {
    EXPECT_FALSE(x.remote.has_posts());
  }
}

} // namespace
