// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/output/json.hpp: the results as JSON (batch mode's --json and report data,
// serve mode's /run records) and read back (a replacement's child process hands its rows over so).
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "core/machine.hpp"
#include "core/summary.hpp"
#include "output/targets.hpp"

namespace memkit::bench {

/// `value` as one record: a member per field of MEMKIT_BENCH_RESULT_FIELDS.
void to_json(nlohmann::json& j, const result& value);
/// \effects reads the members `j` has; the others keep their defaults.
/// \throws nlohmann::json::exception if a member has the wrong type.
void from_json(const nlohmann::json& j, result& value);

/// \returns the whole document: schema, machine, options, checked targets and the rows.
nlohmann::json to_json(const std::vector<result>& rows, const run_info& info,
                       const std::vector<target_check>& targets);
/// \returns the rows of a document written by to_json. \throws nlohmann::json::exception.
std::vector<result> rows_from_json(const nlohmann::json& doc);

} // namespace memkit::bench
