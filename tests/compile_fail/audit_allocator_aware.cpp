// SPDX-License-Identifier: BSL-1.0
// compile_fail/audit_allocator_aware.cpp: memkit::audit_allocator_aware names the constructors an
// allocator-aware node lacks (here only the allocator-extended default constructor is there:
// docs/background.md#pmr-extended-constructors) before any container is instantiated. The twin has
// all three and passes.
#include <cstddef>
#include <memory_resource>
#include <string>

#include <memkit/audit.hpp>

struct node {
  using allocator_type = std::pmr::polymorphic_allocator<std::byte>;
  explicit node(const allocator_type& a = {}) : label(a) {}
#ifndef MEMKIT_COMPILE_FAIL
  node(const node& other, const allocator_type& a) : label(other.label, a) {}
  node(node&& other, const allocator_type& a) noexcept : label(std::move(other.label), a) {}
#endif
  std::pmr::string label;
};

static_assert(memkit::audit_allocator_aware<node>());
