// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/replay/records.cpp: the replay's records as JSON.

#include "replay/records.hpp"

#include <stdexcept>

#include "core/fields.hpp"

namespace memkit::bench::replay {

void to_json(nlohmann::json& j, strategy value) { j = to_string(value); }

void from_json(const nlohmann::json& j, strategy& value) {
  const auto s = parse_strategy(j.get<std::string>());
  if (!s) {
    throw std::invalid_argument("unknown strategy " + j.dump());
  }
  value = *s;
}

MEMKIT_BENCH_DEFINE_JSON(replay_result, MEMKIT_BENCH_REPLAY_RESULT_FIELDS)
MEMKIT_BENCH_DEFINE_JSON(compile_stats, MEMKIT_BENCH_COMPILE_STATS_FIELDS)
MEMKIT_BENCH_DEFINE_JSON(site_profile, MEMKIT_BENCH_SITE_PROFILE_FIELDS)

} // namespace memkit::bench::replay
