// SPDX-License-Identifier: BSL-1.0
// Compiles only with the switch values its CMakeLists expects for this target.
#include <cstdio>
#include <memkit/pool.hpp>

static_assert(MEMKIT_DEBUG == EXPECTED_DEBUG, "MEMKIT_DEBUG did not reach this target");
static_assert(MEMKIT_STATISTICS == EXPECTED_STATISTICS, "MEMKIT_STATISTICS did not reach it");

int main() {
  memkit::pool<> pool(32);
  pool.deallocate(pool.allocate(32, 8), 32, 8);
  const bool counted = pool.stats().allocations == (EXPECTED_STATISTICS ? 1u : 0u);
  std::printf("memkit consumer: MEMKIT_DEBUG %d, MEMKIT_STATISTICS %d%s\n", MEMKIT_DEBUG,
              MEMKIT_STATISTICS, counted ? "" : ", but the counters disagree");
  return counted ? 0 : 1;
}
