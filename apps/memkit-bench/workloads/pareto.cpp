// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/workloads/pareto.cpp: a Pareto mix of sizes up to 1 KiB through operator
// new and delete, written here from the published description of alloc-test (OLogN
// Technologies, "Testing Memory Allocators: ptmalloc2 vs tcmalloc vs hoard vs jemalloc While
// Trying to Simulate Real-World Loads", ithare.com, 2018): each thread keeps a set of live
// objects and replaces random ones, the sizes drawn from a Pareto distribution, many small
// objects and a thin tail of large ones, as real programs allocate. docs/workloads.md#pareto.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "memkit_bench/random.hpp"
#include "workloads/stamps.hpp"
#include "workloads/threaded.hpp"
#include "workloads/workloads.hpp"

namespace memkit::bench {
namespace {

/// Live objects per thread.
constexpr std::size_t live_objects = 4096;
/// The sizes: Pareto with the 80/20 shape (alpha = log 5 / log 4, about 1.16: 80 % of the
/// objects in the smallest 20 % of sizes) from 8 bytes, capped at 1 KiB as alloc-test caps it.
constexpr double smallest = 8;
constexpr std::size_t largest = 1024;
/// Sizes drawn before the timed iterations: a power per draw costs as much as an allocation.
constexpr std::size_t table_size = std::size_t{1} << 16;

std::shared_ptr<const std::vector<std::uint32_t>> pareto_sizes() {
  const double alpha = std::log(5.0) / std::log(4.0);
  auto sizes = std::make_shared<std::vector<std::uint32_t>>(table_size);
  rng g(0x9a2e70);
  for (std::uint32_t& s : *sizes) {
    // Inverse transform: u uniform in (0, 1], x = smallest / u^(1/alpha) is Pareto distributed.
    const double u = static_cast<double>((g.next() >> 11) + 1) * 0x1p-53;
    const double x = smallest / std::pow(u, 1 / alpha);
    s = static_cast<std::uint32_t>(std::min<double>(x, largest));
  }
  return sizes;
}

/// Each of `threads` threads replaces a random one of its live objects `ops` times with an
/// object of the next size from the table (from a random start), stamping it; the freed object's
/// stamp goes into the hash. Every object is freed by the thread that allocated it.
auto pareto_mix(unsigned threads, std::size_t ops,
                std::shared_ptr<const std::vector<std::uint32_t>> sizes) {
  return [threads, ops, sizes](auto& policy, std::string&) {
    return on_threads(threads, [&policy, ops, &sizes](unsigned t) {
      std::vector<stamped_block> live(live_objects);
      rng g(0xa110c7e5 + t);
      std::size_t next = g.next() % table_size;
      std::uint64_t sum = 0;
      for (std::size_t i = 0; i < ops; ++i) {
        stamped_block& b = live[g.next() % live_objects];
        if (b.p != nullptr) {
          sum = sum * 31 + read_stamp(b.p);
          policy.deallocate(b.p, b.size, stamped_alignment);
        }
        b.size = (*sizes)[next];
        next = (next + 1) % table_size;
        b.p = policy.allocate(b.size, stamped_alignment);
        write_stamp(b.p, i);
      }
      for (stamped_block& b : live) {
        if (b.p != nullptr) {
          sum = sum * 31 + read_stamp(b.p);
          policy.deallocate(b.p, b.size, stamped_alignment);
        }
      }
      return sum;
    });
  };
}

} // namespace

void add_pareto(registry& r, const params& p) {
  const std::size_t ops = p.scaled(200'000);
  const auto sizes = pareto_sizes();
  for (const unsigned n : {1u, 2u}) {
    const workload& w = r.add_workload(
        {threaded_name("pareto", n), "operations", static_cast<double>(n * ops), 10,
         std::to_string(n) + " thread(s), each replacing a random one of its " +
             std::to_string(live_objects) + " live objects " + std::to_string(ops) +
             " times through operator new/delete, sizes Pareto-distributed (alpha 1.16) from " +
             "8 bytes to 1 KiB"});
    add_general_purpose(r, w, {}, pareto_mix(n, ops, sizes));
  }
}

} // namespace memkit::bench
