// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/batch.hpp: batch mode: every selected (workload, variant) pair measured in its
// own process, repetitions interleaved, then the tables, the targets and the files.
#pragma once

#include <string>
#include <vector>

#include "core/params.hpp"

namespace memkit::bench {

struct batch_options {
  params p;
  std::vector<std::string> workloads; ///< names or prefixes; empty: all
  std::vector<std::string> variants;  ///< empty: all
  unsigned repeat = 3; // interleaved, so a burst of load from elsewhere hits every variant alike
  std::string json_file;
  std::string csv_file;
  std::string markdown_file; ///< the run's summary (output/markdown.hpp)
  std::string report_dir;
  std::string targets_file;
  bool list = false;
  std::string as_replacement; ///< set in a child process: the replacement it runs under
};

/// Runs batch mode. \returns the process's exit status: 0 if every measurement succeeded and every
/// hash agreed, 1 if not, 2 for a bad selection, 3 if a replacement did not intercept allocation.
int run_batch(const batch_options& o);

} // namespace memkit::bench
