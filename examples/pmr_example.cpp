// SPDX-License-Identifier: BSL-1.0
// A request-scoped JSON-like tree (docs/background.md#json-tree) on std::pmr, served by a memkit
// arena through the pmr bridge. The node is allocator-aware the complete way: allocator-extended
// default, copy and move constructors, so std::pmr::vectors of nodes can grow and keep every
// string in the arena.
#include <cstddef>
#include <cstdio>
#include <memkit/arena.hpp>
#include <memkit/audit.hpp>
#include <memkit/pmr.hpp>
#include <memory_resource>
#include <string>
#include <vector>

namespace {

struct node {
  using allocator_type = std::pmr::polymorphic_allocator<std::byte>;

  explicit node(const allocator_type& a = {}) : label(a), values(a), children(a) {}
  node(const node& other, const allocator_type& a)
      : label(other.label, a), values(other.values, a), children(other.children, a) {}
  node(node&& other, const allocator_type& a) noexcept
      : label(std::move(other.label), a), values(std::move(other.values), a),
        children(std::move(other.children), a) {}
  node(const node&) = default;
  node(node&&) noexcept = default;

  std::pmr::string label;
  std::pmr::vector<int> values;
  std::pmr::vector<node> children;
};

// Fails to compile, naming the missing constructor, if one of the three is dropped.
static_assert(memkit::audit_allocator_aware<node>());

void build(node& n, int depth, unsigned& seed) {
  seed = seed * 1103515245u + 12345u;
  n.label.assign(12 + seed % 17, static_cast<char>('a' + seed % 26));
  n.values.assign(seed % 9, static_cast<int>(seed % 1000));
  for (unsigned i = 0; depth < 5 && i < 4 - static_cast<unsigned>(depth) % 4; ++i) {
    // No resource argument: the vector passes its own (docs/background.md#pmr-emplace-resource).
    build(n.children.emplace_back(), depth + 1, seed);
  }
}

bool all_in(const node& n, const std::pmr::memory_resource* mr) {
  bool ok = n.label.get_allocator().resource() == mr && n.values.get_allocator().resource() == mr;
  for (const node& child : n.children) {
    ok = ok && all_in(child, mr);
  }
  return ok;
}

} // namespace

int main() {
  // Anything that silently fell back to the default resource would now throw std::bad_alloc.
  std::pmr::set_default_resource(std::pmr::null_memory_resource());
  memkit::pmr::resource_adapter<memkit::arena<>> request_arena;
  unsigned seed = 42;
  node root(&request_arena);
  build(root, 0, seed);
  const bool ok = all_in(root, &request_arena);
  std::printf("tree of %zu top-level children built in the arena: %zu bytes used, every string "
              "and vector in the arena: %s\n",
              root.children.size(), request_arena.resource().used(), ok ? "yes" : "no");
  return ok ? 0 : 1;
}
