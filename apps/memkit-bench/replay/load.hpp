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

/// \effects gives `sink` the events of `trace` in the recorded order: a file's sorted by time
/// (ties in file order), each thread's own order kept, without holding them: they are read once
/// into a temporary file of fixed-size records, then merged thread by thread from it, so memory
/// is bounded by the threads under way at once. A file cut inside a frame (a recorder killed
/// mid-write) gives the events of its complete frames, with a warning on stderr naming the
/// offset. \returns the allocation, free and realloc events given. \throws std::runtime_error,
/// before giving any event, naming the trace and the reader's message (with the byte offset) for
/// a file that cannot be opened, is not a trace, is another format version or is corrupted, or
/// has no allocation events. If `addresses` is given, it receives each site's innermost return
/// address (a file's sites only), for symbolizing with the trace's mappings.
std::uint64_t read_events(const std::string& trace, const event_sink& sink,
                          std::map<std::uint32_t, std::uint64_t>* addresses = nullptr);

/// \returns read_events's events, all of them (for tests and small traces).
event_list load_events(const std::string& trace,
                       std::map<std::uint32_t, std::uint64_t>* addresses = nullptr);

} // namespace memkit::bench::replay
