// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/batch.hpp: batch mode: every selected (workload, variant) pair measured in
// several processes, interleaved across variants, then the tables with each ratio's interval, the
// targets and the files (docs/method.md).
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include "core/params.hpp"

namespace memkit::bench {

struct batch_options {
  params p;
  std::vector<std::string> workloads; ///< names or prefixes; empty: all
  std::vector<std::string> variants;  ///< empty: all
  /// Processes per variant, each a fresh exec and layout draw; run A B C A B C ..., so a burst of
  /// load from elsewhere hits every variant alike. Rounds within a process agree with each other,
  /// processes do not (docs/method.md): processes, not rounds, make the interval.
  unsigned processes = 5;
  unsigned repeat = 1; ///< rounds per process, each in a forked child of it
  std::string json_file;
  std::string csv_file;
  std::string markdown_file; ///< the run's summary (output/markdown.hpp)
  std::string report_dir;
  std::string targets_file;
  bool list = false;
  bool as_child = false;      ///< set in a child process: measure, write --json, print nothing
  std::string as_replacement; ///< set in a child process: the replacement it runs under
};

/// \returns the timed iterations of one round in one process for a workload whose default is
/// `workload_default`: three fifths of it (at least 3), so the default run's five processes time
/// about as many iterations as the three rounds of one process did before it ran several.
constexpr std::size_t iterations_per_process(std::size_t workload_default) noexcept {
  return std::max<std::size_t>(3, (workload_default * 3 + 4) / 5);
}

/// Runs batch mode: as the parent, spawns `processes` children per group of variants (the
/// in-process ones, each replacement) and pools their rows; as a child, measures its slice.
/// \returns the process's exit status: 0 if every measurement succeeded and every hash agreed, 1
/// if not, 2 for a bad selection, 3 if a replacement did not intercept allocation.
int run_batch(const batch_options& o);

} // namespace memkit::bench
