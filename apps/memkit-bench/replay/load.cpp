// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/replay/load.cpp: synthetic traces, and recorded ones through the trace reader.

#include "replay/load.hpp"

#include <stdexcept>

#include "replay/synthetic.hpp"

namespace memkit::bench::replay {

event_list load_events(const std::string& trace) {
  if (const auto s = parse_synthetic(trace)) {
    return synthetic_trace(*s);
  }
  throw std::runtime_error(trace + ": this build reads synthetic traces only "
                                   "(synthetic:EVENTS[:THREADS[:SEED]])");
}

} // namespace memkit::bench::replay
