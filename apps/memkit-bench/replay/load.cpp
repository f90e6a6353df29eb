// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/replay/load.cpp: synthetic traces, and recorded ones through the trace reader
// (include/memkit/trace.hpp): the one place that turns its events into the replay's.

#include "replay/load.hpp"

#include <algorithm>
#include <iostream>
#include <limits>
#include <stdexcept>

#include <memkit/trace.hpp>

#include "replay/synthetic.hpp"

namespace memkit::bench::replay {
namespace {

/// \returns `e` as the replay's event, or false for the kinds that touch no block (threads,
/// samples, sites, mappings).
bool adapt(const memkit::trace::event& e, event& out) {
  using memkit::trace::kind_role;
  out = event{};
  out.thread = e.thread;
  out.time = e.time_ns;
  out.site = e.site;
  switch (memkit::trace::role(e.kind)) {
  case kind_role::allocation:
    out.kind = event_kind::alloc;
    out.result = e.block;
    out.size = e.size;
    out.alignment = static_cast<std::uint32_t>(
        std::min<std::uint64_t>(e.alignment, std::numeric_limits<std::uint32_t>::max()));
    return true;
  case kind_role::reallocation:
    out.kind = event_kind::realloc;
    out.ptr = e.old_block;
    out.result = e.block;
    out.size = e.size;
    return true;
  case kind_role::release:
    out.kind = event_kind::free;
    out.ptr = e.block;
    return true;
  case kind_role::other:
    break;
  }
  return false;
}

} // namespace

event_list load_events(const std::string& trace,
                       std::map<std::uint32_t, std::uint64_t>* addresses) {
  if (const auto s = parse_synthetic(trace)) {
    return synthetic_trace(*s);
  }
  memkit::trace::reader r(trace);
  event_list events;
  memkit::trace::event e;
  event x;
  while (r.next(e)) {
    if (adapt(e, x)) {
      events.push_back(x);
    }
  }
  using status = memkit::trace::reader::status;
  if (r.state() == status::error) {
    throw std::runtime_error(trace + ": " + r.message());
  }
  for (std::uint32_t id = 0; addresses != nullptr && id < r.site_count(); ++id) {
    if (!r.site_frames(id).empty()) {
      (*addresses)[id] = r.site_frames(id).front();
    }
  }
  if (r.state() == status::truncated) {
    // A recorder killed mid-write leaves its complete frames readable (docs/TRACE.md).
    std::cerr << "memkit-bench: warning: " << trace << ": " << r.message() << "; replaying the "
              << events.size() << " events before it\n";
  }
  if (events.empty()) {
    throw std::runtime_error(trace + ": no allocation events to replay");
  }
  // Frames of different threads interleave in the order they were written: one global order is
  // the time order, each thread's own kept (docs/TRACE.md, "Timestamps").
  std::stable_sort(events.begin(), events.end(),
                   [](const event& a, const event& b) { return a.time < b.time; });
  return events;
}

} // namespace memkit::bench::replay
