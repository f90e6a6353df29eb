// SPDX-License-Identifier: BSL-1.0
// Two order books, each on its own pool, handed over between sessions: memkit::allocator makes the
// move safe (the receiving list takes the pool along) instead of freeing nodes into the wrong pool.
#include <cstdio>
#include <list>
#include <memkit/allocator.hpp>
#include <memkit/node_pool.hpp>
#include <utility>

namespace {

struct order {
  int id;
  double price;
};

using pool = memkit::node_pool<>;
using order_list = std::list<order, memkit::allocator<order, pool>>;

double total(const order_list& orders) {
  double sum = 0;
  for (const order& o : orders) {
    sum += o.price;
  }
  return sum;
}

} // namespace

int main() {
  pool morning_pool;
  pool evening_pool;
  order_list morning(morning_pool); // the allocator converts from the pool
  order_list evening(evening_pool);
  for (int i = 0; i < 1000; ++i) {
    morning.push_back({i, 1.0});
    evening.push_back({i, 2.0});
  }
  // With a stateful allocator claiming is_always_equal, this assignment would keep the morning
  // pool and later free evening nodes into it (docs/background.md#stateful-always-equal).
  // memkit::allocator propagates.
  morning = std::move(evening);
  const bool took_pool = &morning.get_allocator().resource() == &evening_pool;
  const bool morning_pool_empty = morning_pool.nodes_in_use() == 0;
  morning.clear();
  const bool all_back = evening_pool.nodes_in_use() == 0;

  std::printf("node size adopted: %zu bytes; after the move: list on evening pool %s, morning "
              "pool empty %s; after clear: all nodes back %s\n",
              evening_pool.node_size(), took_pool ? "yes" : "no", morning_pool_empty ? "yes" : "no",
              all_back ? "yes" : "no");
  evening.push_back({1, total(morning)});
  return took_pool && morning_pool_empty && all_back ? 0 : 1;
}
