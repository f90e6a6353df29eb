// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/replay/events.hpp: the decoded events the replay works on, whatever the trace
// file's byte format: one allocation call each, as the recording thread saw it. The trace reader's
// events are turned into these in one place (replay/load.cpp), so the compiler, the replayer and
// the advisor do not depend on the file format.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace memkit::bench::replay {

enum class event_kind : std::uint8_t {
  alloc,        ///< malloc, calloc, aligned forms, operator new: `result` of `size` bytes
  free,         ///< free, operator delete: releases `ptr` (0: free(NULL), ignored)
  realloc,      ///< realloc(`ptr`, `size`) returned `result` (ptr 0: an allocation; size 0 and
                ///< result 0: a free; result 0 otherwise: failed, the block lives on)
  thread_start, ///< the thread began (recorded with its first call, before it)
  thread_exit,  ///< the thread ended (after its last call)
};

/// One allocation call. Events are given in the recorded order: by `time`, each thread's own in
/// the order it made them.
struct event {
  event_kind kind = event_kind::alloc;
  std::uint32_t thread = 0;    ///< the recording thread, any id unique within the trace
  std::uint64_t time = 0;      ///< when it happened, in any unit that increases
  std::uint64_t ptr = 0;       ///< free and realloc: the block released
  std::uint64_t result = 0;    ///< alloc and realloc: the block returned
  std::uint64_t size = 0;      ///< alloc and realloc: the bytes asked for
  std::uint32_t alignment = 0; ///< alloc: the alignment asked for, 0 for malloc's default
  std::uint32_t site = 0;      ///< the call site, any id unique within the trace

  bool operator==(const event&) const = default;
};

using event_list = std::vector<event>;

/// Takes events one at a time, in the recorded order: how a trace too long to hold is read.
using event_sink = std::function<void(const event&)>;

/// Takes events one at a time, in the recorded order: how a trace too long to hold is read.
using event_sink = std::function<void(const event&)>;

} // namespace memkit::bench::replay
