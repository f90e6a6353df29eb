// SPDX-License-Identifier: BSL-1.0
#include "memkit/static_allocator.hpp"

#include <cstdint>
#include <gtest/gtest.h>
#include <limits>
#include <list>
#include <map>
#include <thread>
#include <vector>

#include "memkit/audit.hpp"
#include "memkit/node_pool.hpp"
#include "support/spy_resource.hpp"

namespace {

struct spy_tag {};
struct other_spy_tag {};
struct node_pool_tag {};

} // namespace

// A tag whose process-wide resource is a spy, so tests see every block its allocators hand out.
template <>
struct memkit::static_resource_traits<spy_tag> {
  using resource_type = memkit::test::spy_resource;
  static resource_type& get() noexcept { return memkit::static_resource<resource_type, spy_tag>(); }
};

template <>
struct memkit::static_resource_traits<other_spy_tag> {
  using resource_type = memkit::test::spy_resource;
  static resource_type& get() noexcept {
    return memkit::static_resource<resource_type, other_spy_tag>();
  }
};

// A tag served by a node_pool: arrays reach its allocate_array path.
template <>
struct memkit::static_resource_traits<node_pool_tag> {
  using resource_type = memkit::node_pool<>;
  static resource_type& get() noexcept {
    return memkit::static_resource<resource_type, node_pool_tag>();
  }
};

