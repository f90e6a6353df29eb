// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/core/summary.hpp: a (workload, variant) pair's measurements summarised as one
// result row, and the checks across the rows of a workload.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "measure.hpp"
#include "registry.hpp"

/// The one list of a result row's fields: it drives the JSON record (batch mode's "results" and
/// serve mode's /run answer), reading that record back, and the CSV columns, so a field added here
/// appears in all three. Each is a member of `result`, named as in the JSON.
#define MEMKIT_BENCH_RESULT_FIELDS(X)                                                              \
  X(workload)                                                                                      \
  X(variant)                                                                                       \
  X(unit)                                                                                          \
  X(items_per_iteration)                                                                           \
  X(iterations)                                                                                    \
  X(cold_us)                                                                                       \
  X(min_us)                                                                                        \
  X(p50_us)                                                                                        \
  X(p99_us)                                                                                        \
  X(max_us)                                                                                        \
  X(mean_us)                                                                                       \
  X(throughput_per_s)                                                                              \
  X(speedup_vs_std)                                                                                \
  X(speedup_lo)                                                                                    \
  X(speedup_hi)                                                                                    \
  X(verdict_vs_std)                                                                                \
  X(processes)                                                                                     \
  X(process_p50_us)                                                                                \
  X(process_p99_us)                                                                                \
  X(process_spread)                                                                                \
  X(peak_rss_kib)                                                                                  \
  X(start_rss_kib)                                                                                 \
  X(process_peak_rss_kib)                                                                          \
  X(hash)                                                                                          \
  X(hash_ok)                                                                                       \
  X(percentiles_us)                                                                                \
  X(note)

namespace memkit::bench {

/// Bumped whenever a field changes meaning or disappears (adding fields keeps the version).
inline constexpr int schema_version = 2; // 2: p50 and p99 pooled over processes

/// A result hash. Written as "0x" and 16 hex digits: JSON readers that hold numbers as doubles
/// would round a 64-bit integer.
struct hash_code {
  std::uint64_t value = 0;
  bool operator==(const hash_code&) const = default;
};

/// \returns `h` as "0x" and 16 lower-case hex digits.
std::string to_string(hash_code h);
void to_json(nlohmann::json& j, hash_code h);
/// \throws nlohmann::json::exception or std::invalid_argument if `j` is not such a string.
void from_json(const nlohmann::json& j, hash_code& h);

/// One row: a (workload, variant) pair summarised over every process and every round in each
/// (docs/method.md). p50 and p99 are medians over the processes of each process's own; the other
/// times are pooled over every timed iteration of every process.
struct result {
  std::string workload;
  std::string variant;
  std::string unit;
  double items_per_iteration = 1; ///< units of work in one iteration
  std::size_t iterations = 0;     ///< timed iterations over every process and round
  double cold_us = 0;             ///< median over processes of the first, untimed iteration
  double min_us = 0;
  double p50_us = 0;
  double p99_us = 0;
  double max_us = 0;
  double mean_us = 0;
  double throughput_per_s = 0; ///< items per second at the median
  double speedup_vs_std = 0;   ///< std's p50 / this p50; 0 when the workload has no std row
  double speedup_lo = 0;       ///< speedup_vs_std's 95 % interval (core/interval.hpp); 0 when
  double speedup_hi = 0;       ///< unknown (fewer than 2 processes) or this is the std row
  std::string verdict_vs_std;  ///< "faster", "slower", "no clear difference"; "" for std itself
  std::size_t processes = 0;   ///< processes pooled: each a different layout draw
  std::vector<double> process_p50_us; ///< each process's median, in the order they ran
  std::vector<double> process_p99_us; ///< each process's p99, in the order they ran
  double process_spread = 0;          ///< (largest - smallest) / median of process_p50_us
  std::size_t peak_rss_kib = 0; ///< the largest over the processes of the peak above their start
  /// The smallest over the processes of their resident memory at the start (measurement's
  /// start_rss_kib): the harness, and the allocator's start-up memory.
  std::size_t start_rss_kib = 0;
  /// The largest over the processes of their whole peak resident memory (start plus peak): the
  /// allocator's start-up memory counted, which peak_rss_kib leaves out.
  std::size_t process_peak_rss_kib = 0;
  hash_code hash;
  bool hash_ok = true;                ///< consistent across iterations and equal to the std row's
  std::vector<double> percentiles_us; ///< 0th .. 100th percentile, 101 values
  std::string note;

  bool operator==(const result&) const = default;
};

/// \returns the nearest-rank `q`th percentile (0..100) of `sorted`: a value actually measured (0
/// if empty).
double percentile(const std::vector<double>& sorted, double q);

/// \returns `ms` (one per round, all in this process) summarised as a row of one process.
result summarize(const workload& w, const std::string& variant, std::vector<measurement>& ms);

/// \returns the rows of one (workload, variant) pair from several processes as one row: the
/// per-process lists concatenated, p50 and p99 the medians of the processes' (and every
/// percentile the median of the processes' percentile), min and max the extremes, the mean
/// weighted by iterations, the peak the largest, hash_ok only if every process agreed.
/// \requires `parts` is not empty.
result pool_processes(const std::vector<result>& parts);

/// \effects fills speedup_vs_std, its interval and verdict, and checks every row's hash against its
/// workload's std row (or the first row when there is none). \returns false if any hash disagrees.
bool compare_rows(std::vector<result>& rows);

} // namespace memkit::bench
