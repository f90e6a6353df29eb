// SPDX-License-Identifier: BSL-1.0
// tests/thread/heap_test.cpp: one thread's cache (memkit/detail/thread/heap.hpp): the direct table
// from sizes to current chunks, the partial lists, the spares, the blocks kept of other heaps.
#include "memkit/detail/thread/heap.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace {

namespace thread = memkit::detail::thread;
using memkit::detail::class_granularity;
using memkit::detail::class_index;
using memkit::detail::table_class_index;
using memkit::detail::table_class_limit;

constexpr std::size_t any_size_bins = class_index(thread::max_class_size) + 1;
using any_size_heap = thread::heap<any_size_bins>;

TEST(Heap, SetCurrentPointsEverySizeOfTheClassAtTheChunkAndNoOtherSize) {
  auto h = std::make_unique<any_size_heap>();
  thread::chunk c;
  for (std::size_t cls = 0; cls <= class_index(table_class_limit); ++cls) {
    h->set_current(cls, &c);
    for (std::size_t bytes = 0; bytes <= table_class_limit; bytes += 8) {
      const bool mine = table_class_index(bytes) == cls;
      EXPECT_EQ(h->direct[(bytes + class_granularity - 1) / class_granularity] == &c, mine)
          << "class " << cls << ", " << bytes << " bytes";
    }
    EXPECT_EQ(h->bins[cls].current, &c);
    h->set_current(cls, &thread::empty_chunk);
  }
  // A class above the table has no direct entry.
  h->set_current(any_size_bins - 1, &c);
  for (thread::chunk* d : h->direct) {
    EXPECT_EQ(d, &thread::empty_chunk);
  }
}

TEST(Heap, AOneClassHeapHasNoDirectTable) { EXPECT_EQ(thread::heap<1>::direct_steps, 0u); }

TEST(Heap, PartialChunksAreListedPerClassAndUnlinkedFromAnywhere) {
  auto h = std::make_unique<thread::heap<4>>();
  thread::chunk c[3];
  for (thread::chunk& x : c) {
    x.cls = 2;
    h->link_partial(&x);
    EXPECT_TRUE(x.in_bin);
  }
  EXPECT_EQ(h->bins[2].partial.front(), &c[2]);
  EXPECT_TRUE(h->bins[1].partial.empty());
  h->unlink_partial(&c[1]);
  EXPECT_FALSE(c[1].in_bin);
  EXPECT_EQ(c[2].next, &c[0]);
  EXPECT_EQ(c[0].prev, &c[2]);
  h->unlink_partial(&c[2]);
  h->unlink_partial(&c[0]);
  EXPECT_TRUE(h->bins[2].partial.empty());
}

TEST(Heap, SparesComeBackNewestFirstAndAreCounted) {
  auto h = std::make_unique<thread::heap<1>>();
  thread::chunk c[2];
  EXPECT_EQ(h->pop_spare(), nullptr);
  h->push_spare(&c[0]);
  h->push_spare(&c[1]);
  EXPECT_EQ(h->spare_count, 2u);
  EXPECT_EQ(h->pop_spare(), &c[1]);
  EXPECT_EQ(c[1].next, nullptr);
  EXPECT_EQ(h->pop_spare(), &c[0]);
  EXPECT_EQ(h->spare_count, 0u);
  EXPECT_EQ(h->pop_spare(), nullptr);
}

TEST(Heap, ASpareOfTheClassAskedForComesBeforeNewerOnes) {
  auto h = std::make_unique<thread::heap<4>>();
  thread::chunk c[3];
  for (std::uint32_t i = 0; i < 3; ++i) {
    c[i].cls = i;
    h->push_spare(&c[i]);
  }
  EXPECT_EQ(h->pop_spare(0), &c[0]) << "the oldest, but of its class";
  EXPECT_EQ(h->spare_count, 2u);
  EXPECT_EQ(h->pop_spare(3), &c[2]) << "none of class 3: the newest";
  EXPECT_EQ(h->pop_spare(1), &c[1]);
  EXPECT_EQ(h->pop_spare(1), nullptr);
  EXPECT_EQ(h->spare_count, 0u);
}

struct alignas(16) block {
  unsigned char bytes[32];
};

TEST(Heap, KeptBlocksComeOffAsOneChainNewestFirst) {
  auto h = std::make_unique<thread::heap<4>>();
  std::vector<block> blocks(4);
  EXPECT_EQ(h->take_foreign_chain(1).count, 0u) << "none kept";
  EXPECT_FALSE(h->keep_foreign(&blocks[0], 1, sizeof(block)))
      << "a class this heap does not allocate keeps nothing";
  thread::chunk current;
  h->set_current(1, &current, 8);
  for (std::size_t i = 0; i < 3; ++i) {
    ASSERT_TRUE(h->keep_foreign(&blocks[i], 1, sizeof(block)));
  }
  const memkit::detail::free_chain c = h->take_foreign_chain(1);
  EXPECT_EQ(c.count, 3u);
  EXPECT_EQ(c.first, &blocks[2]) << "the newest first, as take_foreign hands them out";
  EXPECT_EQ(c.last, &blocks[0]);
  EXPECT_EQ(memkit::detail::free_list::next(c.first), &blocks[1]);
  EXPECT_EQ(memkit::detail::free_list::next(&blocks[1]), &blocks[0]);
  EXPECT_EQ(h->foreign_count[1], 0u);
  EXPECT_EQ(h->take_foreign(1), nullptr) << "taken off";
  // Emptied by take_foreign too, the class's chain starts afresh.
  ASSERT_TRUE(h->keep_foreign(&blocks[3], 1, sizeof(block)));
  ASSERT_TRUE(h->keep_foreign(&blocks[0], 1, sizeof(block)));
  EXPECT_EQ(h->take_foreign(1), &blocks[0]);
  ASSERT_TRUE(h->keep_foreign(&blocks[1], 1, sizeof(block)));
  const memkit::detail::free_chain d = h->take_foreign_chain(1);
  EXPECT_EQ(d.count, 2u);
  EXPECT_EQ(d.first, &blocks[1]);
  EXPECT_EQ(d.last, &blocks[3]);
}

TEST(Heap, KeepsNoMoreThanTheRoomOfTheClassWhileItHasACurrentChunk) {
  auto h = std::make_unique<thread::heap<1>>();
  std::vector<block> blocks(3);
  thread::chunk current;
  h->set_current(0, &current, 2);
  EXPECT_TRUE(h->keep_foreign(&blocks[0], 0, sizeof(block)));
  EXPECT_TRUE(h->keep_foreign(&blocks[1], 0, sizeof(block)));
  EXPECT_FALSE(h->keep_foreign(&blocks[2], 0, sizeof(block)));
  EXPECT_EQ(h->foreign_count[0], 2u);
  EXPECT_EQ(h->take_foreign(0), &blocks[1]);
  h->set_current(0, &thread::empty_chunk);
  EXPECT_FALSE(h->keep_foreign(&blocks[1], 0, sizeof(block))) << "no current chunk: no room";
  EXPECT_EQ(h->foreign_count[0], 1u) << "what it kept stays";
}

} // namespace
