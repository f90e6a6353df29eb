// SPDX-License-Identifier: BSL-1.0
#include "memkit/synchronized.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <gtest/gtest.h>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "memkit/arena.hpp"
#include "memkit/debug_resource.hpp"
#include "memkit/multipool.hpp"
#include "memkit/node_pool.hpp"
#include "memkit/pool.hpp"
#include "memkit/spin_mutex.hpp"
#include "memkit/upstream.hpp"
#include "support/spy_resource.hpp"

namespace {

using memkit::synchronized;
using spy_ref = memkit::resource_ref<memkit::test::spy_resource>;

static_assert(memkit::is_resource_v<synchronized<memkit::pool<>>>);
static_assert(memkit::is_thread_safe_v<synchronized<memkit::pool<>>>);
static_assert(!memkit::is_thread_safe_v<memkit::pool<>>);
static_assert(memkit::is_thread_safe_v<memkit::malloc_resource> &&
              memkit::is_thread_safe_v<memkit::resource_ref<memkit::malloc_resource>> &&
              !memkit::is_thread_safe_v<memkit::resource_ref<memkit::pool<>>>);
// Every optional member is forwarded exactly when the wrapped resource has it.
static_assert(memkit::has_owns_v<synchronized<memkit::pool<>>> &&
              !memkit::has_owns_v<synchronized<memkit::malloc_resource>>);
static_assert(memkit::has_reset_v<synchronized<memkit::arena<>>> &&
              memkit::has_release_v<synchronized<memkit::arena<>>> &&
              memkit::has_markers_v<synchronized<memkit::arena<>>> &&
              !memkit::has_markers_v<synchronized<memkit::pool<>>>);
static_assert(memkit::has_array_path_v<synchronized<memkit::node_pool<>>> &&
              !memkit::has_array_path_v<synchronized<memkit::pool<>>>);
static_assert(memkit::has_stats_v<synchronized<memkit::pool<>>> &&
              memkit::has_in_use_v<synchronized<memkit::pool<>>>);
// A thread-safe resource needs no lock, and none is stored.
static_assert(sizeof(synchronized<memkit::malloc_resource>) < sizeof(std::mutex));

/// A mutex that counts how often any instance was locked, to see which calls lock.
struct counting_mutex {
  void lock() {
    m.lock();
    ++locks;
  }
  void unlock() { m.unlock(); }
  std::mutex m;
  static inline std::size_t locks = 0;
};

TEST(Synchronized, ForwardsTheInterfaceAndNamesTheWrappedResource) {
  memkit::test::spy_resource spy;
  {
    synchronized<memkit::pool<spy_ref>> r(32, 16, spy_ref(spy));
    EXPECT_STREQ(r.name(), "memkit::pool");
    EXPECT_EQ(r.max_alignment(), 16u);
    void* p = r.allocate(32, 16);
    EXPECT_TRUE(r.owns(p));
    EXPECT_EQ(r.in_use(), 1u);
    EXPECT_TRUE(r.unlocked().owns(p));
    EXPECT_EQ(r.with_lock([p](memkit::pool<spy_ref>& pool) { return pool.owns(p); }), true);
    r.deallocate(p, 32, 16);
    EXPECT_EQ(r.in_use(), 0u);
    EXPECT_THROW((void)r.allocate(64, 16), memkit::bad_size);
    EXPECT_THROW((void)r.allocate(32, 64), memkit::bad_alignment);
    r.release();
    EXPECT_EQ(spy.blocks_in_use(), 0u);
  }
  EXPECT_TRUE(spy.errors().empty());
}

TEST(Synchronized, ForwardsMarkersResetAndStatisticsOfAnArena) {
  synchronized<memkit::arena<>> r;
  void* a = r.allocate(100, 8);
  const auto m = r.marker();
  const std::size_t used = r.used();
  (void)r.allocate(200, 8);
  EXPECT_GT(r.used(), used);
  r.rollback(m);
  EXPECT_EQ(r.used(), used);
  EXPECT_TRUE(r.owns(a));
  EXPECT_EQ(r.stats().allocations, memkit::statistics_enabled ? 2u : 0u);
  r.reset();
  EXPECT_EQ(r.used(), 0u);
}

TEST(Synchronized, LocksEveryCallThatReadsOrChangesStateAndNoOther) {
  synchronized<memkit::pool<>, counting_mutex> r(32);
  const std::size_t before = counting_mutex::locks;
  void* p = r.allocate(32, 8);
  (void)r.try_allocate(64, 8); // refused, under the lock all the same
  (void)r.owns(p);
  (void)r.in_use();
  (void)r.stats();
  r.deallocate(p, 32, 8);
  r.release();
  EXPECT_EQ(counting_mutex::locks - before, 7u);
  (void)r.name();
  (void)r.max_size();
  (void)r.max_alignment();
  (void)r.unlocked().in_use();
  EXPECT_EQ(counting_mutex::locks - before, 7u) << "limits are fixed at construction: no lock";
  EXPECT_THROW((void)r.allocate(64, 8), memkit::bad_size);
  EXPECT_EQ(counting_mutex::locks - before, 8u);
}

TEST(Synchronized, AllocateIsTheResourcesOwnSoADebugResourceStillThrowsItsReport) {
  memkit::debug_options o;
  o.reaction = memkit::debug_reaction::deferred_throw;
  synchronized<memkit::debug_resource<memkit::malloc_resource>> r(o);
  void* p = r.allocate(16, 8);
  r.deallocate(p, 16, 8);
  r.deallocate(p, 16, 8);
  EXPECT_THROW((void)r.allocate(16, 8), memkit::misuse_error);
  EXPECT_EQ(r.unlocked().misuses(), 1u);
}

TEST(Synchronized, TakesNoLockOverAThreadSafeResource) {
  synchronized<memkit::malloc_resource, counting_mutex> r;
  const std::size_t before = counting_mutex::locks;
  r.deallocate(r.allocate(64, 64), 64, 64);
  EXPECT_EQ(counting_mutex::locks, before);
}

/// Threads allocate, stamp, check and free blocks of one shared resource; a third of the blocks
/// are handed to another thread, which checks and frees them. Every byte of a block carries its
/// owner's stamp from allocation to free: two threads given one block, or a block reused while
/// live, shows as a foreign byte.
template <class Resource>
void stress(Resource& r, std::size_t max_size, unsigned seed) {
  constexpr int threads = 4;
  constexpr int rounds = 20000;
  struct block {
    unsigned char* p;
    std::size_t size;
    unsigned char stamp;
  };
  std::mutex handoff_lock;
  std::vector<block> handoff;
  std::atomic<std::size_t> damaged{0};
  std::atomic<std::size_t> failed{0};
  const auto check_and_free = [&](const block& b) {
    for (std::size_t i = 0; i < b.size; ++i) {
      if (b.p[i] != b.stamp) {
        damaged.fetch_add(1, std::memory_order_relaxed);
        break;
      }
    }
    r.deallocate(b.p, b.size, 8);
  };
  const auto work = [&](int id) {
    std::mt19937 rng(seed + static_cast<unsigned>(id));
    std::uniform_int_distribution<std::size_t> size(1, max_size);
    std::vector<block> mine;
    for (int i = 0; i < rounds; ++i) {
      const unsigned op = rng() % 8;
      if (op < 4 || mine.empty()) {
        const std::size_t n = size(rng);
        auto* p = static_cast<unsigned char*>(r.try_allocate(n, 8));
        if (p == nullptr) {
          failed.fetch_add(1, std::memory_order_relaxed);
          continue;
        }
        const auto stamp = static_cast<unsigned char>(id * 61 + i);
        std::memset(p, stamp, n);
        mine.push_back({p, n, stamp});
      } else if (op < 6) {
        const std::size_t k = rng() % mine.size();
        check_and_free(mine[k]);
        mine[k] = mine.back();
        mine.pop_back();
      } else if (op == 6) {
        const std::lock_guard<std::mutex> lock(handoff_lock);
        handoff.push_back(mine.back());
        mine.pop_back();
      } else {
        block b{};
        {
          const std::lock_guard<std::mutex> lock(handoff_lock);
          if (handoff.empty()) {
            continue;
          }
          b = handoff.back();
          handoff.pop_back();
        }
        check_and_free(b);
      }
    }
    for (const block& b : mine) {
      check_and_free(b);
    }
  };
  std::vector<std::thread> workers;
  for (int id = 0; id < threads; ++id) {
    workers.emplace_back(work, id);
  }
  for (auto& t : workers) {
    t.join();
  }
  for (const block& b : handoff) {
    check_and_free(b);
  }
  EXPECT_EQ(damaged.load(), 0u) << "seed " << seed;
  EXPECT_EQ(failed.load(), 0u) << "seed " << seed;
}

TEST(Synchronized, StressedPoolKeepsEveryBlockToItsOwner) {
  memkit::test::spy_resource spy;
  {
    synchronized<memkit::pool<spy_ref>> r(48, 8, spy_ref(spy));
    stress(r, 48, 20261122);
    EXPECT_EQ(r.in_use(), 0u);
  }
  EXPECT_EQ(spy.blocks_in_use(), 0u);
  EXPECT_TRUE(spy.errors().empty());
}

TEST(Synchronized, StressedPoolBehindASpinMutexKeepsEveryBlockToItsOwner) {
  memkit::test::spy_resource spy;
  {
    synchronized<memkit::pool<spy_ref>, memkit::spin_mutex> r(48, 8, spy_ref(spy));
    stress(r, 48, 20261124);
    EXPECT_EQ(r.in_use(), 0u);
  }
  EXPECT_EQ(spy.blocks_in_use(), 0u);
  EXPECT_TRUE(spy.errors().empty());
}

TEST(Synchronized, StressedMultipoolKeepsEveryBlockToItsOwner) {
  memkit::test::spy_resource spy;
  {
    synchronized<memkit::multipool<spy_ref>> r{spy_ref(spy)};
    stress(r, 3000, 20261123);
  }
  EXPECT_EQ(spy.blocks_in_use(), 0u);
  EXPECT_TRUE(spy.errors().empty());
}

} // namespace
