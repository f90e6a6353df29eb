// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/tests/records_test.cpp: the records memkit-bench writes and reads back are each
// described once (MEMKIT_BENCH_RESULT_FIELDS, MEMKIT_BENCH_PARAMS_FIELDS, the replay's
// MEMKIT_BENCH_REPLAY_RESULT_FIELDS and MEMKIT_BENCH_COMPILE_STATS_FIELDS): prove the trips
// through JSON, CSV and a child's command line lose nothing.

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "core/interval.hpp"
#include "core/machine.hpp"
#include "core/params.hpp"
#include "core/summary.hpp"
#include "output/csv.hpp"
#include "output/json.hpp"
#include "output/targets.hpp"
#include "replay/records.hpp"

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
  r.speedup_lo = 1.5;
  r.speedup_hi = 2.75;
  r.verdict_vs_std = "faster";
  r.processes = 3;
  r.process_p50_us = {11.5, 11.75, 12.25};
  r.process_p99_us = {24.5, 25.125, 26.0};
  r.process_spread = 0.0625;
  r.peak_rss_kib = 4096;
  r.start_rss_kib = 5120;
  r.process_peak_rss_kib = 9216;
  r.hash.value = 0xfedcba9876543210ULL - static_cast<std::uint64_t>(k);
  r.hash_ok = false;
  r.percentiles_us = {9.5, 11.75, 25.125, 400.5};
  r.note = "huge pages back 8.0 of 8.0 MiB";
  return r;
}

std::vector<result> rows() { return {every_field_set(1), every_field_set(2)}; }

TEST(Records, ResultJsonReadBackIsTheIdentity) {
  const std::vector<result> written = rows();
  // One description for both documents: its date is read from the clock, which may turn a second
  // between two calls.
  const auto run = describe_run();
  const nlohmann::json doc = to_json(written, run, {});
  const std::vector<result> read = rows_from_json(nlohmann::json::parse(doc.dump(1)));
  EXPECT_EQ(read, written); // every member, listed or not: a field missing from the list fails
  EXPECT_EQ(to_json(read, run, {}), doc);
}

/// \returns `T` with every field of its list set to a value of its own (1, 2, ...), and in
/// `listed` the bytes of those fields.
template <class T>
T every_listed_field_set(void (*list)(T&, int&, std::size_t&), std::size_t& listed) {
  T value{};
  int n = 0;
  listed = 0;
  list(value, n, listed);
  return value;
}

#define MEMKIT_BENCH_SET_FIELD(name)                                                               \
  v.name = static_cast<decltype(v.name)>(++n);                                                     \
  bytes += sizeof v.name;
void set_replay_result(replay::replay_result& v, int& n, std::size_t& bytes) {
  MEMKIT_BENCH_REPLAY_RESULT_FIELDS(MEMKIT_BENCH_SET_FIELD)
}
void set_compile_stats(replay::compile_stats& v, int& n, std::size_t& bytes){
    MEMKIT_BENCH_COMPILE_STATS_FIELDS(MEMKIT_BENCH_SET_FIELD)}
#undef MEMKIT_BENCH_SET_FIELD

TEST(Records, ReplayRecordsJsonReadBackIsTheIdentity) {
  // Both records are 8-byte fields without padding: a member missing from its list leaves its
  // bytes out of the listed ones.
  std::size_t listed = 0;
  const auto result = every_listed_field_set(&set_replay_result, listed);
  EXPECT_EQ(listed, sizeof result);
  EXPECT_EQ(nlohmann::json::parse(nlohmann::json(result).dump()).get<replay::replay_result>(),
            result);
  EXPECT_NE(result.peak_threads, 0u);
  const auto stats = every_listed_field_set(&set_compile_stats, listed);
  EXPECT_EQ(listed, sizeof stats);
  EXPECT_EQ(nlohmann::json::parse(nlohmann::json(stats).dump()).get<replay::compile_stats>(),
            stats);
  EXPECT_NE(stats.start_waits, 0u);
  EXPECT_NE(stats.peak_threads, 0u);
}

