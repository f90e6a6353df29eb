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
//
// Thread starts: a thread the trace saw start (a thread_start event) begins with waits for what
// preceded its start, so the replay starts it only then: for every thread that exited since the
// last start, its last operation, and for the thread that started last, its operations so far
// (which cover, through its own start waits, every exit before it). Threads that ran one after
// another in the program run one after another in the replay, and no more threads are live at
// once than the program had.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "replay/events.hpp"

namespace memkit::bench::replay {

enum class op_kind : std::uint8_t {
  alloc,   ///< slots[slot] = allocate(arg bytes, 1 << align_log2), stamped
  free,    ///< release slots[slot]
  realloc, ///< slots[slot] = realloc(slots[slot], arg bytes), stamp checked and kept
  wait,    ///< wait until stream `slot` has done `arg` operations
};

/// One operation of a stream, in 16 bytes: the argument in 56 bits (no allocation that succeeded
/// asked for 2^56 bytes: address spaces are 48 or 57 bits), the kind and alignment in the 8 above
/// it, then the slot (or awaited stream) and the site.
class op {
public:
  static constexpr std::uint64_t max_arg = (std::uint64_t{1} << 56) - 1;

  constexpr op() = default;
  /// \requires arg <= max_arg, align_log2 < 64.
  constexpr op(op_kind kind, std::uint64_t arg, std::uint32_t slot, std::uint32_t site = 0,
               std::uint8_t align_log2 = 0) noexcept
      : word_(arg | std::uint64_t{static_cast<std::uint8_t>(kind)} << 56 |
              std::uint64_t{align_log2} << 58),
        slot_(slot), site_(site) {}

  /// alloc/realloc: bytes; wait: operations of the awaited stream
  constexpr std::uint64_t arg() const noexcept { return word_ & max_arg; }
  constexpr op_kind kind() const noexcept { return static_cast<op_kind>((word_ >> 56) & 3); }
  /// alloc: log2 of the alignment, 0 for malloc's default
  constexpr std::uint32_t align_log2() const noexcept {
    return static_cast<std::uint32_t>(word_ >> 58);
  }
  /// alloc/free/realloc: the slot; wait: the awaited stream
  constexpr std::uint32_t slot() const noexcept { return slot_; }
  /// alloc/realloc: the site's dense index (program::sites)
  constexpr std::uint32_t site() const noexcept { return site_; }

  bool operator==(const op&) const = default;

private:
  std::uint64_t word_ = 0;
  std::uint32_t slot_ = 0;
  std::uint32_t site_ = 0;
};
static_assert(sizeof(op) == 16);

/// A run of one stream's operations, stored contiguously; a stream is a list of chunks.
struct chunk {
  std::uint64_t offset = 0; ///< of its first operation, in operations from the storage's start
  std::uint32_t count = 0;
  std::uint32_t next = 0; ///< the stream's next chunk, no_chunk after its last
};
inline constexpr std::uint32_t no_chunk = UINT32_MAX;
/// A stream's chunks grow from min_chunk_ops to max_chunk_ops operations (1 KiB to 64 KiB):
/// small for the many short streams of a thread-per-request program, large for long ones.
inline constexpr std::uint32_t min_chunk_ops = 64;
inline constexpr std::uint32_t max_chunk_ops = 4096;

/// One recorded thread's operations.
struct stream {
  std::uint32_t thread = 0; ///< the recording thread's id
  /// Its first operations that are waits for its thread's start (the trace's thread_start
  /// event): the replay starts its thread only once they are met. 0: it starts with the others.
  std::uint32_t start_waits = 0;
  std::uint64_t ops = 0; ///< operations, waits included
  std::uint32_t first_chunk = no_chunk;
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
  std::uint64_t start_waits = 0;      ///< waits for a thread's start (included in waits)
  std::uint64_t peak_threads = 0;     ///< most threads live at once (a thread lives from its
                                      ///< start, or first event, to its exit or the end)

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
  X(max_size)                                                                                      \
  X(start_waits)                                                                                   \
  X(peak_threads)

/// Where a program's operations live: in memory (a program compiled for a test), or in a file
/// (program_file.hpp) read a chunk at a time, so that neither the compiler nor the replay holds a
/// long trace's operations. Move-only; a file's descriptor is closed with it.
class op_storage {
public:
  op_storage() = default; ///< in memory
  /// A file open for reading and appending (descriptor `fd`, taken over), the operations from
  /// byte `base`, `ops` of them already there.
  op_storage(int fd, std::uint64_t base, std::uint64_t ops) noexcept
      : fd_(fd), base_(base), size_(ops) {}
  ~op_storage();
  op_storage(op_storage&& other) noexcept;
  op_storage& operator=(op_storage&& other) noexcept;
  op_storage(const op_storage&) = delete;
  op_storage& operator=(const op_storage&) = delete;

