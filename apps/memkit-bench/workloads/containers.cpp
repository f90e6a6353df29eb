// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/workloads/containers.cpp: the three-run container benchmark
// (docs/background.md#cold-and-warm-containers): list,
// map and string insert/remove of 10,000 elements in one container.

#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/hash.hpp"
#include "policies/lists.hpp"
#include "workloads/node_containers.hpp"
#include "workloads/workloads.hpp"

namespace memkit::bench {
namespace {

/// Elements inserted, then removed, in one container, as in the three-run container benchmark.
constexpr std::size_t container_elements = 10'000;

} // namespace

void add_containers(registry& r, const params& p) {
  const std::size_t n = p.scaled(container_elements);
  const std::string count = std::to_string(n);
  // The three-run container benchmark runs each test three times to show the first (cold) run;
  // `cold` is that run here, and the timed iterations are the warm ones.
  const workload& list = r.add_workload({"containers-list", "elements", static_cast<double>(n), 200,
                                         "the three-run container benchmark: " + count +
                                             " ints push_back into a std::list, then pop_front"});
  r.add(node_policies{}, list, hint{node_size<list_of>(), n}, [n](auto& policy, std::string&) {
    using P = std::remove_reference_t<decltype(policy)>;
    list_of<P> c(policy.template allocator<int>());
    for (std::size_t i = 0; i < n; ++i) {
      c.push_back(static_cast<int>(i));
    }
    std::uint64_t sum = 0;
    while (!c.empty()) {
      sum += static_cast<std::uint64_t>(c.front());
      c.pop_front();
    }
    return sum;
  });

  const workload& map =
      r.add_workload({"containers-map", "elements", static_cast<double>(n), 200,
                      "the three-run container benchmark: " + count +
                          " keys inserted into a std::map in order, then erased by key"});
  r.add(node_policies{}, map, hint{node_size<map_of>(), n}, [n](auto& policy, std::string&) {
    using P = std::remove_reference_t<decltype(policy)>;
    map_of<P> m(policy.template allocator<int>());
    for (std::size_t i = 0; i < n; ++i) {
      m.emplace(static_cast<int>(i), static_cast<int>(i * 7));
    }
    std::uint64_t sum = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const auto it = m.find(static_cast<int>(i));
      sum += static_cast<std::uint64_t>(it->second);
      m.erase(it);
    }
    return sum;
  });

  const workload& strings =
      r.add_workload({"containers-string", "elements", static_cast<double>(n), 200,
                      "the three-run container benchmark: " + count +
                          " strings beyond the SSO limit appended to a vector, then removed"});
  r.add(general_policies{}, strings, {}, [n](auto& policy, std::string&) {
    using P = std::remove_reference_t<decltype(policy)>;
    using string_type =
        std::basic_string<char, std::char_traits<char>, typename P::template allocator_type<char>>;
    std::vector<string_type, typename P::template allocator_type<string_type>> v(
        policy.template allocator<string_type>());
    v.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
      string_type s(policy.template allocator<char>());
      s.append("container_element_");
      s.append(std::to_string(i));
      v.push_back(std::move(s));
    }
    word_hash h;
    while (!v.empty()) {
      h.add(v.back().data(), v.back().size());
      v.pop_back();
    }
    return h.value();
  });
}

} // namespace memkit::bench
