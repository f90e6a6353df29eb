// SPDX-License-Identifier: BSL-1.0
// Game entities with unique ownership, allocated from a node_pool: allocate_unique pairs
// construction with allocation and destruction with deallocation, so no entity leaks its
// resources or goes back to the pool undestroyed (docs/background.md#destroy-then-deallocate).
#include <cstdio>
#include <memkit/node_pool.hpp>
#include <memkit/unique.hpp>
#include <string>
#include <vector>

namespace {

int alive = 0;

struct entity {
  entity(int id, std::string name) : id(id), name(std::move(name)) { ++alive; }
  entity(const entity&) = delete;
  entity& operator=(const entity&) = delete;
  ~entity() { --alive; }
  int id;
  std::string name; // owns heap memory: skipping the destructor would leak it
};

} // namespace

int main() {
  memkit::node_pool<> entities;
  using entity_ptr = memkit::unique_ptr_for<entity, memkit::allocator<entity, memkit::node_pool<>>>;
  std::vector<entity_ptr> world;
  for (int i = 0; i < 200; ++i) {
    world.push_back(memkit::allocate_unique<entity>(entities, i, "entity with a long enough name"));
  }
  world.erase(world.begin(), world.begin() + 150); // destroyed, then returned to the pool
  const std::size_t in_use = entities.nodes_in_use();
  const int alive_now = alive;
  world.clear();
  std::printf("entity block %zu bytes; after erasing 150 of 200: %d alive, %zu blocks in use; "
              "after clear: %d alive, %zu in use\n",
              entities.node_size(), alive_now, in_use, alive, entities.nodes_in_use());
  return alive_now == 50 && in_use == 50 && alive == 0 && entities.nodes_in_use() == 0 ? 0 : 1;
}
