// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/tests/interval_test.cpp: the intervals against distributions whose true ratio
// is known, the verdicts on synthetic processes (a fake variant faster by a fixed factor whose
// processes each draw a different layout), the targets judged by them, and the pooling of
// per-process rows.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <numbers>
#include <string>
#include <vector>

#include "core/interval.hpp"
#include "core/summary.hpp"
#include "memkit_bench/random.hpp"
#include "output/targets.hpp"

namespace memkit::bench {
namespace {

/// A uniform double in [0, 1) from `g`.
double uniform(rng& g) { return static_cast<double>(g.next() >> 11) * 0x1.0p-53; }

/// A standard normal draw (Box-Muller).
double normal(rng& g) {
  const double u = 1 - uniform(g); // (0, 1]: the logarithm stays finite
  return std::sqrt(-2 * std::log(u)) * std::cos(2 * std::numbers::pi * uniform(g));
}

std::vector<double> draw(std::size_t n, const std::function<double()>& one) {
  std::vector<double> v(n);
  for (double& x : v) {
    x = one();
  }
  return v;
}

TEST(Interval, MedianOfOddEvenAndEmpty) {
  EXPECT_EQ(median({3, 1, 2}), 2);
  EXPECT_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_EQ(median({7}), 7);
  EXPECT_EQ(median({}), 0);
}

TEST(Interval, IdenticalProcessesGiveAPointIntervalAndAVerdict) {
  const ratio_interval r = speedup_interval({10, 10, 10}, {5, 5, 5});
  EXPECT_EQ(r.ratio, 2);
  EXPECT_EQ(r.lo, 2);
  EXPECT_EQ(r.hi, 2);
  EXPECT_EQ(speed_verdict(r), "faster");
  EXPECT_EQ(speed_verdict(speedup_interval({5, 5, 5}, {10, 10, 10})), "slower");
}

TEST(Interval, OneProcessGivesNoIntervalAndNoVerdict) {
  const ratio_interval r = speedup_interval({10}, {5, 5});
  EXPECT_EQ(r.ratio, 2);
  EXPECT_FALSE(r.known());
  EXPECT_EQ(r.processes, 1U);
  EXPECT_EQ(judge(r, 1.0), verdict::not_separable);
  EXPECT_EQ(speed_verdict(r), "no clear difference");
  EXPECT_EQ(processes_to_separate(r, 1.0), 0U);
}

TEST(Interval, TheSeedFixesTheIntervalAroundTheRatio) {
  rng g(7);
  const auto b = draw(9, [&] { return 100 + 10 * normal(g); });
  const auto c = draw(9, [&] { return 90 + 10 * normal(g); });
  const ratio_interval first = speedup_interval(b, c, 1);
  const ratio_interval again = speedup_interval(b, c, 1);
  EXPECT_EQ(first.lo, again.lo);
  EXPECT_EQ(first.hi, again.hi);
  EXPECT_LT(first.lo, first.ratio);
  EXPECT_GT(first.hi, first.ratio);
}

/// \returns the share of `trials` intervals, each from fresh samples of `n` processes a side,
/// that contain `true_ratio`.
double coverage(std::size_t n, double true_ratio, const std::function<double(rng&)>& baseline,
                const std::function<double(rng&)>& candidate) {
  constexpr int trials = 200;
  rng g(42);
  int covered = 0;
  for (int t = 0; t < trials; ++t) {
    const auto b = draw(n, [&] { return baseline(g); });
    const auto c = draw(n, [&] { return candidate(g); });
    const ratio_interval r = speedup_interval(b, c, bootstrap_seed + t, 2000);
    covered += r.lo <= true_ratio && true_ratio <= r.hi ? 1 : 0;
  }
  return static_cast<double>(covered) / trials;
}

// Log-normal processes (a layout scales the time): medians 100 and 80, so the ratio is 1.25.
TEST(Interval, CoversTheTrueRatioOfLogNormalProcessesAboutNinetyFivePercentOfTheTime) {
  const double share = coverage(
      15, 1.25, [](rng& g) { return 100 * std::exp(0.1 * normal(g)); },
      [](rng& g) { return 80 * std::exp(0.1 * normal(g)); });
  EXPECT_GE(share, 0.88);
  EXPECT_LE(share, 0.99);
}

// Uniform processes: medians 100 and 80 again.
TEST(Interval, CoversTheTrueRatioOfUniformProcessesAboutNinetyFivePercentOfTheTime) {
  const double share = coverage(
      21, 1.25, [](rng& g) { return 50 + 100 * uniform(g); },
      [](rng& g) { return 40 + 80 * uniform(g); });
  EXPECT_GE(share, 0.88);
  EXPECT_LE(share, 0.99);
}

TEST(Interval, PairedRatiosGiveTheirMedianAndNoIntervalFromOne) {
  const ratio_interval r = paired_interval({1.2, 1.1, 1.3});
  EXPECT_EQ(r.ratio, 1.2);
  EXPECT_EQ(r.processes, 3U);
  EXPECT_GE(r.lo, 1.1);
  EXPECT_LE(r.hi, 1.3);
  EXPECT_LE(r.lo, r.ratio);
  EXPECT_GE(r.hi, r.ratio);
  const ratio_interval one = paired_interval({1.2});
  EXPECT_EQ(one.ratio, 1.2);
  EXPECT_FALSE(one.known());
  EXPECT_FALSE(paired_interval({}).known());
}

// Processes whose layout scales both variants alike by up to 1.5x (log-normal, sigma 0.2), each
// side with its own 2 % of noise besides: measured in separate processes the two sides cannot
// show a gain of 1.05, measured in one process each (paired) they do, and the interval covers it.
TEST(Interval, APairedDesignCancelsTheProcessesOwnFactor) {
  rng g(5);
  constexpr std::size_t n = 15;
  std::vector<double> baseline;
  std::vector<double> candidate;
  std::vector<double> ratios;
  for (std::size_t i = 0; i < n; ++i) {
    const double layout = std::exp(0.2 * normal(g));
    const double b = 105 * layout * std::exp(0.02 * normal(g));
    const double c = 100 * layout * std::exp(0.02 * normal(g));
    ratios.push_back(b / c);
    // The unpaired design: each side in processes of their own layouts.
    baseline.push_back(105 * std::exp(0.2 * normal(g)) * std::exp(0.02 * normal(g)));
    candidate.push_back(100 * std::exp(0.2 * normal(g)) * std::exp(0.02 * normal(g)));
  }
  const ratio_interval unpaired = speedup_interval(baseline, candidate);
  const ratio_interval paired = paired_interval(ratios);
  EXPECT_EQ(judge(unpaired, 1), verdict::not_separable);
  EXPECT_EQ(judge(paired, 1), verdict::above);
  EXPECT_LE(paired.lo, 1.05);
  EXPECT_GE(paired.hi, 1.05);
  EXPECT_LT(paired.hi - paired.lo, (unpaired.hi - unpaired.lo) / 4);
}

TEST(Interval, NarrowsAsOneOverTheRootOfTheProcesses) {
  rng g(11);
  auto width = [&](std::size_t n) {
    const auto b = draw(n, [&] { return 100 * std::exp(0.1 * normal(g)); });
    const auto c = draw(n, [&] { return 80 * std::exp(0.1 * normal(g)); });
    const ratio_interval r = speedup_interval(b, c);
    return std::log(r.hi) - std::log(r.lo);
  };
  const double few = width(16);
  const double many = width(256); // 16 times the processes: a quarter of the width
  EXPECT_GT(many, few / 8);
  EXPECT_LT(many, few / 2);
}

/// The fake variant: each process is a layout draw that scales its time by a factor in
/// [1, 1.5) (the spread the process-level measurements showed), deterministic (a Weyl sequence);
/// the candidate is the baseline's work made `factor` times faster, on layouts of its own.
std::vector<double> fake_processes(std::size_t n, double base_us, double phase) {
  std::vector<double> v;
  for (std::size_t k = 0; k < n; ++k) {
    const double draw = std::fmod((static_cast<double>(k) + phase) * 0.6180339887498949, 1.0);
    v.push_back(base_us * (1 + 0.5 * draw));
  }
  return v;
}

constexpr double fake_factor = 1.15;

ratio_interval fake_comparison(std::size_t processes) {
  return speedup_interval(fake_processes(processes, 100, 0),
                          fake_processes(processes, 100 / fake_factor, 0.5));
}

TEST(Interval, FakeVariantIsFasterWithEnoughProcessesAndNotSeparableWithTooFew) {
  const ratio_interval few = fake_comparison(3);
  EXPECT_EQ(speed_verdict(few), "no clear difference");
  const std::size_t needed = processes_to_separate(few, 1.0);
  EXPECT_GT(needed, 3U);

  const ratio_interval enough = fake_comparison(40);
  EXPECT_EQ(speed_verdict(enough), "faster");
  EXPECT_NEAR(enough.ratio, fake_factor, 0.05);
  EXPECT_LE(enough.lo, fake_factor);
  EXPECT_GE(enough.hi, fake_factor);
  // The estimate from three processes' spread is enough processes.
  EXPECT_EQ(speed_verdict(fake_comparison(needed)), "faster") << needed;
}

/// A row of `processes` with these per-process medians (p99 twice each).
result row(const std::string& variant, const std::vector<double>& p50s) {
  result r;
  r.workload = "w";
  r.variant = variant;
  r.processes = p50s.size();
  r.process_p50_us = p50s;
  for (const double x : p50s) {
    r.process_p99_us.push_back(2 * x);
  }
  r.p50_us = median(p50s);
  return r;
}

target at_least(double bar, const std::string& statistic = "p50") {
  return {"w", "", "", "fast", "std", statistic, bar, 0, 0, "a published figure", ""};
}

/// `t` checked on the fake variant against its baseline, `processes` of each.
target_check check_fake(const target& t, std::size_t processes) {
  return check_target(t, row("fast", fake_processes(processes, 100 / fake_factor, 0.5)),
                      row("std", fake_processes(processes, 100, 0)));
}

TEST(Interval, TargetsAreMetMissedOrNotSeparable) {
  const target_check met = check_fake(at_least(1.0), 40);
  EXPECT_TRUE(met.met);
  EXPECT_EQ(met.verdict, "met");
  EXPECT_EQ(met.processes, 40U);
  EXPECT_GT(met.ratio_lo, 1.0);

  const target_check missed = check_fake(at_least(1.5, "p99"), 40);
  EXPECT_FALSE(missed.met);
  EXPECT_EQ(missed.verdict, "missed");
  EXPECT_LT(missed.ratio_hi, 1.5);

  const target_check unclear = check_fake(at_least(1.0), 3);
  EXPECT_FALSE(unclear.met);
  EXPECT_EQ(unclear.verdict, "not separable");
  EXPECT_GT(unclear.processes_needed, 3U);
  EXPECT_NE(unclear.measured.find("not separable at this sample size: about " +
                                  std::to_string(unclear.processes_needed) + " processes"),
            std::string::npos)
      << unclear.measured;
}

TEST(Interval, PoolingProcessesTakesMediansOfTheirMediansAndKeepsEachOne) {
  std::vector<result> parts;
  for (const double p50 : {12.0, 10.0, 30.0}) {
    result r = row("v", {p50});
    r.iterations = 10;
    r.min_us = p50 / 2;
    r.max_us = p50 * 3;
    r.mean_us = p50;
    r.cold_us = p50 * 10;
    r.items_per_iteration = 2;
    r.percentiles_us = {p50 / 2, p50, p50 * 3};
    r.hash.value = 7;
    // Peak RSS: the largest peak above a start, the lightest start, the largest whole peak.
    r.peak_rss_kib = static_cast<std::size_t>(p50 * 100);
    r.start_rss_kib = static_cast<std::size_t>(6000 - p50 * 100);
    r.process_peak_rss_kib = r.start_rss_kib + r.peak_rss_kib + static_cast<std::size_t>(p50);
    parts.push_back(r);
  }
  const result pooled = pool_processes(parts);
  EXPECT_EQ(pooled.processes, 3U);
  EXPECT_EQ(pooled.process_p50_us, (std::vector<double>{12, 10, 30}));
  EXPECT_EQ(pooled.p50_us, 12);
  EXPECT_EQ(pooled.p99_us, 24);
  EXPECT_EQ(pooled.min_us, 5);
  EXPECT_EQ(pooled.max_us, 90);
  EXPECT_EQ(pooled.iterations, 30U);
  EXPECT_NEAR(pooled.mean_us, 52.0 / 3, 1e-12);
  EXPECT_EQ(pooled.cold_us, 120);
  EXPECT_EQ(pooled.percentiles_us, (std::vector<double>{6, 12, 36}));
  EXPECT_NEAR(pooled.process_spread, 20.0 / 12, 1e-12);
  EXPECT_NEAR(pooled.throughput_per_s, 2 * 1e6 / 12, 1e-6);
  EXPECT_TRUE(pooled.hash_ok);
  EXPECT_EQ(pooled.peak_rss_kib, 3000U);
  EXPECT_EQ(pooled.start_rss_kib, 3000U);
  EXPECT_EQ(pooled.process_peak_rss_kib, 6030U);

  parts[1].hash.value = 8; // one process computed something else
  EXPECT_FALSE(pool_processes(parts).hash_ok);
}

TEST(Interval, OneProcessesRowKeepsTheLightestStartAndTheLargestWholePeakOfItsRounds) {
  const workload w{"w", "items", 1, 1, ""};
  std::vector<measurement> rounds(3);
  const std::size_t starts[] = {5000, 4800, 5100};
  const std::size_t peaks[] = {300, 600, 200};
  for (std::size_t i = 0; i < rounds.size(); ++i) {
    rounds[i].samples_us = {1.0};
    rounds[i].start_rss_kib = starts[i];
    rounds[i].peak_rss_kib = peaks[i];
  }
  const result r = summarize(w, "v", rounds);
  EXPECT_EQ(r.peak_rss_kib, 600U);
  EXPECT_EQ(r.start_rss_kib, 4800U);
  EXPECT_EQ(r.process_peak_rss_kib, 5400U); // the second round's 4800 + 600
}

TEST(Interval, CompareRowsGivesEachVariantItsIntervalAndVerdict) {
  std::vector<result> rows{row("std", {100, 101, 99, 100, 102}), row("fast", {50, 51, 49, 50, 52}),
                           row("same", {99, 102, 100, 98, 101})};
  ASSERT_TRUE(compare_rows(rows));
  EXPECT_EQ(rows[0].verdict_vs_std, "");
  EXPECT_EQ(rows[0].speedup_lo, 0);
  EXPECT_EQ(rows[1].verdict_vs_std, "faster");
  EXPECT_NEAR(rows[1].speedup_vs_std, 2, 1e-12);
  EXPECT_LE(rows[1].speedup_lo, 2);
  EXPECT_GE(rows[1].speedup_hi, 2);
  EXPECT_EQ(rows[2].verdict_vs_std, "no clear difference");
}

} // namespace
} // namespace memkit::bench
