// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/replay/records.hpp: the replay's records as JSON, each from its field list:
// what a replay child hands its parent, and what `replay --json` and `advise --json` write.
#pragma once

#include <nlohmann/json.hpp>

#include "replay/compile.hpp"
#include "replay/replayer.hpp"
#include "replay/routes.hpp"
#include "replay/sites.hpp"

namespace memkit::bench::replay {

void to_json(nlohmann::json& j, const replay_result& value);
void from_json(const nlohmann::json& j, replay_result& value);
void to_json(nlohmann::json& j, const compile_stats& value);
void from_json(const nlohmann::json& j, compile_stats& value);
void to_json(nlohmann::json& j, const site_profile& value);
void from_json(const nlohmann::json& j, site_profile& value);
/// A strategy as its name (to_string). \throws std::invalid_argument for an unknown name.
void to_json(nlohmann::json& j, strategy value);
void from_json(const nlohmann::json& j, strategy& value);

} // namespace memkit::bench::replay
