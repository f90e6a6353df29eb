// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/core/fields.hpp: JSON for a record described by a field list (an X-macro such
// as MEMKIT_BENCH_RESULT_FIELDS), so each record's list is the only place its fields are named.
#pragma once

#include <nlohmann/json.hpp>

/// Defines `to_json` (a member per field, named as the field) and `from_json` (reads the members
/// present, so a document without a newer field still reads) for `Type`, whose fields `FIELDS`
/// lists. Use it at namespace scope in one .cpp file, in `Type`'s namespace.
#define MEMKIT_BENCH_DEFINE_JSON(Type, FIELDS)                                                     \
  void to_json(nlohmann::json& j, const Type& value) {                                             \
    j = nlohmann::json::object();                                                                  \
    FIELDS(MEMKIT_BENCH_JSON_WRITE_FIELD)                                                          \
  }                                                                                                \
  void from_json(const nlohmann::json& j, Type& value) { FIELDS(MEMKIT_BENCH_JSON_READ_FIELD) }

#define MEMKIT_BENCH_JSON_WRITE_FIELD(name) j[#name] = value.name;
#define MEMKIT_BENCH_JSON_READ_FIELD(name)                                                         \
  if (const auto it = j.find(#name); it != j.end()) {                                              \
    it->get_to(value.name);                                                                        \
  }
