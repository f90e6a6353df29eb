// SPDX-License-Identifier: BSL-1.0
// bench/pool_bench.cpp: memkit::pool against the peers in peers_bench.cpp.

#include <memkit/pool.hpp>

#include "patterns.hpp"

namespace memkit::bench {
namespace {

// Default growth (first chunk of 32 blocks, doubling, as boost::pool); the untimed first round of
// each pattern obtains the chunks, so the timed loop is the free-list steady state.
struct pool_policy : resource_policy<pool<>> {
  pool_policy() : resource_policy(block_size, block_alignment) {}
};

const bool registered = register_alloc_free<pool_policy>("Pool");

} // namespace
} // namespace memkit::bench
