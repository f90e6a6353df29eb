// apps/memkit-bench/workloads/false_sharing.cpp: the false-sharing benchmark
// (docs/background.md#false-sharing): threads each incrementing their own counter, the counters
// allocated one after another, so where they land is the allocator's choice.

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
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

/// memkit::pool with blocks the counter's own size and alignment: consecutive counters 8 bytes
/// apart, as a pool of small objects packs them (memkit-pool's default 16-byte alignment would put
/// them 16 apart, still several to a line).
struct packed_pool_policy : memkit_policy<memkit::pool<>> {
  static constexpr const char* name = "memkit-pool";
  explicit packed_pool_policy(const hint& h) : memkit_policy(h.block_size, alignof(counter)) {}
};

/// \returns what the note says about the counters' placement: the first counter's offset in its
/// cache line, the smallest distance between two counters, and whether two share a line.
std::string placement(const std::vector<counter*>& counters) {
  if (counters.size() < 2) {
    return "one counter";
  }
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
  char text[128];
  std::snprintf(
      text, sizeof text, "counters %ju B apart (first at line offset %ju), %s",
      static_cast<std::uintmax_t>(closest),
      static_cast<std::uintmax_t>(reinterpret_cast<std::uintptr_t>(counters[0]) % cache_line_size),
      shared ? "sharing a cache line" : "each on its own cache line");
  return text;
}

} // namespace

void add_false_sharing(registry& r, const params& p) {
  // Each counter is its own allocation, made one after another by the thread that starts the
  // workers (as code that news up one statistics object per worker does): the only placement an
  // allocator decides. Counters that are elements of one array share lines whatever the
  // allocator, since it aligns only the array's start. A pool packs the counters at its block
  // stride (the placement that shares); memkit::aligned gives each its own line (the fix); glibc
  // and the preloaded allocators put them wherever their size class and free lists say, and the
  // note tells where that was.
  const unsigned threads = p.sharing_threads;
  const std::size_t increments = p.scaled(2'000'000);
  const workload& sharing = r.add_workload(
      {"false-sharing", "increments", static_cast<double>(threads * increments), 10,
       "the false-sharing benchmark: " + std::to_string(threads) + " threads, " +
           std::to_string(increments) +
           " atomic increments each on counters allocated one after another; the note says "
           "whether two landed on one cache line"});
  r.add<std_policy, packed_pool_policy, aligned_policy>(
      sharing, hint{sizeof(counter), threads},
      [threads, increments](auto& policy, std::string& note) {
        std::vector<counter*> counters;
        for (unsigned t = 0; t < threads; ++t) {
          counters.push_back(new (policy.allocate(sizeof(counter), alignof(counter))) counter(0));
        }
        // The workers start together: a worker that ran alone before the others started would
        // share its line with nobody.
        std::atomic<unsigned> ready{0};
        std::vector<std::thread> workers;
        for (unsigned t = 0; t < threads; ++t) {
          workers.emplace_back([c = counters[t], increments, threads, &ready] {
            ready.fetch_add(1);
            while (ready.load() != threads) {
              std::this_thread::yield();
            }
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
