// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/workloads/larson.cpp: the server churn of Larson and Krishnan ("Memory
// allocation for long-running server applications", ISMM 1998), written here from its published
// description: each of n server threads replaces random blocks of its own array of live blocks;
// when a thread has done its share it starts a successor and exits, and the successor inherits
// the array, so it frees blocks that a thread which no longer exists allocated ("bleeding", as
// the paper calls it). docs/workloads.md#larson.

#include <algorithm>
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

/// The live blocks of each server thread, and their sizes: the arguments the published allocator
/// comparisons run it with (8 to 1000 bytes, 5000 blocks a thread). A --scale below 1 shrinks
/// the live set with the operations, so the smoke test's tiny scale stays quick.
constexpr std::size_t max_live_blocks = 5000;
constexpr int min_size = 8;
constexpr int max_size = 1000;
/// Replacements one thread makes before it hands its array on. The original's threads make 100
/// rounds of 5000 and the run lasts seconds; here a slot sees 5 threads per iteration at the
/// default scale, so every iteration has blocks freed after their thread exited.
constexpr std::size_t ops_per_thread = 20'000;

/// One server thread's array and everything its successive threads carry on.
struct server_slot {
  std::vector<stamped_block> blocks;
  rng g;
  std::uint64_t serial = 0;
  std::uint64_t sum = 0;
  std::vector<std::thread> generations; ///< generation k+1 is started (and stored) by k

  server_slot(std::size_t slot, std::size_t threads) : g(0x1a750 + slot), generations(threads) {}
};

template <class Policy>
void replace(Policy& policy, server_slot& s, stamped_block& b) {
  s.sum = s.sum * 31 + read_stamp(b.p);
  policy.deallocate(b.p, b.size, stamped_alignment);
  b.size = static_cast<std::size_t>(s.g.between(min_size, max_size));
  b.p = policy.allocate(b.size, stamped_alignment);
  write_stamp(b.p, ++s.serial);
}

/// Generation `k` of slot `s`: `ops` replacements, then the successor is started and this thread
/// returns. The successor's std::thread is stored by this thread, which is why the measuring
/// thread joins a slot's generations in order: joining k makes k's store of k+1 visible.
template <class Policy>
void run_generation(Policy& policy, server_slot& s, std::size_t k, std::size_t ops) {
  for (std::size_t i = 0; i < ops; ++i) {
    replace(policy, s, s.blocks[s.g.next() % s.blocks.size()]);
  }
  if (k + 1 < s.generations.size()) {
    s.generations[k + 1] =
        std::thread([&policy, &s, k, ops] { run_generation(policy, s, k + 1, ops); });
  }
}

/// `slots` server threads at a time, each slot's array turned over by `generations` threads of
/// `ops` replacements. The measuring thread allocates every slot's first blocks and frees the
/// last generation's, as in the original, where the main thread fills the arrays.
auto churn(std::size_t slots, std::size_t live, std::size_t generations, std::size_t ops) {
  return [slots, live, generations, ops](auto& policy, std::string&) {
    std::vector<server_slot> s;
    s.reserve(slots);
    for (std::size_t t = 0; t < slots; ++t) {
      server_slot& slot = s.emplace_back(t, generations);
      slot.blocks.resize(live);
      for (stamped_block& b : slot.blocks) {
        b.size = static_cast<std::size_t>(slot.g.between(min_size, max_size));
        b.p = policy.allocate(b.size, stamped_alignment);
        write_stamp(b.p, ++slot.serial);
      }
    }
    for (server_slot& slot : s) {
      slot.generations[0] =
          std::thread([&policy, &slot, ops] { run_generation(policy, slot, 0, ops); });
    }
    std::uint64_t h = 0;
    for (server_slot& slot : s) {
      for (std::thread& t : slot.generations) {
        t.join();
      }
      for (stamped_block& b : slot.blocks) {
        slot.sum = slot.sum * 31 + read_stamp(b.p);
        policy.deallocate(b.p, b.size, stamped_alignment);
      }
      h = h * 31 + slot.sum;
    }
    return h;
  };
}

} // namespace

void add_larson(registry& r, const params& p) {
  const std::size_t per_slot = p.scaled(100'000);
  const std::size_t live = std::min(max_live_blocks, p.scaled(max_live_blocks));
  const std::size_t ops = std::min(per_slot, ops_per_thread);
  const std::size_t generations = (per_slot + ops - 1) / ops;
  for (const unsigned n : {2u, 4u}) {
    const workload& w = r.add_workload(
        {threaded_name("larson", n), "operations", static_cast<double>(n * generations * ops), 5,
         std::to_string(n) + " server threads at a time, each replacing a random one of " +
             std::to_string(live) + " live blocks of " + std::to_string(min_size) + "-" +
             std::to_string(max_size) + " bytes " + std::to_string(ops) +
             " times, then handing its blocks to a new thread and exiting (" +
             std::to_string(generations) + " threads per server)"});
    add_general_purpose(r, w, {}, churn(n, live, generations, ops));
  }
}

} // namespace memkit::bench
