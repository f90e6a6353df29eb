// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/output/report.cpp: running report.py, found where the build left it.

#include "output/report.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#ifndef MEMKIT_BENCH_REPORT_SCRIPT
#define MEMKIT_BENCH_REPORT_SCRIPT "report.py"
#endif
#ifndef MEMKIT_BENCH_PYTHON
#define MEMKIT_BENCH_PYTHON "python3"
#endif

namespace memkit::bench {

std::string write_report(const std::string& dir, const nlohmann::json& doc) {
  std::filesystem::create_directories(dir);
  const std::string data = (std::filesystem::path(dir) / "results.json").string();
  std::ofstream(data) << doc.dump(1) << "\n";
  const std::string command = std::string(MEMKIT_BENCH_PYTHON) + " '" + MEMKIT_BENCH_REPORT_SCRIPT +
                              "' '" + data + "' '" + dir + "'";
  if (std::system(command.c_str()) != 0) {
    return "the report script failed: " + command;
  }
  return "";
}

} // namespace memkit::bench
