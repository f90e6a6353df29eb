// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/workloads/leak_on_exit.cpp: threads that exit while objects they allocated
// are still live, after the mleak test of the mimalloc-bench suite (whose description: threads
// that allocate a long-lived object and terminate, many times over; "some allocators can leak a
// lot of memory doing this"). Here a thread of the next round frees those objects after their
// allocating thread is gone, so an allocator must keep an exited thread's memory usable (or hand
// it on) and take frees into it; one that leaks orphaned heaps shows it in peak RSS. Every object
// is freed within the iteration: nothing actually leaks. docs/workloads.md#leak-on-exit.

#include <cstddef>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "memkit_bench/random.hpp"
#include "workloads/stamps.hpp"
#include "workloads/threaded.hpp"
#include "workloads/workloads.hpp"

namespace memkit::bench {
namespace {

/// Objects each thread leaves behind when it exits.
constexpr std::size_t objects_per_thread = 1000;

/// Frees `objects`, adding their stamps to `sum`.
template <class Policy>
void free_all(Policy& policy, std::vector<stamped_block>& objects, std::uint64_t& sum) {
  for (stamped_block& b : objects) {
    sum = sum * 31 + read_stamp(b.p);
    policy.deallocate(b.p, b.size, stamped_alignment);
  }
  objects.clear();
}

/// `rounds` rounds of `threads` new threads. Thread t of a round first frees the objects that
/// thread t + 1 of the previous round left (so with one thread its predecessor's, with more a
/// neighbour's), then allocates its own objects of 16-512 bytes, stamps them and exits with them
/// live. The measuring thread frees the last round's.
auto orphans(unsigned threads, std::size_t rounds) {
  return [threads, rounds](auto& policy, std::string&) {
    std::vector<std::vector<stamped_block>> left(threads);
    std::vector<std::vector<stamped_block>> made(threads);
    for (auto& v : left) {
      v.reserve(objects_per_thread);
    }
    for (auto& v : made) {
      v.reserve(objects_per_thread);
    }
    std::vector<std::uint64_t> sums(threads);
    std::vector<std::thread> round;
    round.reserve(threads);
    std::uint64_t h = 0;
    for (std::size_t r = 0; r < rounds; ++r) {
      for (unsigned t = 0; t < threads; ++t) {
        round.emplace_back([&policy, &left, &made, &sums, threads, r, t] {
          std::uint64_t sum = 0;
          free_all(policy, left[(t + 1) % threads], sum);
          rng g((r << 8) + t);
          for (std::size_t i = 0; i < objects_per_thread; ++i) {
            const auto size = 8 * static_cast<std::size_t>(g.between(2, 64));
            void* p = policy.allocate(size, stamped_alignment);
            write_stamp(p, (r << 24) + (std::uint64_t{t} << 16) + i);
            made[t].push_back({p, size});
          }
          sums[t] = sum;
        });
      }
      for (std::thread& x : round) {
        x.join();
      }
      round.clear();
      for (const std::uint64_t s : sums) {
        h = h * 31 + s;
      }
      left.swap(made);
    }
    std::uint64_t sum = 0;
    for (auto& v : left) {
      free_all(policy, v, sum);
    }
    return h * 31 + sum;
  };
}

} // namespace

void add_leak_on_exit(registry& r, const params& p) {
  const std::size_t rounds = p.scaled(50);
  for (const unsigned n : {2u, 4u}) {
    const workload& w = r.add_workload(
        {threaded_name("leak-on-exit", n), "objects",
         static_cast<double>(n * rounds * objects_per_thread), 10,
         std::to_string(rounds) + " rounds of " + std::to_string(n) +
             " new threads, each freeing the " + std::to_string(objects_per_thread) +
             " objects a thread of the previous round left live when it exited, then allocating " +
             std::to_string(objects_per_thread) + " of 16-512 bytes and exiting with them"});
    add_general_purpose(r, w, {}, orphans(n, rounds));
  }
}

} // namespace memkit::bench
