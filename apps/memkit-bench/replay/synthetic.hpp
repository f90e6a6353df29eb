// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/replay/synthetic.hpp: a generated trace whose right answers are known, for
// the tests and for measuring the replay at scale without a recording (docs/TRACE.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "replay/events.hpp"

namespace memkit::bench::replay {

/// The sites of the synthetic trace, each with the pattern that makes its advice known. Per
/// thread t, the site id is the base plus t where the pattern is per thread.
enum synthetic_site : std::uint32_t {
  lifo_site = 100,       ///< per thread: a random walk of pushes and pops, 16..256 bytes
  bulk_site = 200,       ///< per thread: 64 blocks of 32..128 bytes, then all freed, shuffled
  long_lived_site = 300, ///< thread 0: eight blocks of 1 MiB, freed at the very end
  handoff_site = 400,    ///< 64-byte messages, each freed by the next thread; sent twice as
                         ///< often as freed, a queue that grows until the end drains it
  churn_site = 500,      ///< per thread: 8..4096 bytes, freed in random order, ~256 live
};

struct synthetic_options {
  std::uint64_t events = 100'000; ///< at least this many, then every live block is freed
  std::uint32_t threads = 2;
  std::uint64_t seed = 1;
};

/// \effects gives `sink` the trace's events in order: threads interleaved in random runs,
/// timestamps increasing, addresses reused as a malloc would (the most recently freed first).
/// Deterministic for given options; its memory is the blocks live, not the events made.
void generate_synthetic(const synthetic_options& o, const event_sink& sink);

/// \returns generate_synthetic's events, all of them.
event_list synthetic_trace(const synthetic_options& o);

/// \returns the options spelled "synthetic:EVENTS[:THREADS[:SEED]]", or nothing if `name` does
/// not start with "synthetic:". \throws std::invalid_argument if the numbers do not parse.
std::optional<synthetic_options> parse_synthetic(const std::string& name);

} // namespace memkit::bench::replay
