// SPDX-License-Identifier: BSL-1.0
// src/trace.hpp: the entry points' side of the trace recorder (MEMKIT_OPTIONS=trace:PATH,
// docs/TRACE.md#recording). Recording costs the fast paths nothing: trace mode keeps every call off
// them (me.heap stays no_heap, fast_arena stays no_arena, as in any mode but mode_fast), so the
// entry point's kind and return address are handed only to the slow paths, which record.
#pragma once

#include <cstddef>

#include "heap.hpp"
#include "memkit/trace.hpp"

#pragma GCC visibility push(hidden)

namespace memkit::replacement {

using trace_kind = memkit::trace::event_kind;
/// No kind: a call made inside another entry point (realloc's allocation and free), which that
/// entry point records.
inline constexpr trace_kind untraced = trace_kind{};

/// The caller of the entry point this is written (or always inlined) in: the call site a trace
/// records.
#define MEMKIT_CALLER() __builtin_return_address(0)

/// allocate_slow, then, in trace mode, records the call of kind `k` from `caller` (`alignment`
/// is the one used).
void* allocate_slow_at(std::size_t bytes, std::size_t alignment, trace_kind k,
                       const void* caller) noexcept;
/// In trace mode records the release of kind `k` (`size` and `alignment` as the call passed
/// them, 0 if it takes none), then frees `p` as free_slow, or as free_sized_slow for the sized
/// kinds.
void release_slow_at(void* p, std::size_t size, std::size_t alignment, trace_kind k,
                     const void* caller) noexcept;
/// \returns realloc(p, bytes) (or reallocarray's) by `impl`, recorded as one event of kind `k`.
void* record_realloc(void* (*impl)(void*, std::size_t) noexcept, void* p, std::size_t bytes,
                     trace_kind k, const void* caller) noexcept;

// The wrappers below are always inlined into the entry point, where __builtin_return_address(0)
// is the entry point's caller. They read it on the slow branch only: passed in as an argument, it
// was loaded before the fast path's first test (one instruction more per call, callgrind,
// bench/instructions.sh).

/// allocate() for the entry point of kind `k` it is inlined into.
MEMKIT_ALWAYS_INLINE void* allocate_at(std::size_t bytes, std::size_t alignment,
                                       trace_kind k) noexcept {
  if (void* p = allocate_fast(bytes, alignment); MEMKIT_LIKELY(p != nullptr)) {
    return p;
  }
  return allocate_slow_at(bytes, alignment, k, MEMKIT_CALLER());
}

/// free() (free_sized() for the sized kinds) for the entry point of kind `k` it is inlined into.
MEMKIT_ALWAYS_INLINE void free_at(void* p, trace_kind k, std::size_t size = 0,
                                  std::size_t alignment = 0) noexcept {
  if (!free_fast(p)) {
    release_slow_at(p, size, alignment, k, MEMKIT_CALLER());
  }
}

} // namespace memkit::replacement

#pragma GCC visibility pop
