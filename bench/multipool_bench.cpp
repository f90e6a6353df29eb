// SPDX-License-Identifier: BSL-1.0
// bench/multipool_bench.cpp: memkit::multipool against the peers in peers_bench.cpp.

#include <memkit/multipool.hpp>

#include "patterns.hpp"

namespace memkit::bench {
namespace {

// Default options, as a general-purpose allocator is used; the size class is computed per call,
// as it is for malloc and the std::pmr pools.
using multipool_policy = resource_policy<multipool<>>;

const bool registered = register_alloc_free<multipool_policy>("Multipool");

} // namespace
} // namespace memkit::bench
