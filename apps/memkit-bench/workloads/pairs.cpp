// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/workloads/pairs.cpp: fixed-size allocate/free pairs: N blocks allocated, then
// freed in each free order of memkit_bench/random.hpp (the patterns bench/ times too), for each
// block size.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "memkit_bench/random.hpp"
#include "policies/lists.hpp"
#include "workloads/workloads.hpp"

namespace memkit::bench {
namespace {

/// Blocks hold a pointer-sized index at least, so every size is served with pointer alignment.
constexpr std::size_t block_alignment = alignof(std::uint64_t);

/// Allocates `n` blocks of `size` bytes, writes each one's index into it, then frees them in
/// `order_of`, reading the index back: the hash proves every block kept its contents.
auto alloc_free(std::size_t size, std::shared_ptr<const std::vector<std::uint32_t>> order_of) {
  auto blocks = std::make_shared<std::vector<void*>>(order_of->size());
  return [size, order_of, blocks](auto& policy, std::string&) {
    std::vector<void*>& b = *blocks;
    for (std::size_t i = 0; i < b.size(); ++i) {
      b[i] = policy.allocate(size, block_alignment);
      *static_cast<std::uint64_t*>(b[i]) = i;
    }
    std::uint64_t sum = 0;
    for (const std::uint32_t i : *order_of) {
      sum = sum * 31 + *static_cast<std::uint64_t*>(b[i]);
      policy.deallocate(b[i], size, block_alignment);
    }
    return sum;
  };
}

} // namespace

void add_pairs(registry& r, const params& p) {
  const std::size_t n = p.scaled(p.pair_blocks);
  for (const auto& [o, order_name, order_description] : free_orders) {
    auto order_of = std::make_shared<const std::vector<std::uint32_t>>(make_free_order(o, n));
    for (const std::size_t size : p.pair_sizes) {
      const workload& w = r.add_workload(
          {"pairs-" + std::string(order_name) + "-" + std::to_string(size), "pairs",
           static_cast<double>(n), std::max<std::size_t>(20, 2'000'000 / n / (size / 8 + 1)),
           std::to_string(n) + " blocks of " + std::to_string(size) +
               " bytes allocated, then freed " + std::string(order_description)});
      const hint h{size, n};
      auto iteration = alloc_free(size, order_of);
      r.add<std_policy, pool_policy, array_pool_policy, multipool_policy, arena_policy>(w, h,
                                                                                        iteration);
      if (o == free_order::lifo) {
        r.add<stack_policy>(w, h, iteration); // a stack takes frees in LIFO order only
      }
      r.add<pmr_monotonic_policy, pmr_unsync_pool_policy, pmr_sync_pool_policy, boost_pool_policy,
            foonathan_pool_policy>(w, h, iteration);
    }
  }
}

} // namespace memkit::bench
