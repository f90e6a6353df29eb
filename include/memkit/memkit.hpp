// SPDX-License-Identifier: BSL-1.0
// memkit/memkit.hpp: every public memkit header, by layer (docs/concepts.md, "Layout"). The
// testing helpers (test_resource.hpp) are not included: tests include them themselves.
#pragma once

// Switches, errors and the interface.
#include "config.hpp"
#include "error.hpp"
#include "resource.hpp"
#include "traits.hpp"
#include "version.hpp"

// Upstreams: where chunks come from. huge_page.hpp maps memory itself, which memkit does on Linux
// only (detail/base/os.hpp); elsewhere the umbrella leaves it out.
#include "upstream.hpp"
#if defined(__linux__)
#include "huge_page.hpp"
#endif

// Strategies.
#include "aligned.hpp"
#include "arena.hpp"
#include "array_pool.hpp"
#include "concurrent_pool.hpp"
#include "fallback.hpp"
#include "fixed_pool.hpp"
#include "multipool.hpp"
#include "node_pool.hpp"
#include "pool.hpp"
#include "stack.hpp"

// Decorators: statistics and thread safety around any resource.
#include "spin_mutex.hpp"
#include "stats.hpp"
#include "synchronized.hpp"
#include "thread_cached.hpp"

// Adapters: standard allocators, std::pmr, containers, smart pointers.
#include "allocator.hpp"
#include "pmr.hpp"
#include "static_allocator.hpp"
#include "unique.hpp"
#include "xcontainers.hpp"

// Checking: the allocator audit and the debug layer.
#include "audit.hpp"
#include "debug_resource.hpp"
