// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/tests/measure_test.cpp: a measurement charges its own timings nothing in the
// workload's peak resident memory; measurements in children of the zygote (core/measure.hpp): each
// child starts from the state the zygote was forked in, not from what the measuring process did
// since; a large measurement comes back whole; a child that crashes or fails is reported as such
// and the next one is measured as usual; a zygote that died, on every later measurement.

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include <signal.h>
#include <unistd.h>

#include "core/measure.hpp"
#include "core/registry.hpp"

namespace memkit::bench {
namespace {

/// Changed by the measuring process after its zygote is made.
int later_value = 0;

const workload test_workload{"zygote-test", "calls", 1, 1, ""};

bench_case make_case(std::function<measurement(std::size_t, bool)> f) {
  return bench_case{&test_workload, "test", std::move(f)};
}

/// A policy that allocates nothing.
struct idle_policy {
  explicit idle_policy(const hint&) noexcept {}
  void recycle() noexcept {}
};

TEST(Measure, ChargesItsOwnTimingsNothingInTheWorkloadsPeak) {
  // 3,125 KiB of timings, resident before the resident memory is read, so not in the peak.
  const std::size_t iterations = 400'000;
  const measurement m = measure<idle_policy>(
      hint{}, iterations, [](idle_policy&, std::string&) { return std::uint64_t{1}; }, true);
  ASSERT_EQ(m.samples_us.size(), iterations);
  EXPECT_TRUE(m.consistent);
  EXPECT_LT(m.peak_rss_kib, 1024u) << "the timings were counted as the workload's memory";
}

TEST(Zygote, AChildStartsFromTheStateTheZygoteWasMadeInNotTheCallersLaterOne) {
  const bench_case sees = make_case([](std::size_t, bool) {
    measurement m;
    m.note = std::to_string(later_value);
    return m;
  });
  const std::vector<const bench_case*> cases{&sees};
  later_value = 1;
  zygote children(cases);
  later_value = 2; // what the caller's heap holds after the zygote is made
  std::string error;
  const measurement m = children.measure(0, 1, error);
  EXPECT_EQ(error, "");
  EXPECT_EQ(m.note, "1");
  EXPECT_EQ(children.measure(0, 1, error).note, "1") << "every child alike, not only the first";
}

TEST(Zygote, AMeasurementLargerThanAPipeHoldsComesBackWhole) {
  const bench_case many = make_case([](std::size_t n, bool) {
    measurement m;
    for (std::size_t i = 0; i < n; ++i) {
      m.samples_us.push_back(static_cast<double>(i));
    }
    m.note = std::string(70'000, 'x');
    m.hash = 0x5eed;
    m.peak_rss_kib = 123;
    m.start_rss_kib = 4567;
    return m;
  });
  const std::vector<const bench_case*> cases{&many};
  zygote children(cases);
  std::string error;
  const std::size_t n = 200'000; // 1.6 MB of samples
  const measurement m = children.measure(0, n, error);
  EXPECT_EQ(error, "");
  ASSERT_EQ(m.samples_us.size(), n);
  EXPECT_EQ(m.samples_us.back(), static_cast<double>(n - 1));
  EXPECT_EQ(m.note.size(), 70'000u);
  EXPECT_EQ(m.hash, 0x5eedu);
  EXPECT_EQ(m.peak_rss_kib, 123u);
  EXPECT_EQ(m.start_rss_kib, 4567u);
}

TEST(Zygote, AChildThatCrashesOrThrowsIsReportedAndTheNextIsMeasured) {
  const bench_case crashes = make_case([](std::size_t, bool) -> measurement { std::abort(); });
  const bench_case throws = make_case(
      [](std::size_t, bool) -> measurement { throw std::runtime_error("workload failed"); });
  const bench_case works = make_case([](std::size_t, bool) {
    measurement m;
    m.hash = 7;
    return m;
  });
  const std::vector<const bench_case*> cases{&crashes, &throws, &works};
  zygote children(cases);
  std::string error;
  children.measure(0, 1, error);
  EXPECT_EQ(error, "killed by signal 6");
  error.clear();
  children.measure(1, 1, error);
  EXPECT_EQ(error, "the measuring process failed");
  error.clear();
  EXPECT_EQ(children.measure(2, 1, error).hash, 7u);
  EXPECT_EQ(error, "");
}

TEST(Zygote, AZygoteThatDiedIsReportedOnEveryLaterMeasurement) {
  const bench_case kills_the_zygote = make_case([](std::size_t, bool) -> measurement {
    kill(getppid(), SIGKILL);
    return measurement{};
  });
  const std::vector<const bench_case*> cases{&kills_the_zygote};
  zygote children(cases);
  std::string error;
  children.measure(0, 1, error);
  EXPECT_EQ(error, "the zygote is gone");
  error.clear();
  children.measure(0, 1, error); // a write to the dead zygote's pipe: no SIGPIPE
  EXPECT_EQ(error, "the zygote is gone");
}

} // namespace
} // namespace memkit::bench
