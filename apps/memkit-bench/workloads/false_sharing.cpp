// apps/memkit-bench/workloads/false_sharing.cpp: false sharing between neighbouring counters
// (docs/background.md#false-sharing):
// threads each updating their own counter, the counters allocated one after another.

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include <memkit/config.hpp>

#include "policies/memkit.hpp"
#include "policies/policy.hpp"
#include "workloads/workloads.hpp"

namespace memkit::bench {
namespace {

using counter = std::atomic<std::uint64_t>;

/// \returns what the note says about the counters' placement: the smallest distance between two
/// of them and whether two share a cache line.
std::string placement(const std::vector<counter*>& counters) {
  std::uintptr_t closest = UINTPTR_MAX;
  bool shared = false;
  for (std::size_t i = 0; i < counters.size(); ++i) {
    for (std::size_t j = i + 1; j < counters.size(); ++j) {
      const auto a = reinterpret_cast<std::uintptr_t>(counters[i]);
      const auto b = reinterpret_cast<std::uintptr_t>(counters[j]);
      closest = std::min(closest, a > b ? a - b : b - a);
      shared = shared || a / cache_line_size == b / cache_line_size;
    }
  }
  if (counters.size() < 2) {
    return "one counter";
  }
  return "counters " + std::to_string(closest) + " B apart, " +
         (shared ? "sharing a cache line" : "each on its own cache line");
}

} // namespace

void add_false_sharing(registry& r, const params& p) {
  // Each counter is its own allocation (the benchmark's source put them in one vector, where an
  // aligned allocator aligns only the first element and cannot separate them).
  const unsigned threads = p.sharing_threads;
  const std::size_t increments = p.scaled(2'000'000);
  const workload& sharing = r.add_workload(
      {"false-sharing", "increments", static_cast<double>(threads * increments), 10,
       "false sharing between neighbouring counters: " + std::to_string(threads) + " threads, " +
           std::to_string(increments) +
           " relaxed atomic increments each on counters allocated one after another"});
  r.add<std_policy, aligned_policy>(
      sharing, {}, [threads, increments](auto& policy, std::string& note) {
        std::vector<counter*> counters;
        for (unsigned t = 0; t < threads; ++t) {
          counters.push_back(new (policy.allocate(sizeof(counter), alignof(counter))) counter(0));
        }
        std::vector<std::thread> workers;
        for (unsigned t = 0; t < threads; ++t) {
          workers.emplace_back([c = counters[t], increments] {
            for (std::size_t i = 0; i < increments; ++i) {
              c->fetch_add(1, std::memory_order_relaxed);
            }
          });
        }
        for (auto& w : workers) {
          w.join();
        }
        std::uint64_t total = 0;
        for (counter* c : counters) {
          total += c->load();
        }
        note = placement(counters);
        for (counter* c : counters) {
          c->~counter();
          policy.deallocate(c, sizeof(counter), alignof(counter));
        }
        return total;
      });
}

} // namespace memkit::bench
