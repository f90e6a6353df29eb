// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/workloads/false_sharing.cpp: false sharing between neighbouring counters
// (docs/background.md#false-sharing): threads each incrementing their own counter, placed as real
// code places them (adjacent in one array, or packed by a pool) or on cache lines of their own.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <new>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include <memkit/config.hpp>

#include "core/policy.hpp"
#include "policies/memkit.hpp"
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

/// \returns the CPU time the calling thread has used, in ms.
double thread_cpu_ms() noexcept {
  timespec t{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

} // namespace

/// Allocates and frees the workers' counters where `Policy` puts them. std's row places them as
/// real code does with the standard allocator: one array of counters, adjacent (a
/// `std::vector<std::atomic<std::uint64_t>>`), on one cache line for up to eight threads; the
/// preloaded allocators run this row too. Every other policy gets one allocation per counter, made
/// one after another: the only placement an allocator decides. A pool packs them at its block
/// stride, memkit::aligned gives each its own line.
template <class Policy>
class counters_of {
public:
  counters_of(Policy& policy, unsigned n) : policy_(policy) {
    if constexpr (one_array) {
      void* block = policy.allocate(n * sizeof(counter), alignof(counter));
      for (unsigned i = 0; i < n; ++i) {
        all_.push_back(new (static_cast<counter*>(block) + i) counter(0));
      }
    } else {
      for (unsigned i = 0; i < n; ++i) {
        all_.push_back(new (policy.allocate(sizeof(counter), alignof(counter))) counter(0));
      }
    }
  }
  counters_of(const counters_of&) = delete;
  counters_of& operator=(const counters_of&) = delete;
  ~counters_of() {
    for (counter* c : all_) {
      c->~counter();
      if constexpr (!one_array) {
        policy_.deallocate(c, sizeof(counter), alignof(counter));
      }
    }
    if constexpr (one_array) {
      policy_.deallocate(all_.front(), all_.size() * sizeof(counter), alignof(counter));
    }
  }
  const std::vector<counter*>& all() const noexcept { return all_; }

private:
  static constexpr bool one_array = std::is_same_v<Policy, std_policy>;
  Policy& policy_;
  std::vector<counter*> all_;
};

void add_false_sharing(registry& r, const params& p) {
  const unsigned threads = p.sharing_threads;
  const std::size_t increments = p.scaled(2'000'000);
  const workload& sharing = r.add_workload(
      {"false-sharing", "increments", static_cast<double>(threads * increments), 10,
       "false sharing between neighbouring counters: " + std::to_string(threads) + " threads, " +
           std::to_string(increments) +
           " atomic increments each on its own counter; std's counters are one array, the other "
           "variants allocate each; the note says whether two landed on one cache line and how "
           "many threads ran at a time (their CPU time over the wall time: false sharing costs "
           "only while they run together)"});
  r.add<std_policy, packed_pool_policy, aligned_policy>(
      sharing, hint{sizeof(counter), threads},
      [threads, increments](auto& policy, std::string& note) {
        const counters_of<std::remove_reference_t<decltype(policy)>> counters(policy, threads);
        // The workers start together: a worker that ran alone before the others started would
        // share its line with nobody.
        std::atomic<unsigned> ready{0};
        std::vector<double> cpu_ms(threads);
        std::vector<std::thread> workers;
        const auto start = std::chrono::steady_clock::now();
        for (unsigned t = 0; t < threads; ++t) {
          workers.emplace_back(
              [c = counters.all()[t], &cpu = cpu_ms[t], increments, threads, &ready] {
                ready.fetch_add(1);
                while (ready.load() != threads) {
                  std::this_thread::yield();
                }
                const double before = thread_cpu_ms();
                for (std::size_t i = 0; i < increments; ++i) {
                  c->fetch_add(1, std::memory_order_relaxed);
                }
                cpu = thread_cpu_ms() - before;
              });
        }
        for (auto& w : workers) {
          w.join();
        }
        const double wall_ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                .count();
        std::uint64_t total = 0;
        for (const counter* c : counters.all()) {
          total += c->load();
        }
        double all_cpu_ms = 0;
        for (const double ms : cpu_ms) {
          all_cpu_ms += ms;
        }
        char together[64];
        std::snprintf(together, sizeof together, "; threads ran %.1f at a time",
                      wall_ms > 0 ? all_cpu_ms / wall_ms : 0.0);
        note = placement(counters.all()) + together;
        return total;
      });
}

} // namespace memkit::bench
