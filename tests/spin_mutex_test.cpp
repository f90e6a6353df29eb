// SPDX-License-Identifier: BSL-1.0
#include "memkit/spin_mutex.hpp"

#include <cstddef>
#include <gtest/gtest.h>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

namespace {

using memkit::spin_mutex;

static_assert(alignof(spin_mutex) == 64 && sizeof(spin_mutex) == 64,
              "the flag has a cache line of its own");
static_assert(std::is_nothrow_default_constructible_v<spin_mutex> &&
              !std::is_copy_constructible_v<spin_mutex>);

/// `threads` threads each add 1 to a plain counter `increments` times under the lock: a lost
/// update shows as a short total, and a section that is not ordered after the previous one is a
/// data race ThreadSanitizer reports.
void count_under_lock(unsigned threads, std::size_t increments) {
  spin_mutex m;
  std::size_t counter = 0;
  std::vector<std::thread> workers;
  for (unsigned t = 0; t < threads; ++t) {
    workers.emplace_back([&] {
      for (std::size_t i = 0; i < increments; ++i) {
        const std::lock_guard<spin_mutex> lock(m);
        const std::size_t seen = counter;
        std::this_thread::yield();
        counter = seen + 1;
      }
    });
  }
  for (auto& w : workers) {
    w.join();
  }
  EXPECT_EQ(counter, threads * increments);
}

TEST(SpinMutex, TwoThreadsNeverLoseAnUpdate) { count_under_lock(2, 5000); }

// Eight threads on a machine with fewer cores: waiters must yield to a preempted holder, or this
// runs for minutes instead of well under a second.
TEST(SpinMutex, OversubscribedThreadsNeverLoseAnUpdate) { count_under_lock(8, 2000); }

TEST(SpinMutex, TryLockTakesAFreeLockAndFailsOnAHeldOne) {
  spin_mutex m;
  ASSERT_TRUE(m.try_lock());
  bool other = true;
  std::thread([&] { other = m.try_lock(); }).join();
  EXPECT_FALSE(other);
  m.unlock();
  std::thread([&] {
    other = m.try_lock();
    if (other) {
      m.unlock();
    }
  }).join();
  EXPECT_TRUE(other);
}

TEST(SpinMutex, WorksWithTheStandardLocks) {
  spin_mutex a;
  spin_mutex b;
  {
    const std::scoped_lock both(a, b);
    EXPECT_FALSE(a.try_lock());
    EXPECT_FALSE(b.try_lock());
  }
  std::unique_lock<spin_mutex> lock(a, std::try_to_lock);
  EXPECT_TRUE(lock.owns_lock());
}

} // namespace