namespace {

using memkit::static_allocator;
using spy_alloc = static_allocator<int, spy_tag>;
using traits = std::allocator_traits<spy_alloc>;

static_assert(std::is_empty_v<spy_alloc>);
static_assert(traits::is_always_equal::value);
static_assert(std::is_nothrow_default_constructible_v<spy_alloc>);
static_assert(std::is_same_v<traits::rebind_alloc<double>, static_allocator<double, spy_tag>>);
static_assert(memkit::audit<spy_alloc>());
static_assert(memkit::audit<static_allocator<int>>());
static_assert(std::is_same_v<static_allocator<int>::resource_type, memkit::thread_cached<>>);
static_assert(std::is_same_v<static_allocator<int, memkit::unsynchronized_tag>::resource_type,
                             memkit::multipool<>>);

memkit::test::spy_resource& spy() { return spy_alloc::resource(); }

TEST(StaticAllocator, EveryInstanceOfATagUsesTheSameProcessWideResource) {
  using double_alloc = static_allocator<double, spy_tag>;
  EXPECT_EQ(&spy_alloc::resource(), &double_alloc::resource());
  EXPECT_NE(static_cast<void*>(&spy_alloc::resource()),
            static_cast<void*>(&static_allocator<int, other_spy_tag>::resource()));
  EXPECT_EQ(&static_allocator<int>::resource(), &static_allocator<char>::resource());
  EXPECT_TRUE(spy_alloc() == double_alloc());
  EXPECT_FALSE(spy_alloc() != double_alloc());
}

TEST(StaticAllocator, AllocatesFromTheTagsResourceWithTheElementsSizeAndAlignment) {
  const std::size_t before = spy().blocks_in_use();
  spy_alloc a;
  int* p = a.allocate(10);
  EXPECT_EQ(spy().blocks_in_use(), before + 1);
  static_allocator<double, spy_tag> other;
  int* q = static_cast<static_allocator<int, spy_tag>>(other).allocate(1);
  a.deallocate(p, 10);
  spy_alloc(other).deallocate(q, 1);
  EXPECT_EQ(spy().blocks_in_use(), before);
  EXPECT_TRUE(spy().errors().empty()) << spy().errors().front();
}

TEST(StaticAllocator, ThrowsBadArrayNewLengthWhenTheSizeOverflows) {
  const std::size_t calls = spy().calls();
  static_allocator<std::uint64_t, spy_tag> a;
  EXPECT_THROW((void)a.allocate(std::numeric_limits<std::size_t>::max() / 8 + 1),
               std::bad_array_new_length);
  EXPECT_EQ(spy().calls(), calls);
}

TEST(StaticAllocator, ContainersMoveAndSwapFreelyBecauseInstancesAreInterchangeable) {
  const std::size_t before = spy().blocks_in_use();
  {
    std::list<int, spy_alloc> a{1, 2, 3};
    std::list<int, spy_alloc> b{4, 5};
    const std::size_t blocks = spy().blocks_in_use();
    a = std::move(b);
    EXPECT_EQ(spy().blocks_in_use(), blocks - 3);
    std::list<int, spy_alloc> c{6};
    a.swap(c);
    EXPECT_EQ(a.front(), 6);
  }
  EXPECT_EQ(spy().blocks_in_use(), before);
  EXPECT_TRUE(spy().errors().empty());
}

TEST(StaticAllocator, SendsArraysToTheArrayPathOfItsResource) {
  auto& np = static_allocator<int, node_pool_tag>::resource();
  {
    std::vector<int, static_allocator<int, node_pool_tag>> v;
    v.push_back(1);
    EXPECT_TRUE(np.adopted());
    EXPECT_EQ(np.node_size(), sizeof(int));
    for (int i = 0; i < 100; ++i) {
      v.push_back(i);
    }
    EXPECT_EQ(np.nodes_in_use(), 0u);
  }
  np.release();
}

TEST(StaticAllocator, TheDefaultResourceIsSafeToUseFromManyThreads) {
  std::vector<std::thread> threads;
  std::vector<long> sums(4);
  for (std::size_t t = 0; t < sums.size(); ++t) {
    threads.emplace_back([t, &sums] {
      for (int round = 0; round < 20; ++round) {
        std::map<int, int, std::less<>, static_allocator<std::pair<const int, int>>> m;
        for (int i = 0; i < 200; ++i) {
          m.emplace(i, static_cast<int>(t));
        }
        for (const auto& kv : m) {
          sums[t] += kv.second;
        }
      }
    });
  }
  for (std::thread& th : threads) {
    th.join();
  }
  for (std::size_t t = 0; t < sums.size(); ++t) {
    EXPECT_EQ(sums[t], static_cast<long>(t) * 20 * 200);
  }
}

// The default resource caches per thread: a container filled on one thread and destroyed on
// another frees every node remotely, into the heap of a thread that has exited.
TEST(StaticAllocator, TheDefaultResourceTakesFreesFromAnyThread) {
  using list = std::list<std::uint64_t, static_allocator<std::uint64_t>>;
  for (int round = 0; round < 20; ++round) {
    list filled;
    std::thread([&filled, round] {
      for (std::uint64_t i = 0; i < 1000; ++i) {
        filled.push_back(i * 31 + static_cast<std::uint64_t>(round));
      }
    }).join();
    std::uint64_t sum = 0;
    std::thread([&filled, &sum] {
      for (const std::uint64_t v : filled) {
        sum += v;
      }
      list gone = std::move(filled);
    }).join();
    EXPECT_EQ(sum, 31u * 999 * 1000 / 2 + 1000u * static_cast<std::uint64_t>(round));
  }
  // The 40 threads' heaps were adopted by the next thread, not made anew: the count stays at the
  // most threads that used the resource at once in this program (4 in the test above, plus main).
  EXPECT_LE(static_allocator<int>::resource().heap_count(), 8u);
}

// Constructed during static initialisation, before any test runs, and destroyed after main
// returns: the process-wide resource must be alive at both ends.
std::list<int, static_allocator<int>> early_list{1, 2, 3};

TEST(StaticAllocator, ServesContainersConstructedDuringStaticInitialisation) {
  EXPECT_EQ(early_list.size(), 3u);
  early_list.push_back(4);
  EXPECT_EQ(early_list.back(), 4);
  early_list.pop_back(); // as it was, for a repeated run (--gtest_repeat)
}

} // namespace
