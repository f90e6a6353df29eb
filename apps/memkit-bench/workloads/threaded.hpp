// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/workloads/threaded.hpp: what the threaded workloads share: the thread counts
// they run at, and running one body on each of n threads with a hash that does not depend on how
// the threads interleave.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

namespace memkit::bench {

/// 4 threads oversubscribe the 2-core machines the figures in docs/BENCHMARKS.md come from: the
/// tables show that row rather than hide it.
inline constexpr unsigned thread_counts[] = {1, 2, 4};

/// \returns `base` and the thread count as a workload name: "mt-local-2t".
inline std::string threaded_name(const std::string& base, unsigned threads) {
  return base + "-" + std::to_string(threads) + "t";
}

/// Runs `body(t)` on threads t = 0 .. n-1 while this thread calls `idle()` until they are done.
/// \returns the threads' results combined in thread order.
template <class Body, class Idle>
std::uint64_t on_threads(unsigned n, const Body& body, const Idle& idle) {
  std::vector<std::uint64_t> results(n);
  std::atomic<unsigned> running{n};
  std::vector<std::thread> workers;
  workers.reserve(n);
  for (unsigned t = 0; t < n; ++t) {
    workers.emplace_back([&, t] {
      results[t] = body(t);
      running.fetch_sub(1, std::memory_order_release);
    });
  }
  while (running.load(std::memory_order_acquire) != 0) {
    idle();
  }
  for (auto& w : workers) {
    w.join();
  }
  std::uint64_t h = 0;
  for (const std::uint64_t r : results) {
    h = h * 31 + r;
  }
  return h;
}

/// on_threads without anything to do meanwhile: this thread just waits.
template <class Body>
std::uint64_t on_threads(unsigned n, const Body& body) {
  return on_threads(n, body, [] { std::this_thread::sleep_for(std::chrono::microseconds(200)); });
}

} // namespace memkit::bench
