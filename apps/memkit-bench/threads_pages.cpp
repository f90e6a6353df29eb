// apps/memkit-bench/threads_pages.cpp: seed 001's false-sharing and huge-pages workloads.

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include <memkit/huge_page.hpp>

#include "harness.hpp"

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

void add_threads_and_pages(registry& r, const params& p) {
  // Seed 001: threads each updating their own counter, the counters allocated one after another.
  // Each counter is its own allocation (the seed put them in one vector, where an aligned
  // allocator aligns only the first element and cannot separate them).
  const unsigned threads = p.threads;
  const std::size_t increments = p.scaled(2'000'000);
  const workload& sharing = r.add_workload(
      {"false-sharing", "increments", static_cast<double>(threads * increments), 10,
       "seed 001: " + std::to_string(threads) + " threads, " + std::to_string(increments) +
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

  // Seed 001: 8 MB of ints pushed into a vector (no reserve: the vector grows by doubling).
  const std::size_t ints = p.scaled((std::size_t{8} << 20) / sizeof(int));
  const workload& pages = r.add_workload(
      {"huge-pages", "ints", static_cast<double>(ints), 20,
       "seed 001: " + std::to_string(ints * sizeof(int) >> 10) +
           " KiB of ints pushed into a std::vector; the note says how much of the final buffer "
           "huge pages back"});
  r.add<std_policy, huge_page_policy>(pages, {}, [ints](auto& policy, std::string& note) {
    using P = std::remove_reference_t<decltype(policy)>;
    std::vector<int, typename P::template allocator_type<int>> v(policy.template allocator<int>());
    for (std::size_t i = 0; i < ints; ++i) {
      v.push_back(static_cast<int>(i));
    }
    const std::size_t bytes = v.capacity() * sizeof(int);
    char text[96];
    std::snprintf(text, sizeof text, "huge pages back %.1f of %.1f MiB",
                  static_cast<double>(huge_page_resource::huge_page_bytes(v.data(), bytes)) /
                      (1 << 20),
                  static_cast<double>(bytes) / (1 << 20));
    note = text;
    word_hash h;
    h.add(v.data(), v.size() * sizeof(int));
    return h.value();
  });
}

} // namespace memkit::bench
