// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/policies/lists.hpp: the groups of policies a workload registers at once.
#pragma once

#include "core/policy.hpp"
#include "core/registry.hpp"
#include "policies/memkit.hpp"
#include "policies/peers.hpp"
#include "policies/pmr.hpp"

namespace memkit::bench {

/// The variants that fit a workload allocating objects of many sizes (strings, vectors, trees).
using general_policies =
    policy_list<std_policy, arena_policy, thread_arena_policy, multipool_policy,
                pmr_monotonic_policy, pmr_monotonic_sync_pool_policy, pmr_unsync_pool_policy,
                pmr_sync_pool_policy, boost_pool_policy>;

/// The variants that fit node containers (list, forward_list, map): one node size, which the
/// fixed-size peers are told through the hint. Not boost::pool_allocator: it frees into a sorted
/// free list (ordered_free), linear per free, so a list of 100,000 nodes took 12 s here to
/// fast_pool_allocator's 2 ms; Boost documents fast_pool_allocator for node containers.
using node_policies =
    policy_list<std_policy, node_pool_policy, pool_policy, array_pool_policy, multipool_policy,
                arena_policy, pmr_monotonic_policy, pmr_monotonic_sync_pool_policy,
                pmr_unsync_pool_policy, pmr_sync_pool_policy, boost_fast_pool_policy,
                foonathan_pool_policy>;

} // namespace memkit::bench
