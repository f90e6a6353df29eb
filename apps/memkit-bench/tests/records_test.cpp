// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/tests/records_test.cpp: the records memkit-bench writes and reads back are each
// described once (MEMKIT_BENCH_RESULT_FIELDS, MEMKIT_BENCH_PARAMS_FIELDS): prove the trips through
// JSON, CSV and a child's command line lose nothing.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "core/machine.hpp"
#include "core/params.hpp"
#include "core/summary.hpp"
#include "output/csv.hpp"
#include "output/json.hpp"
#include "output/targets.hpp"

namespace memkit::bench {
namespace {

/// A row with every field away from its default, so a field the list forgets cannot survive.
result every_field_set(int k) {
  result r;
  r.workload = "workload-" + std::to_string(k);
  r.variant = "variant \"quoted\", with a comma";
  r.unit = "requests";
  r.items_per_iteration = 32.5 + k;
  r.iterations = 60'000 + static_cast<std::size_t>(k);
  r.cold_us = 101.25;
  r.min_us = 9.5;
  r.p50_us = 11.75;
  r.p99_us = 25.125;
  r.max_us = 400.5;
  r.mean_us = 12.0625;
  r.throughput_per_s = 85'106.38;
  r.speedup_vs_std = 2.11;
  r.peak_rss_kib = 4096;
  r.hash.value = 0xfedcba9876543210ULL - static_cast<std::uint64_t>(k);
  r.hash_ok = false;
  r.percentiles_us = {9.5, 11.75, 25.125, 400.5};
  r.note = "huge pages back 8.0 of 8.0 MiB";
  return r;
}

std::vector<result> rows() { return {every_field_set(1), every_field_set(2)}; }

TEST(Records, ResultJsonReadBackIsTheIdentity) {
  const std::vector<result> written = rows();
  const nlohmann::json doc = to_json(written, describe_run(), {});
  const std::vector<result> read = rows_from_json(nlohmann::json::parse(doc.dump(1)));
  EXPECT_EQ(read, written); // every member, listed or not: a field missing from the list fails
  EXPECT_EQ(to_json(read, describe_run(), {}), doc);
}

TEST(Records, ResultJsonHasEveryField) {
  const nlohmann::json record = every_field_set(1);
  for (const char* name :
       {"workload", "variant", "unit", "items_per_iteration", "iterations", "cold_us", "min_us",
        "p50_us", "p99_us", "max_us", "mean_us", "throughput_per_s", "speedup_vs_std",
        "peak_rss_kib", "hash", "hash_ok", "percentiles_us", "note"}) {
    EXPECT_TRUE(record.contains(name)) << name;
  }
  EXPECT_EQ(record.at("hash"), "0xfedcba987654320f");
}

TEST(Records, ResultReadBackKeepsDefaultsForMissingFields) {
  result r;
  nlohmann::json{{"workload", "json-tree"}}.get_to(r);
  result expected;
  expected.workload = "json-tree";
  EXPECT_EQ(r, expected);
}

TEST(Records, CsvHasAColumnPerFieldAndQuotesText) {
  std::ostringstream out;
  write_csv(out, rows(), true);
  std::istringstream in(out.str());
  std::string header;
  std::string first;
  std::getline(in, header);
  std::getline(in, first);
  EXPECT_EQ(header, "workload,variant,unit,items_per_iteration,iterations,cold_us,min_us,p50_us,"
                    "p99_us,max_us,mean_us,throughput_per_s,speedup_vs_std,peak_rss_kib,hash,"
                    "hash_ok,percentiles_us,note,optimized");
  EXPECT_EQ(first, "workload-1,\"variant \"\"quoted\"\", with a comma\",requests,33.5,60001,101.25,"
                   "9.5,11.75,25.125,400.5,12.0625,85106.38,2.11,4096,0xfedcba987654320f,false,"
                   "9.5;11.75;25.125;400.5,huge pages back 8.0 of 8.0 MiB,true");
}

params every_param_set() {
  params p;
  p.scale = 0.0123456789;
  p.iterations = 7;
  p.tree_depth = 5;
  p.tree_branching = 3;
  p.tree_values = 9;
  p.pair_sizes = {16, 256};
  p.pair_blocks = 1234;
  p.list_sizes = {10, 20, 30};
  p.sharing_threads = 3;
  return p;
}

TEST(Records, ParamsJsonReadBackIsTheIdentity) {
  const params written = every_param_set();
  const nlohmann::json j = written;
  EXPECT_EQ(nlohmann::json::parse(j.dump()).get<params>(), written);
  EXPECT_TRUE(j.contains("iterations"));
  EXPECT_TRUE(j.contains("sharing_threads"));
}

TEST(Records, ParamsSurviveAChildProcesssArguments) {
  const params written = every_param_set();
  std::vector<std::string> args = to_arguments(written);
  params read;
  CLI::App app;
  add_options(app, read);
  std::vector<std::string> reversed(args.rbegin(), args.rend()); // CLI11 parses a reversed vector
  app.parse(reversed);
  EXPECT_EQ(read, written);
}

TEST(Records, TargetsFileLoadsAndEachTargetCitesAnExistingBackgroundSection) {
  const std::vector<target> targets = load_targets(default_targets_file());
  ASSERT_FALSE(targets.empty());
  const auto root = std::filesystem::path(default_targets_file()).parent_path() / ".." / "..";
  std::ifstream in(root / "docs" / "background.md");
  const std::string background{std::istreambuf_iterator<char>(in), {}};
  ASSERT_FALSE(background.empty());
  const std::string prefix = "docs/background.md#";
  for (const auto& t : targets) {
    EXPECT_FALSE(t.source.empty()) << t.workload;
    ASSERT_EQ(t.background.rfind(prefix, 0), 0U) << t.background;
    const std::string anchor = "<a id=\"" + t.background.substr(prefix.size()) + "\">";
    EXPECT_NE(background.find(anchor), std::string::npos) << t.background;
  }
}

} // namespace
} // namespace memkit::bench
