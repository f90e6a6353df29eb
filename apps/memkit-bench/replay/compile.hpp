// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/replay/compile.hpp: the causal compiler (decoded events -> one operation
// stream per recorded thread) and the verifier that proves its output safe to replay
// (docs/TRACE.md, "Replay").
//
// Causality: a free or realloc never runs before the allocation it releases. Within a thread,
// program order gives that; where a block changes thread, the releasing thread's stream gets an
// explicit wait for the allocating thread to have done that many operations. Blocks live in
// replay slots handed out by free-index stacks, so the replay holds as many slots as the trace's
// peak live count; a slot freed on one thread and reused on another is a hand-off too (the wait
// keeps the reuse after the free).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "replay/events.hpp"

namespace memkit::bench::replay {

enum class op_kind : std::uint8_t {
  alloc,   ///< slots[slot] = allocate(arg bytes, 1 << align_log2), stamped
  free,    ///< release slots[slot]
  realloc, ///< slots[slot] = realloc(slots[slot], arg bytes), stamp checked and kept
  wait,    ///< wait until stream `slot` has done `arg` operations
};

/// One operation of a stream: 24 bytes, so a replay of n events holds about 24 n bytes of them.
struct op {
  std::uint64_t arg = 0;  ///< alloc/realloc: bytes; wait: operations of the awaited stream
  std::uint32_t slot = 0; ///< alloc/free/realloc: the slot; wait: the awaited stream
  std::uint32_t site = 0; ///< alloc/realloc: the site's dense index (program::sites)
  op_kind kind = op_kind::alloc;
  std::uint8_t align_log2 = 0; ///< alloc: log2 of the alignment, 0 for malloc's default

  bool operator==(const op&) const = default;
};

/// The operations of one recorded thread, in its order.
struct stream {
  std::uint32_t thread = 0; ///< the recording thread's id
  std::vector<op> ops;
};

/// What the compiler found in the trace besides the operations: each anomaly is counted and
/// dropped (or turned into an allocation), never replayed as undefined behaviour.
struct compile_stats {
  std::uint64_t events = 0;
  std::uint64_t unknown_frees = 0;    ///< free of a block never allocated in the trace (from
                                      ///< before recording started): dropped
  std::uint64_t unknown_reallocs = 0; ///< realloc of such a block: replayed as an allocation
  std::uint64_t double_frees = 0;     ///< free of a block already freed: dropped
  std::uint64_t reused_live = 0;      ///< an allocation returned a block still live in the
                                      ///< trace (its free was not recorded): the old one freed
  std::uint64_t failed_reallocs = 0;  ///< realloc that returned null: the block lives on
  std::uint64_t cross_thread = 0;     ///< frees and reallocs of a block last touched elsewhere
  std::uint64_t waits = 0;            ///< wait operations emitted
  std::uint64_t leaked = 0;           ///< blocks live at the end of the trace
  std::uint64_t peak_live = 0;        ///< most blocks live at once
  std::uint64_t peak_live_bytes = 0;  ///< most bytes live at once (requested sizes)
  std::uint64_t max_size = 0;         ///< the largest request

  bool operator==(const compile_stats&) const = default;
};

/// compile_stats' field list: its JSON record (replay/records.hpp).
#define MEMKIT_BENCH_COMPILE_STATS_FIELDS(X)                                                       \
  X(events)                                                                                        \
  X(unknown_frees)                                                                                 \
  X(unknown_reallocs)                                                                              \
  X(double_frees)                                                                                  \
  X(reused_live)                                                                                   \
  X(failed_reallocs)                                                                               \
  X(cross_thread)                                                                                  \
  X(waits)                                                                                         \
  X(leaked)                                                                                        \
  X(peak_live)                                                                                     \
  X(peak_live_bytes)                                                                               \
  X(max_size)

/// A compiled trace: what the replayer runs.
struct program {
  std::vector<stream> streams;
  std::uint32_t slots = 0;          ///< slots needed: the trace's peak live count
  std::vector<std::uint32_t> sites; ///< dense site index -> the trace's site id
  compile_stats stats;
};

/// \returns `events` compiled (see the file comment). Events are taken in the order given,
/// which must be the recorded order (events.hpp). Never fails: anomalies are counted in stats.
program compile(const event_list& events);

/// What the verifier proved, or the first operation where the proof failed.
struct verify_result {
  bool ok = false;
  std::string error;         ///< "" when ok: which stream, which operation, what is wrong
  std::uint64_t checked = 0; ///< operations checked
};

/// \returns whether `p` is safe to replay on real threads under every schedule: every free and
/// realloc meets a live slot and every alloc a free one; every two consecutive operations on one
/// slot are ordered by program order or by a wait of the later one's stream on the earlier one's
/// (so all schedules see the same order on every slot); and the streams finish (no wait waits
/// for more than its stream has, no cycle of waits). It runs the streams round-robin, each until
/// it blocks; progress conditions only ever become true, so if this schedule finishes, every
/// fair one does.
verify_result verify(const program& p);

} // namespace memkit::bench::replay
