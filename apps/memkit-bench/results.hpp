// apps/memkit-bench/results.hpp: summarised measurements and their table, JSON and CSV forms.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness.hpp"

namespace memkit::bench {

/// Bumped whenever a field changes meaning or disappears (adding fields keeps the version).
inline constexpr int schema_version = 1;

/// One row: a (workload, variant) pair summarised over every repetition.
struct result {
  std::string workload;
  std::string variant;
  std::string unit;
  double items = 1;
  std::size_t iterations = 0; ///< timed iterations over every repetition
  double cold_us = 0;         ///< median over repetitions of the first, untimed iteration
  double min_us = 0;
  double p50_us = 0;
  double p99_us = 0;
  double max_us = 0;
  double mean_us = 0;
  double throughput_per_s = 0; ///< items per second at the median
  double speedup_vs_std = 0;   ///< std's p50 / this p50; 0 when the workload has no std row
  std::size_t peak_rss_kib = 0;
  std::uint64_t hash = 0;
  bool hash_ok = true;                ///< consistent across iterations and equal to the std row's
  std::vector<double> percentiles_us; ///< 0th .. 100th percentile, 101 values
  std::string note;
};

/// Facts about the run shown beside the results.
struct run_info {
  bool optimized = false;
  std::string compiler;
  std::string cpu;
  unsigned cores = 0;
  std::string kernel;
  std::string thp_policy;
  nlohmann::json options;
};

/// \returns whether this binary was built with optimizations and NDEBUG.
constexpr bool built_optimized() noexcept {
#if defined(__OPTIMIZE__) && defined(NDEBUG)
  return true;
#else
  return false;
#endif
}

/// \returns the nearest-rank `q`th percentile (0..100) of `sorted`: a value actually measured (0
/// if empty).
double percentile(const std::vector<double>& sorted, double q);

/// \returns `ms` (one per repetition) summarised as a row.
result summarize(const workload& w, const std::string& variant, std::vector<measurement>& ms);

/// \effects fills speedup_vs_std and checks every row's hash against its workload's std row (or
/// the first row when there is none). \returns false if any hash disagrees.
bool compare_rows(std::vector<result>& rows);

/// \returns the machine facts (CPU model, cores, kernel, THP policy, compiler).
run_info describe_run();

/// Prints one table per workload, in the order of `rows`.
void print_tables(std::ostream& out, const std::vector<result>& rows, const run_info& info);

/// One of issue 5's speed targets, checked on the rows of a run.
struct target_check {
  std::string target;
  bool met = false;
  std::string measured;
};

/// \returns issue 5's speed targets for the workloads present in `rows` (ratios at p50 of the
/// best memkit variant over std). Reported, not enforced: one run on a shared machine is noisy.
std::vector<target_check> check_targets(const std::vector<result>& rows);

void print_targets(std::ostream& out, const std::vector<target_check>& targets);

/// \returns one row as the record batch mode writes in "results" (and serve mode's /run returns).
nlohmann::json record_json(const result& r);
nlohmann::json to_json(const std::vector<result>& rows, const run_info& info);
/// \returns the rows of a document written by to_json. \throws nlohmann::json::exception.
std::vector<result> rows_from_json(const nlohmann::json& doc);
/// \effects writes one line per row; `optimized` is repeated on every line, so no row can be
/// mistaken for an optimized build's.
void write_csv(std::ostream& out, const std::vector<result>& rows, bool optimized);

} // namespace memkit::bench
