// SPDX-License-Identifier: BSL-1.0
// bench/debug_resource_bench.cpp: the cost of memkit::debug_resource over the strategy it wraps
// (BM_Debug<Variant>_<Pattern> against BM_<Variant>_<Pattern>).

#include <memkit/arena.hpp>
#include <memkit/debug_resource.hpp>
#include <memkit/multipool.hpp>
#include <memkit/pool.hpp>
#include <memkit/stack.hpp>

#include "patterns.hpp"

namespace memkit::bench {
namespace {

// Each wraps the strategy set up as in its own benchmark, with the default debug options (guards,
// fill patterns, abort on a mistake), so the difference is what a user pays for switching it on.
// A pool's blocks must hold the debug header and guards as well as the payload.
struct debug_pool_policy : resource_policy<debug_resource<pool<>>> {
  debug_pool_policy()
      : resource_policy(debug_options{}, debug_block_size(block_size, block_alignment),
                        block_alignment) {}
};

struct debug_stack_policy : resource_policy<debug_resource<stack<>>> {
  debug_stack_policy()
      : resource_policy(debug_options{},
                        live_blocks *
                            (debug_block_size(block_size, block_alignment) + 2 * sizeof(void*))) {}
};

struct debug_multipool_policy : resource_policy<debug_resource<multipool<>>> {
  debug_multipool_policy() : resource_policy(debug_options{}) {}
};

struct debug_arena_policy : resource_policy<debug_resource<arena<>>> {
  debug_arena_policy() : resource_policy(debug_options{}) {}
};

const bool registered = register_alloc_free<debug_pool_policy>("DebugPool") &&
                        register_alloc_free<debug_multipool_policy>("DebugMultipool") &&
                        register_alloc_free<debug_stack_policy>("DebugStack", true) &&
                        register_alloc<debug_arena_policy>("DebugArena");

} // namespace
} // namespace memkit::bench
