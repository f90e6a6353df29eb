// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/output/json.cpp: the results as JSON and read back, each record generated from
// MEMKIT_BENCH_RESULT_FIELDS.

#include "output/json.hpp"

#include "core/fields.hpp"
#include "core/interval.hpp"

namespace memkit::bench {

MEMKIT_BENCH_DEFINE_JSON(result, MEMKIT_BENCH_RESULT_FIELDS)

nlohmann::json to_json(const std::vector<result>& rows, const run_info& info,
                       const std::vector<target_check>& targets) {
  nlohmann::json doc;
  doc["schema"] = schema_version;
  doc["tool"] = "memkit-bench";
  doc["version"] = info.version;
  doc["commit"] = info.commit;
  doc["date"] = info.date;
  doc["optimized"] = info.optimized;
  doc["machine"] = {{"cpu", info.cpu},
                    {"cores", info.cores},
                    {"kernel", info.kernel},
                    {"thp_policy", info.thp_policy},
                    {"layout_randomization", info.layout.empty() ? "on" : info.layout},
                    {"compiler", info.compiler}};
  doc["options"] = info.options;
  doc["interval"] = {{"method", "percentile bootstrap over per-process medians"},
                     {"level", interval_level},
                     {"resamples", bootstrap_resamples},
                     {"seed", bootstrap_seed}};
  doc["targets"] = targets;
  doc["results"] = rows;
  return doc;
}

std::vector<result> rows_from_json(const nlohmann::json& doc) {
  return doc.at("results").get<std::vector<result>>();
}

} // namespace memkit::bench