  /// \effects appends `n` operations. \returns where the first is. \throws std::runtime_error
  /// if a file cannot be written.
  std::uint64_t append(const op* ops, std::size_t n);
  /// \returns the `count` operations at `offset`: in memory, where they are; in a file, read
  /// into `scratch` (room for `count`). Aborts, saying why, if the file cannot be read (it is
  /// the harness's own temporary file: a short read means it was removed or the disk failed).
  const op* read(std::uint64_t offset, std::uint32_t count, op* scratch) const noexcept;
  bool in_memory() const noexcept { return fd_ < 0; }
  int fd() const noexcept { return fd_; }
  std::uint64_t base() const noexcept { return base_; }
  std::uint64_t size() const noexcept { return size_; } ///< operations stored

private:
  std::vector<op> memory_;
  int fd_ = -1;
  std::uint64_t base_ = 0;
  std::uint64_t size_ = 0;
};

/// A compiled trace: what the replayer runs.
struct program {
  std::vector<stream> streams;
  std::vector<chunk> chunks;
  op_storage storage;
  std::uint32_t slots = 0;            ///< slots needed: the trace's peak live count
  std::vector<std::uint32_t> sites;   ///< dense site index -> the trace's site id
  std::vector<std::uint64_t> largest; ///< dense site index -> its largest request
  compile_stats stats;
  /// (event index, bytes live before it), evenly spaced over the trace, at most series_limit of
  /// them (series.hpp): the program's memory over its run. Not in a program file (the replay
  /// does not need it).
  std::vector<std::array<std::uint64_t, 2>> live_over_time;
};

/// Reads one stream's operations in order, a chunk at a time (a file's into a buffer of its own,
/// mapped from the OS so that a replay's heap under test never holds it).
class stream_cursor {
public:
  stream_cursor(const program& p, std::uint32_t s) noexcept;
  ~stream_cursor();
  stream_cursor(const stream_cursor&) = delete;
  stream_cursor& operator=(const stream_cursor&) = delete;

  /// \returns the next chunk's operations and sets `n` to their count, or null after the last.
  const op* next_chunk(std::uint32_t& n) noexcept;
  /// \effects maps and writes its buffer now (a file's program only), so that reading the
  /// stream later adds nothing to the process's resident memory.
  void prepare() noexcept;

private:
  const program& p_;
  std::uint32_t chunk_;
  std::size_t scratch_bytes_;
  op* scratch_ = nullptr;
};

/// \returns stream `s`'s operations, all of them (for tests and small programs).
std::vector<op> ops_of(const program& p, std::uint32_t s);

/// \returns a program of the given streams (thread id, operations), in memory: for
/// hand-written programs.
program make_program(const std::vector<std::pair<std::uint32_t, std::vector<op>>>& streams,
                     std::uint32_t slots);

/// The causal compiler, fed one event at a time (see the file comment): its memory is bounded by
/// the trace's peak live blocks and threads, not its length; the operations go to the storage.
class causal_compiler {
public:
  explicit causal_compiler(op_storage storage = {});
  ~causal_compiler();
  causal_compiler(const causal_compiler&) = delete;
  causal_compiler& operator=(const causal_compiler&) = delete;

  /// \effects compiles `e`, the next event in the recorded order (events.hpp).
  void add(const event& e);
  /// \returns the program. Call once, after the last add.
  program finish();

private:
  class impl;
  std::unique_ptr<impl> impl_;
};

/// \returns `events` compiled in memory (see the file comment). Events are taken in the order
/// given, which must be the recorded order (events.hpp). Never fails: anomalies are counted in
/// stats.
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
