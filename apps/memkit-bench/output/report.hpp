// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/output/report.hpp: the HTML report with charts (batch mode's --report), drawn
// by report.py with matplotlib.
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

namespace memkit::bench {

/// \effects writes `doc` to DIR/results.json and runs report.py on it, which writes the PNG charts
/// and DIR/index.html. \returns "" on success, else what failed.
std::string write_report(const std::string& dir, const nlohmann::json& doc);

} // namespace memkit::bench
