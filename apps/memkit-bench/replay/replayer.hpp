// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/replay/replayer.hpp: runs a compiled trace on real threads, one per stream,
// against the process's malloc with some sites routed to memkit strategies, or against the null
// allocator that measures the harness itself (docs/TRACE.md, "Replay").
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "replay/compile.hpp"
#include "replay/routes.hpp"

namespace memkit::bench::replay {

/// What the replay writes into a block when it allocates it, so that resident memory is what the
/// program's would be.
enum class touch_mode : std::uint8_t {
  none, ///< only the 8-byte stamp at the block's start
  page, ///< one byte every 4096
  line, ///< one byte every 64 (every cache line)
};

std::string to_string(touch_mode t);
std::optional<touch_mode> parse_touch(const std::string& name);

struct replay_options {
  touch_mode touch = touch_mode::page;
  std::uint32_t sample_every = 64; ///< time one operation in this many on each thread
};

/// One replay's figures.
struct replay_result {
  double seconds = 0;        ///< from the start signal until every thread finished
  std::uint64_t ops = 0;     ///< allocations, frees and reallocs replayed (waits not counted)
  std::uint64_t samples = 0; ///< operations timed
  double op_p50_ns = 0;      ///< of the timed operations, clock overhead included
  double op_p99_ns = 0;
  std::size_t peak_rss_kib = 0; ///< the process's peak above its resident size at the start
  /// Blocks whose stamp was wrong when freed or after a realloc: always 0 unless an allocator (or
  /// the replay) corrupts memory. Not checked under the null allocator, whose blocks overlap.
  std::uint64_t content_errors = 0;
  /// The sum of the stamps checked (under the null allocator: of those it would have checked):
  /// the same under every allocator for one trace.
  std::uint64_t checksum = 0;
  /// Most stream threads running at once: at most the program's threads live at once where the
  /// trace recorded its threads' starts and exits (compile.hpp).
  std::uint64_t peak_threads = 0;
  /// (microseconds from the start signal, KiB resident above the start), sampled on a thread of
  /// its own every millisecond and more coarsely as the run grows, at most series_limit points
  /// and the last at the end (series.hpp): the allocator's memory over the replay.
  std::vector<std::array<std::uint64_t, 2>> rss_over_time;

  bool operator==(const replay_result&) const = default;
};

/// replay_result's field list: its JSON record (replay/records.hpp).
#define MEMKIT_BENCH_REPLAY_RESULT_FIELDS(X)                                                       \
  X(seconds)                                                                                       \
  X(ops)                                                                                           \
  X(samples)                                                                                       \
  X(op_p50_ns)                                                                                     \
  X(op_p99_ns)                                                                                     \
  X(peak_rss_kib)                                                                                  \
  X(content_errors)                                                                                \
  X(checksum)                                                                                      \
  X(peak_threads)                                                                                  \
  X(rss_over_time)

/// \returns `p` replayed with `routes` (every other site on malloc). \requires verify(p).ok.
replay_result replay_routed(const program& p, router& routes, const replay_options& o);

/// \returns `p` replayed against the null allocator: a bump pointer per thread through a ring
/// (frees ignored), so the time is the harness's own: streams, waits, stamps, touches and timing.
replay_result replay_null(const program& p, const replay_options& o);

} // namespace memkit::bench::replay