TEST(Records, ResultJsonHasEveryField) {
  const nlohmann::json record = every_field_set(1);
  for (const char* name : {"workload",
                           "variant",
                           "unit",
                           "items_per_iteration",
                           "iterations",
                           "cold_us",
                           "min_us",
                           "p50_us",
                           "p99_us",
                           "max_us",
                           "mean_us",
                           "throughput_per_s",
                           "speedup_vs_std",
                           "speedup_lo",
                           "speedup_hi",
                           "verdict_vs_std",
                           "processes",
                           "process_p50_us",
                           "process_p99_us",
                           "process_spread",
                           "peak_rss_kib",
                           "start_rss_kib",
                           "process_peak_rss_kib",
                           "hash",
                           "hash_ok",
                           "percentiles_us",
                           "note"}) {
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
                    "p99_us,max_us,mean_us,throughput_per_s,speedup_vs_std,speedup_lo,speedup_hi,"
                    "verdict_vs_std,processes,process_p50_us,process_p99_us,process_spread,"
                    "peak_rss_kib,start_rss_kib,process_peak_rss_kib,hash,hash_ok,percentiles_us,"
                    "note,optimized");
  EXPECT_EQ(first, "workload-1,\"variant \"\"quoted\"\", with a comma\",requests,33.5,60001,101.25,"
                   "9.5,11.75,25.125,400.5,12.0625,85106.38,2.11,1.5,2.75,faster,3,"
                   "11.5;11.75;12.25,24.5;25.125;26,0.0625,4096,5120,9216,0xfedcba987654320f,false,"
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
  // The published figures are in docs/background.md; the published descriptions of the
  // allocator field's own benchmarks in docs/workloads.md.
  for (const std::string file : {"background.md", "workloads.md"}) {
    std::ifstream in(root / "docs" / file);
    const std::string text{std::istreambuf_iterator<char>(in), {}};
    ASSERT_FALSE(text.empty()) << file;
  }
  for (const auto& t : targets) {
    EXPECT_FALSE(t.source.empty()) << t.workload;
    const std::size_t hash = t.background.find('#');
    ASSERT_NE(hash, std::string::npos) << t.background;
    const std::string file = t.background.substr(0, hash);
    ASSERT_TRUE(file == "docs/background.md" || file == "docs/workloads.md") << t.background;
    std::ifstream in(root / file);
    const std::string text{std::istreambuf_iterator<char>(in), {}};
    const std::string anchor = "<a id=\"" + t.background.substr(hash + 1) + "\">";
    EXPECT_NE(text.find(anchor), std::string::npos) << t.background;
  }
}

/// A row of `workload` for `variant` with `kib` of peak RSS.
result peak_row(const std::string& variant, std::size_t kib) {
  result r;
  r.workload = "larson-2t";
  r.variant = variant;
  r.p50_us = 10;
  r.peak_rss_kib = kib;
  return r;
}

/// A target of memkit's peak RSS, at `statistic`, at most 1.2x `baseline`'s on larson-2t.
target memory_target(const std::string& baseline, const std::string& statistic) {
  target t;
  t.workload = "larson-2t";
  t.candidate = "memkit";
  t.baseline = baseline;
  t.statistic = statistic;
  t.ratio_at_most = 1.2;
  t.source = "test";
  return t;
}

TEST(Records, PeakRssTargetIsMetUpToItsRatioOfTheBaselinesPeak) {
  const target t = memory_target("jemalloc", "peak_rss");
  const auto check = [&](std::size_t mine, std::size_t theirs) {
    const auto checks =
        check_targets({t}, {peak_row("memkit", mine), peak_row("jemalloc", theirs)});
    EXPECT_EQ(checks.size(), 1U);
    return !checks.empty() && checks[0].met;
  };
  EXPECT_TRUE(check(1200, 1000));
  EXPECT_FALSE(check(1201, 1000));
  EXPECT_TRUE(check(500, 1000));
  EXPECT_FALSE(check(1, 0)); // a baseline that grew by nothing
  EXPECT_TRUE(check(0, 0));
  EXPECT_EQ(check_targets({t}, {peak_row("memkit", 1)}).size(), 0U); // no baseline row: skipped
}

// "process_rss" charges each row the memory it made resident before the workload beyond the
// other's: its whole peak above the lighter of the two starts. An allocator that starts 4 MiB
// heavier and then grows less loses to one that starts light and grows more.
TEST(Records, ProcessRssTargetChargesEachRowItsStartBeyondTheLighterStart) {
  const target t = memory_target("tcmalloc|tbbmalloc", "process_rss");
  const auto row = [](const std::string& variant, std::size_t start, std::size_t peak) {
    result r = peak_row(variant, peak);
    r.start_rss_kib = start;
    r.process_peak_rss_kib = start + peak;
    return r;
  };
  // memkit grows by 2400 KiB from a start of 5200; tcmalloc by 1450 from 9000: charged 3800
  // beyond memkit's start, 5250 in all (0.46x). As peak_rss (above each start): 1.66x, missed.
  std::vector<result> rows = {row("memkit", 5200, 2400), row("tcmalloc", 9000, 1450)};
  auto checks = check_targets({t}, rows);
  ASSERT_EQ(checks.size(), 1U);
  EXPECT_TRUE(checks[0].met) << checks[0].measured;
  EXPECT_NEAR(checks[0].ratio, 2400.0 / 5250.0, 0.001);
  EXPECT_NE(checks[0].measured.find("(2400 KiB vs tcmalloc 5250 KiB)"), std::string::npos)
      << checks[0].measured;
  EXPECT_FALSE(check_targets({memory_target("tcmalloc|tbbmalloc", "peak_rss")}, rows)[0].met);
  // The best baseline is the lowest whole peak: tbbmalloc's 7800, whose start is 200 above
  // memkit's, charged to it: 2600 against memkit's 2400 (0.92x). memkit starting 800 above
  // tbbmalloc is charged that instead: 3200 against 2400, 1.33x, missed.
  rows.push_back(row("tbbmalloc", 5400, 2400));
  checks = check_targets({t}, rows);
  EXPECT_NEAR(checks[0].ratio, 2400.0 / 2600.0, 0.001);
  EXPECT_NE(checks[0].measured.find("tbbmalloc"), std::string::npos) << checks[0].measured;
  rows[0] = row("memkit", 6200, 2400);
  checks = check_targets({t}, rows);
  EXPECT_FALSE(checks[0].met);
  EXPECT_NEAR(checks[0].ratio, 3200.0 / 2400.0, 0.001);
}

/// A row of `variant` on `workload` whose processes took `us` each (p50 and p99 alike).
result timed_row(const std::string& workload, const std::string& variant, std::vector<double> us,
                 std::size_t kib = 100) {
  result r;
  r.workload = workload;
  r.variant = variant;
  r.process_p50_us = us;
  r.process_p99_us = us;
  r.p50_us = r.p99_us = median(us);
  r.peak_rss_kib = kib;
  return r;
}

target group_target(const std::string& workloads, const std::string& aggregate,
                    const std::string& baseline, double at_least) {
  target t;
  t.workloads = workloads;
  t.aggregate = aggregate;
  t.candidate = "memkit";
  t.baseline = baseline;
  t.statistic = "p50";
  t.ratio_at_least = at_least;
  t.source = "test";
  return t;
}

TEST(Records, GroupTargetTakesTheGeometricMeanOverTheWorkloadsItsExpressionMatches) {
  // memkit 2x faster on a-1, 1x on a-2 (geomean sqrt 2 = 1.41x); b-1, not in the group, 0.1x.
  const std::vector<result> rows = {
      timed_row("a-1", "memkit", {5, 5.1, 4.9}),   timed_row("a-1", "mimalloc", {10, 10.1, 9.9}),
      timed_row("a-2", "memkit", {10, 10.1, 9.9}), timed_row("a-2", "mimalloc", {10, 10.1, 9.9}),
      timed_row("b-1", "memkit", {100, 101, 99}),  timed_row("b-1", "mimalloc", {10, 10.1, 9.9})};
  const auto met = check_targets({group_target("a-.*", "geomean", "mimalloc", 1.3)}, rows);
  ASSERT_EQ(met.size(), 1U);
  EXPECT_NEAR(met[0].ratio, std::sqrt(2.0), 0.01);
  EXPECT_TRUE(met[0].met) << met[0].measured;
  EXPECT_GT(met[0].ratio_lo, 1.3);
  EXPECT_LT(met[0].ratio_hi, 1.5);
  EXPECT_NE(met[0].measured.find("over 2 workloads"), std::string::npos) << met[0].measured;
  const auto missed = check_targets({group_target(".*", "geomean", "mimalloc", 1.0)}, rows);
  ASSERT_EQ(missed.size(), 1U);
  EXPECT_NEAR(missed[0].ratio, std::cbrt(2.0 * 1.0 * 0.1), 0.01); // b-1 joins the group
  EXPECT_EQ(missed[0].verdict, "missed");
  EXPECT_TRUE(check_targets({group_target("c.*", "geomean", "mimalloc", 1.0)}, rows).empty())
      << "no workload of the group ran: nothing to judge";
}

TEST(Records, EachTargetIsMetOnlyWhenEveryWorkloadIsAndQuotesTheWorstAgainstTheBestAlternative) {
  const std::vector<result> rows = {
      timed_row("a-1", "memkit", {10, 10.1, 9.9}), timed_row("a-1", "mimalloc", {20, 20.2, 19.8}),
      timed_row("a-1", "jemalloc", {9, 9.1, 8.9}), timed_row("a-2", "memkit", {10, 10.1, 9.9}),
      timed_row("a-2", "mimalloc", {30, 30.3, 29.7})};
  // a-1's best peer is jemalloc (0.9x), a-2's mimalloc (3x): 0.9 is the worst.
  const auto missed =
      check_targets({group_target("a-.*", "each", "mimalloc|jemalloc", 0.95)}, rows);
  ASSERT_EQ(missed.size(), 1U);
  EXPECT_EQ(missed[0].verdict, "missed");
  EXPECT_NEAR(missed[0].ratio, 0.9, 0.01);
  EXPECT_NE(missed[0].measured.find("1 of 2 workloads met, 1 missed (a-1);"), std::string::npos)
      << missed[0].measured;
  EXPECT_NE(missed[0].measured.find("a-1 against jemalloc"), std::string::npos)
      << missed[0].measured;
  const auto met = check_targets({group_target("a-.*", "each", "mimalloc|jemalloc", 0.85)}, rows);
  ASSERT_EQ(met.size(), 1U);
  EXPECT_TRUE(met[0].met) << met[0].measured;
  // Peak RSS against the lowest: a-1's jemalloc 100 KiB against memkit's 130 misses 1.2x.
  target rss = group_target("a-1", "each", "mimalloc|jemalloc", 0);
  rss.statistic = "peak_rss";
  rss.ratio_at_least = 0;
  rss.ratio_at_most = 1.2;
  std::vector<result> rss_rows = {timed_row("a-1", "memkit", {10}, 130),
                                  timed_row("a-1", "mimalloc", {10}, 400),
                                  timed_row("a-1", "jemalloc", {10}, 100)};
  const auto heavy = check_targets({rss}, rss_rows);
  ASSERT_EQ(heavy.size(), 1U);
  EXPECT_FALSE(heavy[0].met);
  EXPECT_NEAR(heavy[0].ratio, 1.3, 0.01);
  EXPECT_NE(heavy[0].measured.find("0 of 1 workloads met, 1 missed (a-1);"), std::string::npos)
      << heavy[0].measured;
  rss_rows[0].peak_rss_kib = 120;
  EXPECT_TRUE(check_targets({rss}, rss_rows)[0].met);
}

TEST(Records, TargetsFileRejectsAMalformedGroupTarget) {
  const auto file = std::filesystem::temp_directory_path() / "memkit-bench-group-targets-test.json";
  const auto load = [&](const std::string& fields) {
    std::ofstream(file) << R"({"targets": [{"candidate": "a", "baseline": "b|c", "source": "s", )"
                        << fields << "}]}";
    return load_targets(file.string());
  };
  const std::string time = R"("statistic": "p50", "ratio_at_least": 1.1, )";
  EXPECT_EQ(load(time + R"("workloads": "x.*", "aggregate": "geomean")").size(), 1U);
  EXPECT_EQ(load(time + R"("workloads": "x.*", "aggregate": "each")").size(), 1U);
  EXPECT_THROW(load(time + R"("workloads": "x.*")"), std::runtime_error); // no aggregate
  EXPECT_THROW(load(time + R"("workloads": "x(", "aggregate": "each")"), std::runtime_error);
  EXPECT_THROW(load(time + R"("workload": "w", "workloads": "x.*", "aggregate": "each")"),
               std::runtime_error); // both
  EXPECT_THROW(load(time + R"("workload": "w", "aggregate": "each")"), std::runtime_error);
  EXPECT_THROW(load(R"("statistic": "peak_rss", "ratio_at_most": 1.2, "workloads": "x.*", )"
                    R"("aggregate": "geomean")"),
               std::runtime_error); // peak RSS has no geomean
  EXPECT_THROW(load(R"("statistic": "process_rss", "ratio_at_most": 1.2, "workloads": "x.*", )"
                    R"("aggregate": "geomean")"),
               std::runtime_error);
  std::filesystem::remove(file);
}

TEST(Records, TargetsFileRejectsAPeakRssTargetWithATimeRatio) {
  const auto file = std::filesystem::temp_directory_path() / "memkit-bench-targets-test.json";
  const auto load = [&](const std::string& ratios, const std::string& statistic = "peak_rss") {
    std::ofstream(file) << R"({"targets": [{"workload": "w", "candidate": "a", "baseline": "b", )"
                        << R"("statistic": ")" << statistic << R"(", "source": "s", )" << ratios
                        << "}]}";
    return load_targets(file.string());
  };
  EXPECT_EQ(load(R"("ratio_at_most": 1.2)").size(), 1U);
  EXPECT_EQ(load(R"("ratio_at_most": 1.2)", "process_rss").size(), 1U);
  EXPECT_THROW(load(R"("ratio_at_least": 1.2)", "process_rss"), std::runtime_error);
  EXPECT_THROW(load(R"("ratio_at_most": 1.2)", "rss"), std::runtime_error);
  EXPECT_THROW(load(R"("ratio_at_least": 1.2)"), std::runtime_error);
  EXPECT_THROW(load(R"("ratio_at_most": 1.2, "ratio_above": 1)"), std::runtime_error);
  EXPECT_THROW(load(R"("ratio_at_most": 0)"), std::runtime_error);
  std::filesystem::remove(file);
}

} // namespace
} // namespace memkit::bench
