// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/replay/load.hpp: a trace named on the command line as decoded events: a
// synthetic one ("synthetic:EVENTS[:THREADS[:SEED]]", replay/synthetic.hpp) or a recorded file,
// read by the trace reader and adapted here, the one place that knows the file's event type.
#pragma once

#include <string>

#include "replay/events.hpp"

namespace memkit::bench::replay {

/// \returns the events of `trace` in the recorded order. \throws std::runtime_error with a
/// message naming the trace (and, for a bad file, the offset) if it cannot be read.
event_list load_events(const std::string& trace);

} // namespace memkit::bench::replay
