// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/replay/load.hpp: a trace named on the command line as decoded events: a
// synthetic one ("synthetic:EVENTS[:THREADS[:SEED]]", replay/synthetic.hpp) or a recorded file,
// read by the trace reader and adapted here, the one place that knows the file's event type.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "replay/events.hpp"

namespace memkit::bench::replay {

/// \returns the events of `trace` in the recorded order (a file's sorted by time, each thread's
/// own order kept). A file cut inside a frame (a recorder killed mid-write) gives the events of
/// its complete frames, with a warning on stderr naming the offset. \throws std::runtime_error
/// naming the trace and the reader's message (with the byte offset) for a file that cannot be
/// opened, is not a trace, is another format version or is corrupted, or has no allocation
/// events.
/// If `addresses` is given, it receives each site's innermost return address (a file's sites
/// only), for symbolizing with the trace's mappings.
event_list load_events(const std::string& trace,
                       std::map<std::uint32_t, std::uint64_t>* addresses = nullptr);

} // namespace memkit::bench::replay
