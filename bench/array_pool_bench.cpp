// SPDX-License-Identifier: BSL-1.0
// bench/array_pool_bench.cpp: memkit::array_pool against the peers in peers_bench.cpp.

#include <memkit/array_pool.hpp>

#include "patterns.hpp"

namespace memkit::bench {
namespace {

// Capacity for exactly the live blocks; its two arrays come from the heap in the untimed round.
struct array_pool_policy : resource_policy<array_pool<>> {
  array_pool_policy() : resource_policy(block_size, live_blocks, block_alignment) {}
};

const bool registered = register_alloc_free<array_pool_policy>("ArrayPool");

} // namespace
} // namespace memkit::bench
