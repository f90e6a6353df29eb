// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/workloads/json_tree.cpp: the json-tree service workload
// (docs/background.md#json-tree): a synthetic JSON-shaped tree of labelled nodes with int arrays,
// built, hashed and dropped per request.

#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "core/hash.hpp"
#include "memkit_bench/random.hpp"
#include "policies/lists.hpp"
#include "workloads/json_tree.hpp"
#include "workloads/workloads.hpp"

namespace memkit::bench {
namespace {

/// \returns the number of nodes of the tree every request builds (shown in the description).
std::size_t tree_nodes(const tree_shape& s) {
  std_policy p{hint{}};
  rng g(tree_seed);
  json_node<std_policy> root(p);
  build(root, p, g, s, 0);
  return count_nodes(root);
}

} // namespace

void add_json_tree(registry& r, const params& p) {
  const tree_shape shape{p.tree_depth < 1 ? 1 : p.tree_depth, p.tree_branching, p.tree_values};
  const workload& w = r.add_workload(
      {"json-tree", "requests", 1, 20'000,
       "the json-tree service workload: per request a tree of " +
           std::to_string(tree_nodes(shape)) + " nodes (depth " + std::to_string(shape.depth) +
           ", branching " + std::to_string(shape.branching) + ", values " +
           std::to_string(shape.values) + "), FNV-1a over labels and values, dropped at the end"});
  auto request = [shape](auto& policy, std::string&) {
    using node = json_node<std::remove_reference_t<decltype(policy)>>;
    node root(policy);
    return build_request(root, policy, shape);
  };
  r.add(general_policies{}, w, {}, request);
}

} // namespace memkit::bench
