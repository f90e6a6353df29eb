// apps/memkit-bench/lists.cpp: node containers: seed 001's list-1m, seed 004's node-lists and
// seed 002's containers (list, map and string insert/remove of 10,000 elements).

#include <forward_list>
#include <list>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include "harness.hpp"

namespace memkit::bench {
namespace {

template <class Policy>
using list_of = std::list<int, typename Policy::template allocator_type<int>>;
template <class Policy>
using forward_list_of = std::forward_list<int, typename Policy::template allocator_type<int>>;
template <class Policy>
using map_of = std::map<int, int, std::less<int>,
                        typename Policy::template allocator_type<std::pair<const int, int>>>;

/// \returns the size of the nodes `Container` allocates one at a time, as memkit::node_pool learns
/// it from the first one: the block size the fixed-size peers need.
template <template <class> class Container>
std::size_t node_size() {
  node_pool_policy probe{hint{}};
  Container<node_pool_policy> c(probe.allocator<int>());
  if constexpr (std::is_same_v<Container<node_pool_policy>, map_of<node_pool_policy>>) {
    c.emplace(0, 0);
  } else {
    c.push_front(0);
  }
  return probe.resource().node_size();
}

/// Seeds 001 and 004: build a list of `n` ints, traverse it summing, destroy it.
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

/// Seed 002: 10,000 elements inserted, then removed, in one container.
constexpr std::size_t container_elements = 10'000;

} // namespace

void add_lists(registry& r, const params& p) {
  const std::size_t million = p.scaled(1'000'000);
  const workload& l1m = r.add_workload({"list-1m", "elements", static_cast<double>(million), 10,
                                        "seed 001: " + std::to_string(million) +
                                            " ints pushed into a std::list, summed, destroyed"});
  r.add(node_policies{}, l1m, hint{node_size<list_of>(), million},
        build_sum_destroy<list_of>(million));

  for (const std::size_t size : p.list_sizes) {
    const std::size_t n = p.scaled(size);
    // About four million elements per measurement: thousands of iterations of the small lists,
    // enough for a stable p99, and a handful of the large ones.
    const std::size_t iterations = std::max<std::size_t>(5, 4'000'000 / n);
    const workload& fwd = r.add_workload({"node-lists-fwd-" + std::to_string(n), "elements",
                                          static_cast<double>(n), iterations,
                                          "seed 004: std::forward_list of " + std::to_string(n) +
                                              " ints: push_front, summing traversal, destroy"});
    r.add(node_policies{}, fwd, hint{node_size<forward_list_of>(), n},
          build_sum_destroy<forward_list_of>(n));
    const workload& list = r.add_workload({"node-lists-list-" + std::to_string(n), "elements",
                                           static_cast<double>(n), iterations,
                                           "seed 004: std::list of " + std::to_string(n) +
                                               " ints: push_back, summing traversal, destroy"});
    r.add(node_policies{}, list, hint{node_size<list_of>(), n}, build_sum_destroy<list_of>(n));
  }
}

void add_containers(registry& r, const params& p) {
  const std::size_t n = p.scaled(container_elements);
  const std::string count = std::to_string(n);
  // Seed 002 runs each test three times to show the first (cold) run; `cold` is that run here,
  // and the timed iterations are the warm ones.
  const workload& list =
      r.add_workload({"containers-list", "elements", static_cast<double>(n), 200,
                      "seed 002: " + count + " ints push_back into a std::list, then pop_front"});
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

  const workload& map = r.add_workload(
      {"containers-map", "elements", static_cast<double>(n), 200,
       "seed 002: " + count + " keys inserted into a std::map in order, then erased by key"});
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

  const workload& strings = r.add_workload(
      {"containers-string", "elements", static_cast<double>(n), 200,
       "seed 002: " + count + " strings beyond the SSO limit appended to a vector, then removed"});
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
