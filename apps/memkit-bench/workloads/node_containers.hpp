// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/workloads/node_containers.hpp: the node containers the list and container
// workloads build, over any policy, and the node size the fixed-size peers are told.
#pragma once

#include <cstddef>
#include <forward_list>
#include <functional>
#include <list>
#include <map>
#include <type_traits>
#include <utility>

#include "core/policy.hpp"
#include "policies/memkit.hpp"

namespace memkit::bench {

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

} // namespace memkit::bench
