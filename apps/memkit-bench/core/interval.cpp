// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/core/interval.cpp: the percentile bootstrap over per-process medians, and the
// verdicts drawn from its intervals.

#include "core/interval.hpp"

#include <algorithm>
#include <cmath>

#include "memkit_bench/random.hpp"

namespace memkit::bench {
namespace {

/// \returns `v` resampled with replacement into `out` (same size).
void resample(const std::vector<double>& v, rng& g, std::vector<double>& out) {
  for (double& x : out) {
    x = v[g.next() % v.size()];
  }
}

/// \returns the value below which a fraction `q` of `sorted` lies (linear between ranks).
double quantile(const std::vector<double>& sorted, double q) {
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const auto below = static_cast<std::size_t>(std::floor(pos));
  const std::size_t above = std::min(below + 1, sorted.size() - 1);
  const double t = pos - static_cast<double>(below);
  return sorted[below] * (1 - t) + sorted[above] * t;
}

} // namespace

double median(std::vector<double> v) {
  if (v.empty()) {
    return 0;
  }
  const std::size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  const double upper = v[mid];
  if (v.size() % 2 == 1) {
    return upper;
  }
  return (*std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid)) + upper) / 2;
}

ratio_interval speedup_interval(const std::vector<double>& baseline,
                                const std::vector<double>& candidate, std::uint64_t seed,
                                std::size_t resamples) {
  ratio_interval r;
  r.processes = std::min(baseline.size(), candidate.size());
  const double c = median(candidate);
  if (c <= 0) {
    return r;
  }
  r.ratio = median(baseline) / c;
  if (r.processes < 2 || resamples == 0) {
    return r;
  }
  rng g(seed);
  std::vector<double> b_star(baseline.size());
  std::vector<double> c_star(candidate.size());
  std::vector<double> ratios;
  ratios.reserve(resamples);
  for (std::size_t i = 0; i < resamples; ++i) {
    resample(baseline, g, b_star);
    resample(candidate, g, c_star);
    if (const double m = median(c_star); m > 0) {
      ratios.push_back(median(b_star) / m);
    }
  }
  if (ratios.empty()) {
    return r;
  }
  std::sort(ratios.begin(), ratios.end());
  const double tail = (1 - interval_level) / 2;
  r.lo = quantile(ratios, tail);
  r.hi = quantile(ratios, 1 - tail);
  return r;
}

ratio_interval paired_interval(const std::vector<double>& ratios, std::uint64_t seed,
                               std::size_t resamples) {
  ratio_interval r;
  r.processes = ratios.size();
  r.ratio = median(ratios);
  if (r.processes < 2 || resamples == 0 || r.ratio <= 0) {
    return r;
  }
  rng g(seed);
  std::vector<double> star(ratios.size());
  std::vector<double> medians(resamples);
  for (double& m : medians) {
    resample(ratios, g, star);
    m = median(star);
  }
  std::sort(medians.begin(), medians.end());
  const double tail = (1 - interval_level) / 2;
  r.lo = quantile(medians, tail);
  r.hi = quantile(medians, 1 - tail);
  return r;
}

ratio_interval geomean_interval(const std::vector<ratio_sides>& workloads, std::uint64_t seed,
                                std::size_t resamples) {
  ratio_interval r;
  if (workloads.empty()) {
    return r;
  }
  r.processes = static_cast<std::size_t>(-1);
  double log_sum = 0;
  for (const ratio_sides& w : workloads) {
    r.processes = std::min({r.processes, w.baseline->size(), w.candidate->size()});
    const double b = median(*w.baseline);
    const double c = median(*w.candidate);
    if (b <= 0 || c <= 0) {
      return ratio_interval{};
    }
    log_sum += std::log(b / c);
  }
  const auto n = static_cast<double>(workloads.size());
  r.ratio = std::exp(log_sum / n);
  if (r.processes < 2 || resamples == 0) {
    return r;
  }
  rng g(seed);
  std::vector<double> b_star;
  std::vector<double> c_star;
  std::vector<double> ratios;
  ratios.reserve(resamples);
  for (std::size_t i = 0; i < resamples; ++i) {
    double sum = 0;
    for (const ratio_sides& w : workloads) {
      b_star.resize(w.baseline->size());
      c_star.resize(w.candidate->size());
      resample(*w.baseline, g, b_star);
      resample(*w.candidate, g, c_star);
      sum += std::log(median(b_star) / median(c_star));
    }
    ratios.push_back(std::exp(sum / n));
  }
  std::sort(ratios.begin(), ratios.end());
  const double tail = (1 - interval_level) / 2;
  r.lo = quantile(ratios, tail);
  r.hi = quantile(ratios, 1 - tail);
  return r;
}

verdict judge(const ratio_interval& r, double bar, bool inclusive) {
  if (!r.known()) {
    return verdict::not_separable;
  }
  if (inclusive ? r.lo >= bar : r.lo > bar) {
    return verdict::above;
  }
  if (r.hi < bar) {
    return verdict::below;
  }
  return verdict::not_separable;
}

std::size_t processes_to_separate(const ratio_interval& r, double bar) {
  if (!r.known() || r.ratio <= 0 || bar <= 0 || r.ratio == bar) {
    return 0;
  }
  const double distance = std::abs(std::log(r.ratio) - std::log(bar));
  const double half_width =
      r.ratio > bar ? std::log(r.ratio) - std::log(r.lo) : std::log(r.hi) - std::log(r.ratio);
  const double scale = half_width / distance;
  return std::max<std::size_t>(
      r.processes + 1,
      static_cast<std::size_t>(std::ceil(static_cast<double>(r.processes) * scale * scale)));
}

std::string speed_verdict(const ratio_interval& r) {
  switch (judge(r, 1.0)) {
  case verdict::above:
    return "faster";
  case verdict::below:
    return "slower";
  case verdict::not_separable:
    break;
  }
  return "no clear difference";
}

} // namespace memkit::bench
