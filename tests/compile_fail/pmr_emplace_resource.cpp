// SPDX-License-Identifier: BSL-1.0
// compile_fail/pmr_emplace_resource.cpp: the first uses-allocator pitfall of std::pmr
// (docs/background.md#pmr-emplace-resource). A std::pmr::vector already passes its allocator to
// each new element, so emplace_back(&resource) asks for a constructor (memory_resource*, allocator)
// the node does not have. The twin calls emplace_back() and lets the vector pass its allocator.
#include <cstddef>
#include <memory_resource>
#include <string>
#include <vector>

struct node {
  using allocator_type = std::pmr::polymorphic_allocator<std::byte>;
  explicit node(const allocator_type& a = {}) : label(a) {}
  node(const node& other, const allocator_type& a) : label(other.label, a) {}
  node(node&& other, const allocator_type& a) noexcept : label(std::move(other.label), a) {}
  std::pmr::string label;
};

void build(std::pmr::memory_resource& resource) {
  std::pmr::vector<node> nodes(&resource);
#ifdef MEMKIT_COMPILE_FAIL
  nodes.emplace_back(&resource);
#else
  nodes.emplace_back();
#endif
}
