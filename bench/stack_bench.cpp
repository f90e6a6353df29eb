// SPDX-License-Identifier: BSL-1.0
// bench/stack_bench.cpp: memkit::stack against the peers in peers_bench.cpp (LIFO patterns only).

#include <memkit/stack.hpp>

#include "patterns.hpp"

namespace memkit::bench {
namespace {

// Room for the live blocks and the two-pointer header stack.hpp puts before each (block_size is a
// multiple of the alignment, so there is no padding). The region comes from the heap in the untimed
// round and reset() keeps it.
struct stack_policy : resource_policy<stack<>> {
  stack_policy() : resource_policy(live_blocks * (block_size + 2 * sizeof(void*))) {}
};

const bool registered =
    register_alloc_free<stack_policy>("Stack", true) && register_alloc<stack_policy>("Stack");

} // namespace
} // namespace memkit::bench
