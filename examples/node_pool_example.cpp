// SPDX-License-Identifier: BSL-1.0
// A symbol table of a small interpreter: std::map nodes come from a node_pool that learns the node
// size by itself, so no one computes sizeof(std::_Rb_tree_node<...>) or runs a generator tool.
#include <cstdio>
#include <map>
#include <memkit/allocator.hpp>
#include <memkit/node_pool.hpp>
#include <string>
#include <unordered_map>

namespace {

using pool = memkit::node_pool<>;
template <class K, class V>
using pooled_map = std::map<K, V, std::less<>, memkit::allocator<std::pair<const K, V>, pool>>;

} // namespace

int main() {
  pool scope_pool;
  pooled_map<int, long> slots(scope_pool);
  for (int round = 0; round < 100; ++round) {
    for (int i = 0; i < 500; ++i) {
      slots[i] = static_cast<long>(i) * round;
    }
    for (int i = 0; i < 500; i += 2) {
      slots.erase(i); // freed nodes are reused by the next round: no heap traffic at all
    }
  }
  long checksum = 0;
  for (const auto& [slot, value] : slots) {
    checksum += value;
  }

  // Hash tables also allocate bucket arrays; those are not nodes and go to the upstream.
  pool hash_pool;
  std::unordered_map<int, int, std::hash<int>, std::equal_to<>,
                     memkit::allocator<std::pair<const int, int>, pool>>
      hashed(hash_pool);
  for (int i = 0; i < 1000; ++i) {
    hashed.emplace(i, i);
  }

  std::printf("map: node %zu bytes, %zu nodes in use, capacity %zu; unordered_map: node %zu "
              "bytes, %zu nodes in use; checksum %ld\n",
              scope_pool.node_size(), scope_pool.nodes_in_use(), scope_pool.capacity(),
              hash_pool.node_size(), hash_pool.nodes_in_use(), checksum);
  const bool ok = scope_pool.nodes_in_use() == slots.size() &&
                  hash_pool.nodes_in_use() == hashed.size() && checksum == 99L * 250 * 250;
  return ok ? 0 : 1;
}
