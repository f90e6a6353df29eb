// SPDX-License-Identifier: BSL-1.0
#include "memkit/node_pool.hpp"

#include <cstdint>
#include <cstring>
#include <deque>
#include <forward_list>
#include <gtest/gtest.h>
#include <list>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "memkit/allocator.hpp"
#include "support/spy_resource.hpp"

namespace {

using memkit::test::misuse_recorder;
using memkit::test::spy_resource;
using spy_ref = memkit::resource_ref<spy_resource>;
using node_pool = memkit::node_pool<spy_ref>;

static_assert(memkit::is_resource_v<node_pool>);
static_assert(memkit::has_array_path_v<node_pool>);
static_assert(!std::is_copy_constructible_v<node_pool> && !std::is_move_constructible_v<node_pool>);

template <class T>
using alloc = memkit::allocator<T, node_pool>;

void expect_clean(const spy_resource& spy) {
  EXPECT_EQ(spy.blocks_in_use(), 0u);
  EXPECT_TRUE(spy.errors().empty()) << spy.errors().front();
}

TEST(NodePool, ObtainsNothingUntilTheFirstRequest) {
  spy_resource spy;
  node_pool np{spy_ref(spy)};
  EXPECT_FALSE(np.adopted());
  EXPECT_EQ(np.node_alignment(), 0u);
  EXPECT_EQ(spy.calls(), 0u);
}

TEST(NodePool, AdoptsTheFirstObjectsSizeAndServesItFromChunks) {
  spy_resource spy;
  {
    node_pool np{spy_ref(spy)};
    std::list<int, alloc<int>> l(np);
    for (int i = 0; i < 1000; ++i) {
      l.push_back(i);
    }
    EXPECT_TRUE(np.adopted());
    EXPECT_GE(np.node_size(), 2 * sizeof(void*) + sizeof(int));
    EXPECT_EQ(np.node_alignment(), alignof(void*));
    EXPECT_EQ(np.nodes_in_use(), 1000u);
    // 1000 nodes from chunks that double from 32 blocks: 32+64+...+512 = 992, then one more.
    EXPECT_LE(spy.allocations(), 6u);
    l.clear();
    EXPECT_EQ(np.nodes_in_use(), 0u);
  }
  expect_clean(spy);
}

TEST(NodePool, SendsArraysAndOtherSizesToTheUpstreamAndTakesThemBack) {
  spy_resource spy;
  {
    node_pool np{spy_ref(spy)};
    void* node = np.allocate(24, 8);
    const std::size_t chunks = spy.blocks_in_use();
    void* array = np.allocate_array(24, 8);
    void* other = np.allocate(40, 8);
    void* over = np.allocate(24, 64);
    EXPECT_EQ(spy.blocks_in_use(), chunks + 3);
    EXPECT_EQ(np.nodes_in_use(), 1u);
    EXPECT_TRUE(memkit::detail::is_aligned(over, 64));
    np.deallocate_array(array, 24, 8);
    np.deallocate(other, 40, 8);
    np.deallocate(over, 24, 64);
    EXPECT_EQ(spy.blocks_in_use(), chunks);
    np.deallocate(node, 24, 8);
    EXPECT_EQ(np.nodes_in_use(), 0u);
  }
  expect_clean(spy);
}

TEST(NodePool, AnArrayOfTheNodeSizeServedBeforeAdoptionStillReturnsToTheUpstream) {
  spy_resource spy;
  {
    node_pool np{spy_ref(spy)};
    void* early_array = np.allocate_array(16, 8);
    EXPECT_FALSE(np.adopted());
    void* node = np.allocate(16, 8);
    EXPECT_TRUE(np.adopted());
    np.deallocate_array(early_array, 16, 8);
    EXPECT_EQ(np.nodes_in_use(), 1u);
    np.deallocate(node, 16, 8);
  }
  expect_clean(spy);
}

TEST(NodePool, HonoursEveryPowerOfTwoAlignmentAsNodeAndAsOtherRequest) {
  spy_resource spy;
  node_pool shared{spy_ref(spy)};
  void* first = shared.allocate(48, 16);
  for (std::size_t a = 1; a <= 4096; a *= 2) {
    node_pool fresh{spy_ref(spy)};
    void* p = fresh.allocate(48, a);
    void* q = fresh.allocate(48, a);
    void* r = shared.allocate(48, a);
    EXPECT_TRUE(memkit::detail::is_aligned(p, a) && memkit::detail::is_aligned(q, a)) << a;
    EXPECT_TRUE(memkit::detail::is_aligned(r, a)) << a;
    EXPECT_EQ(fresh.nodes_in_use(), 2u);
    fresh.deallocate(p, 48, a);
    fresh.deallocate(q, 48, a);
    shared.deallocate(r, 48, a);
  }
  shared.deallocate(first, 48, 16);
  shared.release();
  expect_clean(spy);
}

TEST(NodePool, ServesZeroBytesAsDistinctBlocksWithoutAdopting) {
  spy_resource spy;
  {
    node_pool np{spy_ref(spy)};
    void* a = np.allocate(0, 8);
    void* b = np.allocate(0, 8);
    EXPECT_NE(a, nullptr);
    EXPECT_NE(a, b);
    EXPECT_FALSE(np.adopted());
    np.deallocate(a, 0, 8);
    np.deallocate(b, 0, 8);
    np.deallocate(nullptr, 0, 8);
    np.deallocate_array(nullptr, 16, 8);
  }
  expect_clean(spy);
}

TEST(NodePool, RejectsImpossibleRequestsNamingItself) {
  spy_resource spy;
  node_pool np{spy_ref(spy)};
  EXPECT_EQ(np.try_allocate(SIZE_MAX, 8), nullptr);
  EXPECT_EQ(np.try_allocate(16, 3), nullptr);
  EXPECT_EQ(np.try_allocate(16, 0), nullptr);
  EXPECT_FALSE(np.adopted());
  try {
    (void)np.allocate(SIZE_MAX, 8);
    FAIL() << "SIZE_MAX must not succeed";
  } catch (const memkit::bad_size& e) {
    EXPECT_STREQ(e.resource(), "memkit::node_pool");
  }
  EXPECT_THROW((void)np.allocate(16, 24), memkit::bad_alignment);
  EXPECT_THROW((void)np.allocate_array(SIZE_MAX, 8), memkit::bad_size);
  EXPECT_THROW((void)np.allocate_array(64, 12), memkit::bad_alignment);
  expect_clean(spy);
}

TEST(NodePool, ThrowsOutOfMemoryWhenTheUpstreamIsExhausted) {
  spy_resource spy(0);
  node_pool np{spy_ref(spy)};
  EXPECT_EQ(np.try_allocate(24, 8), nullptr);
  try {
    (void)np.allocate(24, 8);
    FAIL() << "the upstream has no memory";
  } catch (const memkit::out_of_memory& e) {
    EXPECT_STREQ(e.resource(), "memkit::node_pool");
    EXPECT_EQ(e.size(), 24u);
  }
  EXPECT_THROW((void)np.allocate_array(64, 8), memkit::out_of_memory);
  EXPECT_EQ(np.nodes_in_use(), 0u);
}

TEST(NodePool, UsesABoundedUpstreamToItsLastNode) {
  // Room for a 4-block chunk (4 * 32 bytes + the pool's two-word chunk header) and nothing more:
  // the pool halves its first request (32 blocks) down to what the upstream can give.
  spy_resource spy(4 * 32 + 2 * sizeof(void*));
  std::vector<void*> nodes;
  {
    node_pool np{spy_ref(spy)};
    while (void* p = np.try_allocate(32, 8)) {
      nodes.push_back(p);
    }
    EXPECT_EQ(nodes.size(), 4u);
    for (void* p : nodes) {
      np.deallocate(p, 32, 8);
    }
  }
  expect_clean(spy);
}

TEST(NodePool, BlocksNeverOverlap) {
  spy_resource spy;
  {
    node_pool np{spy_ref(spy)};
    std::vector<unsigned char*> blocks;
    for (int i = 0; i < 300; ++i) {
      auto* p = static_cast<unsigned char*>(np.allocate(40, 8));
      std::memset(p, i & 0xff, 40);
      blocks.push_back(p);
    }
    for (int i = 0; i < 300; ++i) {
      for (int j = 0; j < 40; ++j) {
        ASSERT_EQ(blocks[static_cast<std::size_t>(i)][j], i & 0xff) << "block " << i;
      }
    }
    for (unsigned char* p : blocks) {
      np.deallocate(p, 40, 8);
    }
  }
  expect_clean(spy);
}

TEST(NodePool, ResetKeepsTheChunksAndReleaseReturnsThemKeepingTheNodeSize) {
  spy_resource spy;
  node_pool np{spy_ref(spy)};
  for (int i = 0; i < 100; ++i) {
    (void)np.allocate(24, 8);
  }
  const std::size_t chunks = spy.blocks_in_use();
  np.reset();
  EXPECT_EQ(np.nodes_in_use(), 0u);
  for (int i = 0; i < 100; ++i) {
    (void)np.allocate(24, 8);
  }
  EXPECT_EQ(spy.blocks_in_use(), chunks);
  np.release();
  expect_clean(spy);
  EXPECT_TRUE(np.adopted());
  EXPECT_EQ(np.node_size(), 24u);
}

TEST(NodePool, CanBeToldTheNodeSizeAndReserveNodesAtAdoption) {
  spy_resource spy;
  {
    memkit::pool_options growth;
    growth.reserved_blocks = 500;
    node_pool told(16, 8, spy_ref(spy));
    EXPECT_TRUE(told.adopted());
    EXPECT_EQ(spy.calls(), 0u);
    node_pool reserving{spy_ref(spy), growth};
    void* p = reserving.allocate(24, 8);
    EXPECT_GE(reserving.capacity(), 500u);
    const std::size_t calls = spy.calls();
    std::vector<void*> more;
    for (int i = 0; i < 499; ++i) {
      more.push_back(reserving.allocate(24, 8));
    }
    EXPECT_EQ(spy.calls(), calls);
    for (void* q : more) {
      reserving.deallocate(q, 24, 8);
    }
    reserving.deallocate(p, 24, 8);
    EXPECT_THROW(node_pool(16, 3, spy_ref(spy)), memkit::bad_alignment);
  }
  expect_clean(spy);
}

TEST(NodePool, ReportsADoubleFreeOfANodeAndIgnoresIt) {
  misuse_recorder recorder;
  spy_resource spy;
  node_pool np{spy_ref(spy)};
  void* a = np.allocate(24, 8);
  void* b = np.allocate(24, 8);
  np.deallocate(a, 24, 8);
  np.deallocate(a, 24, 8);
  EXPECT_EQ(recorder.count(memkit::misuse::double_free), 1u);
  EXPECT_EQ(np.nodes_in_use(), 1u);
  void* c = np.allocate(24, 8);
  void* d = np.allocate(24, 8);
  EXPECT_NE(c, d);
  EXPECT_NE(d, b);
  np.deallocate(b, 24, 8);
  np.deallocate(c, 24, 8);
  np.deallocate(d, 24, 8);
}

TEST(NodePoolDeathTest, DefaultMisuseHandlerAbortsNamingThePoolAndTheMistake) {
  EXPECT_DEATH(
      {
        memkit::node_pool<> np;
        void* a = np.allocate(24, 8);
        np.deallocate(a, 24, 8);
        np.deallocate(a, 24, 8);
      },
      "memkit::pool: double free");
}

template <class C>
void fill_and_check(C& c, memkit::node_pool<spy_ref>& np, bool node_based) {
  for (int i = 0; i < 500; ++i) {
    if constexpr (std::is_same_v<typename C::value_type, int>) {
      if constexpr (std::is_same_v<C, std::forward_list<int, alloc<int>>>) {
        c.push_front(i);
      } else if constexpr (std::is_same_v<C, std::deque<int, alloc<int>>>) {
        c.push_back(i);
      } else {
        c.insert(c.end(), i);
      }
    } else {
      c.emplace(i, i);
    }
  }
  EXPECT_EQ(static_cast<std::size_t>(std::distance(c.begin(), c.end())), 500u);
  if (node_based) {
    EXPECT_EQ(np.nodes_in_use(), 500u);
  }
}

TEST(NodePool, ServesTheNodesOfEveryNodeContainerWithoutBeingToldTheirSize) {
  using kv = std::pair<const int, int>;
  spy_resource spy;
  {
    node_pool p1{spy_ref(spy)}, p2{spy_ref(spy)}, p3{spy_ref(spy)}, p4{spy_ref(spy)},
        p5{spy_ref(spy)}, p6{spy_ref(spy)}, p7{spy_ref(spy)}, p8{spy_ref(spy)}, p9{spy_ref(spy)};
    std::list<int, alloc<int>> list(p1);
    std::forward_list<int, alloc<int>> flist(p2);
    std::map<int, int, std::less<>, alloc<kv>> map(p3);
    std::multimap<int, int, std::less<>, alloc<kv>> mmap(p4);
    std::set<int, std::less<>, alloc<int>> set(p5);
    std::multiset<int, std::less<>, alloc<int>> mset(p6);
    std::unordered_map<int, int, std::hash<int>, std::equal_to<>, alloc<kv>> umap(p7);
    std::unordered_set<int, std::hash<int>, std::equal_to<>, alloc<int>> uset(p8);
    std::deque<int, alloc<int>> deque(p9);
    fill_and_check(list, p1, true);
    fill_and_check(flist, p2, true);
    fill_and_check(map, p3, true);
    fill_and_check(mmap, p4, true);
    fill_and_check(set, p5, true);
    fill_and_check(mset, p6, true);
    fill_and_check(umap, p7, true);
    fill_and_check(uset, p8, true);
    // A deque asks only for arrays (its map and its buffers): all of it is the upstream's.
    fill_and_check(deque, p9, false);
    EXPECT_FALSE(p9.adopted());
  }
  expect_clean(spy);
}

} // namespace

namespace {

TEST(NodePool, ConstructorRejectsImpossibleNodes) {
  EXPECT_THROW(memkit::node_pool<>(24, 3), memkit::bad_alignment);
  EXPECT_THROW(memkit::node_pool<>(SIZE_MAX, 8), memkit::bad_size);
  memkit::pool_options growth;
  growth.max_chunk_blocks = 0;
  EXPECT_THROW(memkit::node_pool<>(memkit::malloc_resource{}, growth), memkit::bad_size);
  EXPECT_THROW(memkit::node_pool<>(24, 8, memkit::malloc_resource{}, growth), memkit::bad_size);
}

} // namespace
