// SPDX-License-Identifier: BSL-1.0
// link_fail/main.cpp: calls pool_user.cpp's fill() with a pool of this translation unit's layout.
#include <cstddef>
#include <memkit/pool.hpp>

std::size_t fill(memkit::pool<>& pool, std::size_t n);

int main() {
  memkit::pool<> pool(32);
  return fill(pool, 3) == 3 ? 0 : 1;
}
