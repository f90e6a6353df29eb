// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/workloads/glibc_simple.cpp: glibc's own malloc micro benchmark
// (benchtests/bench-malloc-simple.c in the GNU C Library), written here from its published
// description: allocate a small number of blocks of one size, write them, free them all, again
// and again, for live sets of 25, 100, 400 and 1600 blocks of 16, 32 and 64 bytes; first on the
// main thread, then on a thread of its own (glibc's thread arena). It tracks the allocator's
// per-thread cache (glibc's tcache) and its first-level free lists. glibc frees in allocation
// order; here each size also runs freeing newest first. docs/workloads.md#glibc-simple.

#include <cstddef>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "memkit_bench/random.hpp"
#include "policies/memkit.hpp"
#include "workloads/stamps.hpp"
#include "workloads/workloads.hpp"

namespace memkit::bench {
namespace {

/// The live-set sizes of bench-malloc-simple.
constexpr std::size_t live_sets[] = {25, 100, 400, 1600};

/// One pass: for each live set n, `allocations / n` rounds of allocating n blocks of `size`
/// bytes, writing every word of each (as the original writes every int), then freeing them in
/// `order`, each freed block's words added to the hash.
template <class Policy>
std::uint64_t pass(Policy& policy, std::size_t size, free_order order, std::size_t allocations) {
  std::vector<void*> blocks(live_sets[std::size(live_sets) - 1]);
  const std::size_t words = size / sizeof(std::uint64_t);
  std::uint64_t sum = 0;
  for (const std::size_t n : live_sets) {
    const std::size_t rounds = allocations / n == 0 ? 1 : allocations / n;
    for (std::size_t r = 0; r < rounds; ++r) {
      for (std::size_t i = 0; i < n; ++i) {
        auto* w = static_cast<std::uint64_t*>(policy.allocate(size, stamped_alignment));
        for (std::size_t k = 0; k < words; ++k) {
          w[k] = i + k;
        }
        blocks[i] = w;
      }
      for (std::size_t j = 0; j < n; ++j) {
        const std::size_t i = order == free_order::lifo ? n - 1 - j : j;
        const auto* w = static_cast<const std::uint64_t*>(blocks[i]);
        for (std::size_t k = 0; k < words; ++k) {
          sum += w[k];
        }
        policy.deallocate(blocks[i], size, stamped_alignment);
      }
    }
  }
  return sum;
}

/// A pass on the measuring thread, then one on a new thread (a thread the allocator has not seen
/// yet, as the original's thread-arena case). The passes take turns, never overlap, so the
/// single-threaded strategies fit.
auto simple(std::size_t size, free_order order, std::size_t allocations) {
  return [size, order, allocations](auto& policy, std::string&) {
    const std::uint64_t main_pass = pass(policy, size, order, allocations);
    std::uint64_t thread_pass = 0;
    std::thread([&] { thread_pass = pass(policy, size, order, allocations); }).join();
    return main_pass * 31 + thread_pass;
  };
}

} // namespace

void add_glibc_simple(registry& r, const params& p) {
  const std::size_t allocations = p.scaled(25'000);
  for (const free_order order : {free_order::fifo, free_order::lifo}) {
    const auto& info = free_orders[static_cast<std::size_t>(order)];
    for (const std::size_t size : {16, 32, 64}) {
      const workload& w = r.add_workload(
          {"glibc-simple-" + std::string(info.name) + "-" + std::to_string(size), "allocations",
           static_cast<double>(2 * std::size(live_sets) * allocations), 10,
           "live sets of 25, 100, 400 and 1600 blocks of " + std::to_string(size) +
               " bytes, each allocated, written and freed " + std::string(info.description) +
               " until " + std::to_string(allocations) +
               " blocks, on the measuring thread and then on a new thread"});
      const hint h{size, live_sets[std::size(live_sets) - 1]};
      auto iteration = simple(size, order, allocations);
      r.add<std_policy, thread_cached_policy, pool_policy>(w, h, iteration);
    }
  }
}

} // namespace memkit::bench
