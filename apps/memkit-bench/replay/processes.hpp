// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/replay/processes.hpp: replays in child processes, one allocator per process,
// and their figures as the app's result rows (core/summary.hpp), so the tables, JSON and
// intervals are batch mode's.
#pragma once

#include <array>
#include <map>
#include <string>
#include <vector>

#include "core/machine.hpp"
#include "core/summary.hpp"
#include "replay/command.hpp"
#include "replay/compile.hpp"
#include "replay/replayer.hpp"

namespace memkit::bench::replay {

/// One variant of a replay: the allocator its process runs under and the policy routing sites.
struct variant_spec {
  std::string name;      ///< the row's variant: "std", "null", "mimalloc", "std+4=arena", ...
  std::string allocator; ///< "std", "null" or a replacement (replacement/replacement.hpp)
  std::string library;   ///< what is preloaded ("" for std and null)
  std::string routes;    ///< the policy (routes.hpp), "" for none
};

/// \returns std (and null if `with_null`) and every replacement `wanted` names (or every
/// available one if it is empty). Sets `ok` false, after saying why on stderr, if a named one is
/// missing or unknown.
std::vector<variant_spec> general_purpose_variants(const std::vector<std::string>& wanted,
                                                   bool with_null, bool& ok);

/// A trace compiled and verified once, in the parent, straight into a file for the children
/// (program_file.hpp); the file goes when this does.
class compiled_trace {
public:
  /// \effects reads `trace` (read_events, load.hpp), giving each event to `also` too if it is
  /// set, and `addresses` the sites' addresses. \throws std::runtime_error if the trace cannot
  /// be read (load.hpp), or the compiled program fails verification (naming where) or cannot be
  /// saved.
  explicit compiled_trace(const std::string& trace, const event_sink& also = {},
                          std::map<std::uint32_t, std::uint64_t>* addresses = nullptr);
  ~compiled_trace();
  compiled_trace(const compiled_trace&) = delete;
  compiled_trace& operator=(const compiled_trace&) = delete;

  const std::string& path() const noexcept { return path_; }
  const compile_stats& stats() const noexcept { return stats_; }
  /// \returns the program's live bytes over its events (program::live_over_time).
  const std::vector<std::array<std::uint64_t, 2>>& live_over_time() const noexcept {
    return live_over_time_;
  }
  /// \returns one line: events, threads, slots, waits, operations verified and the anomalies.
  const std::string& summary() const noexcept { return summary_; }

private:
  std::string path_;
  compile_stats stats_;
  std::vector<std::array<std::uint64_t, 2>> live_over_time_;
  std::string summary_;
};

/// Runs `o.processes` processes of every variant on `trace`, interleaved (A B C A B C ...), each
/// a fresh layout draw, and \returns each variant's figures, one per process that succeeded.
/// Sets `ok` false if a process failed.
std::map<std::string, std::vector<replay_result>>
replay_in_processes(const common_options& o, const compiled_trace& trace,
                    const std::vector<variant_spec>& variants, bool& ok);

/// Runs `o.processes` processes under `allocator`'s library, each replaying every policy of
/// `policies` ("" for none) in turn: one round to warm the allocator up, then `rounds` rounds,
/// each starting one policy further on, timing whole replays only (no --sample-every). Two policies
/// measured in one process share its layout draw and its moment on the machine, which make separate
/// processes' times differ by up to 1.5x here, so the ratio of their times within a process is the
/// paired measure of their difference (core/interval.hpp, paired_interval). \returns per policy,
/// per process that succeeded, the median of its replay times in seconds. Sets `ok` false if a
/// process failed. \requires two policies or more.
std::vector<std::vector<double>>
paired_replays(const common_options& o, const compiled_trace& trace, const variant_spec& allocator,
               const std::vector<std::string>& policies, unsigned rounds, bool& ok);

/// \returns the runs of one variant as a result row of workload `workload`: an iteration is one
/// whole replay, so p50 is the median over processes; the hash is the checksum of the stamps,
/// hash_ok only if every process agreed and found no wrong contents; the note carries the
/// sampled per-operation p50/p99 and the fragmentation (peak RSS over the trace's peak live
/// bytes). \requires `runs` not empty.
result to_row(const std::string& workload, const std::string& variant,
              const std::vector<replay_result>& runs, const compile_stats& stats);

/// \effects compares the rows' checksums (compare_rows; on a mismatch says so and sets `ok`
/// false). \returns the run's facts with `options` and `c`'s among them.
run_info check_rows(std::vector<result>& rows, const common_options& c, nlohmann::json options,
                    bool& ok);

/// \effects writes `doc` to `c`'s --json file and draws batch mode's report of it into --report's
/// directory, where they are given (on a failure says why and sets `ok` false).
void write_outputs(const nlohmann::json& doc, const common_options& c, bool& ok);

/// \returns the median over `runs` of `field`.
double median_of(const std::vector<replay_result>& runs, double replay_result::*field);

} // namespace memkit::bench::replay
