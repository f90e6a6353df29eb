// SPDX-License-Identifier: BSL-1.0
// tests/support/run_threads.hpp: starts test threads together, so that they race from their first
// operation instead of one finishing before the next is created.
#pragma once

#include <atomic>
#include <thread>
#include <vector>

namespace memkit::test {

/// Starts `n` threads running `f(thread_number)` at once and joins them.
template <class F>
void run_threads(unsigned n, F f) {
  std::atomic<unsigned> ready{0};
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < n; ++t) {
    threads.emplace_back([&, t] {
      ready.fetch_add(1);
      while (ready.load() < n) {
        std::this_thread::yield();
      }
      f(t);
    });
  }
  for (auto& t : threads) {
    t.join();
  }
}

} // namespace memkit::test
