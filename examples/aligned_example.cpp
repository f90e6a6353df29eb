// SPDX-License-Identifier: BSL-1.0
// examples/aligned_example.cpp: per-thread counters that never share a cache line.
//
// Counters packed next to each other sit on one cache line, which then bounces between the cores
// that write them (false sharing). memkit::aligned gives each counter whole lines of its own.
#include <memkit/aligned.hpp>

#include <chrono>
#include <cstdio>
#include <new>
#include <thread>
#include <vector>

namespace {

constexpr int threads = 4;
constexpr long increments = 2'000'000;

// Runs one thread per counter, each incrementing its own; \returns the elapsed milliseconds.
double hammer(const std::vector<volatile long*>& counters) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> workers;
  for (volatile long* c : counters) {
    workers.emplace_back([c] {
      for (long i = 0; i < increments; ++i) {
        *c = *c + 1; // volatile: every increment is a store, as with a shared statistic
      }
    });
  }
  for (std::thread& w : workers) {
    w.join();
  }
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

} // namespace

int main() {
  memkit::aligned<> lines; // 64-byte lines
  std::vector<volatile long*> separate;
  for (int t = 0; t < threads; ++t) {
    separate.push_back(::new (lines.allocate(sizeof(long), alignof(long))) long{0});
  }
  long packed_storage[threads] = {};
  std::vector<volatile long*> packed;
  for (long& c : packed_storage) {
    packed.push_back(&c);
  }

  const double packed_ms = hammer(packed);
  const double separate_ms = hammer(separate);
  std::printf("%d threads x %ld increments: packed counters %.1f ms, one line each %.1f ms\n",
              threads, increments, packed_ms, separate_ms);

  int wrong = 0;
  for (int t = 0; t < threads; ++t) {
    const auto line = memkit::detail::address(const_cast<long*>(separate[t])) / 64;
    for (int u = 0; u < t; ++u) {
      wrong += line == memkit::detail::address(const_cast<long*>(separate[u])) / 64 ? 1 : 0;
    }
    wrong += *separate[t] == increments && packed_storage[t] == increments ? 0 : 1;
    lines.deallocate(const_cast<long*>(separate[t]), sizeof(long), alignof(long));
  }
  return wrong == 0 ? 0 : 1;
}
