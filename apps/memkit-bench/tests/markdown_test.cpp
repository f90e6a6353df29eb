// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/tests/markdown_test.cpp: a run's Markdown summary and headline table
// (output/markdown.hpp) say what its rows say: the fastest memkit variant and the fastest peer,
// the ratios between them, the targets; and the summary made from a results.json read back is
// the one the run wrote, so a committed run's summary can be regenerated and compared.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/machine.hpp"
#include "core/summary.hpp"
#include "output/json.hpp"
#include "output/markdown.hpp"
#include "output/targets.hpp"

namespace memkit::bench {
namespace {

result row(const std::string& workload, const std::string& variant, double p50_us) {
  result r;
  r.workload = workload;
  r.variant = variant;
  r.unit = "requests";
  r.iterations = 10;
  r.p50_us = p50_us;
  r.p99_us = 2 * p50_us;
  r.peak_rss_kib = 1234;
  r.hash_ok = variant != "boost-pool";
  r.speedup_vs_std = workload == "json-tree" ? 20 / p50_us : 0; // as the run computes it
  r.processes = 5;
  if (r.speedup_vs_std > 0) { // an interval of +-0.5 around it, made up
    r.speedup_lo = r.speedup_vs_std - 0.5;
    r.speedup_hi = r.speedup_vs_std + 0.5;
    r.verdict_vs_std = r.speedup_lo > 1 ? "faster" : "no clear difference";
  }
  return r;
}

/// json-tree: std 20 us, memkit-arena 5 (the fastest memkit), memkit 8, mimalloc 10 and
/// boost-pool 16 (peers: mimalloc the fastest). pairs: no std row, so no headline row.
nlohmann::json document() {
  const std::vector<result> rows{
      row("json-tree", "std", 20),        row("json-tree", "memkit-arena", 5),
      row("json-tree", "memkit", 8),      row("json-tree", "mimalloc", 10),
      row("json-tree", "boost-pool", 16), row("pairs-lifo-8", "memkit-pool", 1)};
  run_info info;
  info.version = "0.2.0";
  info.commit = "0123456789ab";
  info.date = "2026-11-26T14:00:00Z";
  info.cpu = "Test CPU";
  info.cores = 2;
  info.optimized = true;
  info.options = {{"workloads", {"json-tree", "pairs-lifo-8"}},
                  {"repeat", 3},
                  {"variants", nlohmann::json::array()}};
  std::vector<target_check> checks(2);
  checks[0].target = "json-tree: memkit-arena p50 >= 1.5x mimalloc";
  checks[0].met = true;
  checks[0].verdict = "met";
  checks[0].measured = "2.00x";
  checks[1].target = "json-tree: memkit p50 >= 1.5x the best of mimalloc|jemalloc";
  checks[1].verdict = "missed";
  checks[1].measured = "1.25x";
  for (target_check& c : checks) {
    c.source = "a source";
  }
  return to_json(rows, info, checks);
}

TEST(Markdown, HeadlineNamesTheFastestMemkitVariantAndPeerWithTheirRatios) {
  const std::string h = markdown_headline(document());
  EXPECT_NE(h.find("| json-tree | 20.0 | memkit-arena | 5.00 | 4.00x | mimalloc | 10.0 | 2.00x |"),
            std::string::npos)
      << h;
  EXPECT_EQ(h.find("pairs-lifo-8"), std::string::npos) << "a workload without std has no row\n"
                                                       << h;
}

TEST(Markdown, SummaryHasEveryRowWithItsRatiosAndTheTargets) {
  const std::string s = markdown_summary(document());
  EXPECT_NE(s.find("| memkit | 0.2.0, commit `0123456789ab` |"), std::string::npos) << s;
  EXPECT_NE(s.find("2026-11-26T14:00:00Z"), std::string::npos) << s;
  EXPECT_NE(s.find("`memkit-bench --repeat 3 --workloads json-tree,pairs-lifo-8 --json FILE"),
            std::string::npos)
      << s;
  // p50, p99, peak, vs std, hash, vs the fastest peer (mimalloc, 10 us).
  EXPECT_NE(s.find("| memkit-arena | 5.00 | 10.0 | 1,234 | 4.00x | 3.50x | 4.50x | faster | 5 | "
                   "yes | 2.00x |"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("| boost-pool | 16.0 | 32.0 | 1,234 | 1.25x | 0.75x | 1.75x | no clear "
                   "difference | 5 | **no** | 0.62x |"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("| memkit-pool | 1.00 | 2.00 | 1,234 | - | - | - |  | 5 | yes | - |"),
            std::string::npos)
      << "no std and no peer: no ratios\n"
      << s;
  EXPECT_NE(s.find("| json-tree: memkit p50 >= 1.5x the best of mimalloc\\|jemalloc | **missed** | "
                   "1.25x |"),
            std::string::npos)
      << "a '|' within a cell is escaped\n"
      << s;
}

TEST(Markdown, SummaryOfTheResultsFileReadBackIsTheRunsOwn) {
  const nlohmann::json doc = document();
  EXPECT_EQ(markdown_summary(nlohmann::json::parse(doc.dump(1))), markdown_summary(doc));
  EXPECT_EQ(markdown_headline(nlohmann::json::parse(doc.dump(1))), markdown_headline(doc));
}

TEST(Markdown, ADocumentWithoutResultsIsRefused) {
  EXPECT_THROW(markdown_summary(nlohmann::json{{"machine", nlohmann::json::object()}}),
               nlohmann::json::exception);
}

TEST(Markdown, MemkitVariantsAreTheStrategiesAndTheReplacement) {
  EXPECT_TRUE(is_memkit_variant("memkit"));
  EXPECT_TRUE(is_memkit_variant("memkit-arena"));
  EXPECT_FALSE(is_memkit_variant("memkitx"));
  EXPECT_FALSE(is_memkit_variant("mimalloc"));
  EXPECT_FALSE(is_memkit_variant("std"));
}

} // namespace
} // namespace memkit::bench
