// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/workloads/json_tree.hpp: the json-tree service workload's request
// (docs/background.md#json-tree), shared by the json-tree workload and mt-server.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/hash.hpp"
#include "memkit_bench/random.hpp"

namespace memkit::bench {

/// One JSON-like object: a label (12-28 chars, mostly beyond the SSO limit), an array of ints and
/// an array of child objects, all from the policy's allocator. It has no `allocator_type`, so
/// std::pmr's uses-allocator construction passes nothing extra (the first uses-allocator pitfall,
/// docs/background.md#pmr-uses-allocator).
template <class Policy>
struct json_node {
  using string_type = std::basic_string<char, std::char_traits<char>,
                                        typename Policy::template allocator_type<char>>;
  using values_type = std::vector<int, typename Policy::template allocator_type<int>>;
  using children_type = std::vector<json_node, typename Policy::template allocator_type<json_node>>;

  explicit json_node(Policy& p)
      : label(p.template allocator<char>()), values(p.template allocator<int>()),
        children(p.template allocator<json_node>()) {}

  string_type label;
  values_type values;
  children_type children;
};

/// Every request seeds its generator alike, so every request builds the same tree, as the
/// json-tree service workload specifies.
inline constexpr std::uint64_t tree_seed = 0x5eed;

/// Labels of 12 to 28 characters, as the json-tree service workload specifies: most are beyond
/// libstdc++'s 15-character SSO.
inline constexpr int min_label = 12;
inline constexpr int max_label = 28;

/// 'a' + byte % 26 for every byte, looked up: the label generator must cost little next to the
/// allocations it drives (computed per letter, it was a sixth of an arena request's instructions).
inline constexpr std::array<char, 256> letter = [] {
  std::array<char, 256> t{};
  for (std::size_t b = 0; b < t.size(); ++b) {
    t[b] = static_cast<char>('a' + b % 26);
  }
  return t;
}();

struct tree_shape {
  int depth;
  int branching;
  int values;
};

/// Children at `depth` are 0 .. cap, the cap falling linearly from `branching` at the root to 1
/// just above the leaves: the json-tree service workload's "0-4 children tapering with depth".
inline int child_cap(const tree_shape& s, int depth) {
  return (s.branching * (s.depth - depth) + s.depth - 1) / s.depth;
}

template <class Policy>
void build(json_node<Policy>& n, Policy& p, rng& g, const tree_shape& s, int depth) {
  // A parser knows a label's length before storing it: one allocation of the exact size.
  char label[max_label];
  const int length = g.between(min_label, max_label);
  for (int i = 0; i < length; i += 8) {
    std::uint64_t bits = g.next(); // eight letters from each random number
    for (int j = i; j < std::min(i + 8, length); ++j, bits >>= 8) {
      label[j] = letter[bits & 0xff];
    }
  }
  n.label.assign(label, static_cast<std::size_t>(length));
  const int values = g.between(0, s.values);
  for (int i = 0; i < values; ++i) {
    n.values.push_back(static_cast<int>(g.next() & 0xffff));
  }
  if (depth + 1 >= s.depth) {
    return;
  }
  // The root is the request document: it always has all its fields, so no seed can make the
  // whole request a single node.
  const int children = depth == 0 ? s.branching : g.between(0, child_cap(s, depth));
  for (int i = 0; i < children; ++i) {
    build(n.children.emplace_back(p), p, g, s, depth + 1);
  }
}

template <class Policy>
void hash_tree(const json_node<Policy>& n, fnv1a& h) {
  h.add(n.label.data(), n.label.size());
  for (const int v : n.values) {
    h.add_value(static_cast<std::uint64_t>(v));
  }
  for (const auto& c : n.children) {
    hash_tree(c, h);
  }
}

template <class Policy>
std::size_t count_nodes(const json_node<Policy>& n) {
  std::size_t nodes = 1;
  for (const auto& c : n.children) {
    nodes += count_nodes(c);
  }
  return nodes;
}

/// \returns the hash of one request: the tree built from `tree_seed` under `p`, FNV-1a over its
/// labels and values. The tree is left in `root` for the caller to drop.
template <class Policy>
std::uint64_t build_request(json_node<Policy>& root, Policy& p, const tree_shape& s) {
  rng g(tree_seed); // the same tree every request
  build(root, p, g, s, 0);
  fnv1a h;
  hash_tree(root, h);
  return h.value();
}

} // namespace memkit::bench
