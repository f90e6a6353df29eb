// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/workloads/node_lists.cpp: lists of ints built, summed and destroyed: list-1m
// (docs/background.md#list-of-a-million-ints) and node-lists (the node-list benchmark,
// docs/background.md#node-list-benchmark).

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>

#include "core/hash.hpp"
#include "policies/lists.hpp"
#include "workloads/node_containers.hpp"
#include "workloads/workloads.hpp"

namespace memkit::bench {
namespace {

/// Build a list of `n` ints, traverse it summing, destroy it: what both list benchmarks time.
template <template <class> class Container>
auto build_sum_destroy(std::size_t n) {
  return [n](auto& policy, std::string&) {
    using P = std::remove_reference_t<decltype(policy)>;
    Container<P> c(policy.template allocator<int>());
    for (std::size_t i = 0; i < n; ++i) {
      if constexpr (std::is_same_v<Container<P>, forward_list_of<P>>) {
        c.push_front(static_cast<int>(i));
      } else {
        c.push_back(static_cast<int>(i));
      }
    }
    std::uint64_t sum = 0;
    for (const int x : c) {
      sum += static_cast<std::uint64_t>(x);
    }
    fnv1a h;
    h.add(sum);
    return h.value();
  };
}

} // namespace

void add_list_1m(registry& r, const params& p) {
  const std::size_t million = p.scaled(1'000'000);
  const workload& l1m = r.add_workload({"list-1m", "elements", static_cast<double>(million), 10,
                                        "a million ints in a list: " + std::to_string(million) +
                                            " ints pushed into a std::list, summed, destroyed"});
  r.add(node_policies{}, l1m, hint{node_size<list_of>(), million},
        build_sum_destroy<list_of>(million));
}

void add_node_lists(registry& r, const params& p) {
  for (const std::size_t size : p.list_sizes) {
    const std::size_t n = p.scaled(size);
    // About four million elements per measurement: thousands of iterations of the small lists,
    // enough for a stable p99, and a handful of the large ones.
    const std::size_t iterations = std::max<std::size_t>(5, 4'000'000 / n);
    const workload& fwd = r.add_workload(
        {"node-lists-fwd-" + std::to_string(n), "elements", static_cast<double>(n), iterations,
         "the node-list benchmark: std::forward_list of " + std::to_string(n) +
             " ints: push_front, summing traversal, destroy"});
    r.add(node_policies{}, fwd, hint{node_size<forward_list_of>(), n},
          build_sum_destroy<forward_list_of>(n));
    const workload& list = r.add_workload(
        {"node-lists-list-" + std::to_string(n), "elements", static_cast<double>(n), iterations,
         "the node-list benchmark: std::list of " + std::to_string(n) +
             " ints: push_back, summing traversal, destroy"});
    r.add(node_policies{}, list, hint{node_size<list_of>(), n}, build_sum_destroy<list_of>(n));
  }
}

} // namespace memkit::bench
