// SPDX-License-Identifier: BSL-1.0
// link_fail/pool_user.cpp: one translation unit of a two-part program; it defines a function that
// takes a memkit::pool, main.cpp calls it. Built with other layout-changing switches than main.cpp,
// its pool is another type (another ABI namespace), so the call must not link.
#include <cstddef>
#include <memkit/pool.hpp>

std::size_t fill(memkit::pool<>& pool, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    (void)pool.allocate(32, 8);
  }
  return pool.in_use();
}
