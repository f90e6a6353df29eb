// SPDX-License-Identifier: BSL-1.0
// compile_fail/pmr_missing_extended_constructors.cpp: the second uses-allocator pitfall of std::pmr
// (docs/background.md#pmr-extended-constructors). A node with only the allocator-extended default
// constructor cannot be moved into the new buffer when a std::pmr::vector grows. The twin has all
// three allocator-extended constructors: default, copy and move.
#include <cstddef>
#include <memory_resource>
#include <string>
#include <vector>

struct node {
  using allocator_type = std::pmr::polymorphic_allocator<std::byte>;
  explicit node(const allocator_type& a = {}) : label(a) {}
#ifndef MEMKIT_COMPILE_FAIL
  node(const node& other, const allocator_type& a) : label(other.label, a) {}
  node(node&& other, const allocator_type& a) noexcept : label(std::move(other.label), a) {}
#endif
  std::pmr::string label;
};

void build(std::pmr::memory_resource& resource) {
  std::pmr::vector<node> nodes(&resource);
  for (int i = 0; i < 100; ++i) {
    nodes.emplace_back();
  }
}
