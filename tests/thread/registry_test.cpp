// SPDX-License-Identifier: BSL-1.0
// tests/thread/registry_test.cpp: per-thread bindings of resource instances
// (memkit/detail/thread/registry.hpp): found by key, stale after a re-key, handed back once at
// thread exit, never after the instance withdrew.
#include "memkit/detail/thread/registry.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace {

using memkit::detail::thread::registry;

// An instance as the registry sees one: what its threads' exits handed back.
struct instance {
  std::mutex mutex;
  std::vector<void*> detached;
  std::atomic<bool> withdrawn{false};
  std::atomic<int> late{0}; ///< detaches after withdraw returned: must stay 0

  static void detach(void* self, void* object) noexcept {
    auto* i = static_cast<instance*>(self);
    if (i->withdrawn.load()) {
      ++i->late;
    }
    const std::lock_guard<std::mutex> lock(i->mutex);
    i->detached.push_back(object);
  }
};

TEST(Registry, InstancesGetDistinctSlotsAndIdsNeverReused) {
  instance a, b;
  const registry::key ka = registry::get().enroll(&a, &instance::detach);
  const registry::key kb = registry::get().enroll(&b, &instance::detach);
  ASSERT_NE(ka.id, registry::no_id);
  ASSERT_NE(kb.id, registry::no_id);
  EXPECT_NE(ka.slot, kb.slot);
  registry::get().withdraw(ka);
  const registry::key again = registry::get().enroll(&a, &instance::detach);
  EXPECT_NE(again.id, ka.id);
  EXPECT_NE(again.id, kb.id);
  registry::get().withdraw(again);
  registry::get().withdraw(kb);
}

TEST(Registry, ABindingIsFoundByItsKeyAndIsStaleAfterARekey) {
  instance a;
  registry::key k = registry::get().enroll(&a, &instance::detach);
  int object = 0;
  EXPECT_EQ(registry::bound(k), nullptr);
  ASSERT_TRUE(registry::bind(k, &object));
  EXPECT_EQ(registry::bound(k), &object);
  k.id = registry::get().rekey(k);
  EXPECT_EQ(registry::bound(k), nullptr);
  registry::get().withdraw(k);
}

TEST(Registry, MoreInstancesThanSlotsGetNoIdAndBindNothing) {
  std::vector<instance> instances(registry::capacity + 1);
  std::vector<registry::key> keys;
  std::set<std::size_t> slots;
  registry::key last{};
  for (instance& i : instances) {
    last = registry::get().enroll(&i, &instance::detach);
    if (last.id == registry::no_id) {
      break;
    }
    keys.push_back(last);
    slots.insert(last.slot);
  }
  EXPECT_EQ(last.id, registry::no_id); // the slots ran out, some taken by other instances maybe
  EXPECT_EQ(slots.size(), keys.size());
  int object = 0;
  EXPECT_FALSE(registry::bind(last, &object));
  EXPECT_EQ(registry::get().rekey(last), registry::no_id);
  registry::get().withdraw(last); // nothing to withdraw: no effect
  for (const registry::key& k : keys) {
    registry::get().withdraw(k);
  }
}

TEST(Registry, EachExitingThreadHandsBackItsCurrentBindingOnceAndStaleOnesNot) {
  instance a;
  const registry::key k = registry::get().enroll(&a, &instance::detach);
  constexpr int threads = 8;
  std::vector<int> objects(threads);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] { ASSERT_TRUE(registry::bind(k, &objects[t])); });
  }
  for (std::thread& t : pool) {
    t.join();
  }
  std::multiset<void*> detached(a.detached.begin(), a.detached.end());
  EXPECT_EQ(detached.size(), std::size_t{threads});
  for (int& o : objects) {
    EXPECT_EQ(detached.count(&o), 1u);
  }
  // Re-keyed before the thread exits: its binding is stale and not handed back.
  registry::key current = k;
  int stale = 0;
  std::atomic<bool> bound{false}, rekeyed{false};
  std::thread late([&] {
    registry::bind(current, &stale);
    bound = true;
    while (!rekeyed) {
      std::this_thread::yield();
    }
  });
  while (!bound) {
    std::this_thread::yield();
  }
  current.id = registry::get().rekey(current);
  rekeyed = true;
  late.join();
  EXPECT_EQ(a.detached.size(), std::size_t{threads});
  registry::get().withdraw(current);
}

TEST(Registry, NoThreadIsHandedBackToAnInstanceAfterItWithdrew) {
  const unsigned seed = 20261126;
  for (int round = 0; round < 20; ++round) {
    instance a;
    registry::key k = registry::get().enroll(&a, &instance::detach);
    std::atomic<bool> stop{false};
    std::vector<std::thread> pool;
    std::vector<int> objects(4);
    for (int t = 0; t < 4; ++t) {
      // Short-lived threads: each binds with the key as enrolled and exits, while the instance
      // re-keys (making those bindings stale) and withdraws.
      pool.emplace_back([&stop, &objects, t, key = k] {
        while (!stop) {
          std::thread([&objects, t, key] { registry::bind(key, &objects[t]); }).join();
        }
      });
    }
    for (unsigned i = 0; i < (seed + round) % 5 + 1; ++i) {
      std::this_thread::yield();
    }
    k.id = registry::get().rekey(k);
    registry::get().withdraw(k);
    a.withdrawn = true;
    stop = true;
    for (std::thread& t : pool) {
      t.join();
    }
    EXPECT_EQ(a.late.load(), 0) << "round " << round << ", seed " << seed;
  }
}

} // namespace
