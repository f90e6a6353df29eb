// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/core/summary.cpp: summaries of measurements and the checks across rows.

#include "summary.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include <nlohmann/json.hpp>

#include "core/interval.hpp"

namespace memkit::bench {
namespace {

/// (largest - smallest) / median: how far apart the processes' medians lie.
double spread(const std::vector<double>& v) {
  const double m = median(v);
  if (v.size() < 2 || m <= 0) {
    return 0;
  }
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  return (*hi - *lo) / m;
}

} // namespace

std::string to_string(hash_code h) {
  char buf[19];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(h.value));
  return buf;
}

void to_json(nlohmann::json& j, hash_code h) { j = to_string(h); }

void from_json(const nlohmann::json& j, hash_code& h) {
  h.value = std::stoull(j.get<std::string>(), nullptr, 16);
}

double percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) {
    return 0;
  }
  const auto rank =
      static_cast<std::size_t>(std::ceil(q / 100.0 * static_cast<double>(sorted.size())));
  return sorted[rank == 0 ? 0 : std::min(rank, sorted.size()) - 1];
}

result summarize(const workload& w, const std::string& variant, std::vector<measurement>& ms) {
  result r;
  r.workload = w.name;
  r.variant = variant;
  r.unit = w.unit;
  r.items_per_iteration = w.items;
  std::vector<double> all;
  std::vector<double> colds;
  r.start_rss_kib = ms.empty() ? 0 : ms.front().start_rss_kib;
  for (auto& m : ms) {
    all.insert(all.end(), m.samples_us.begin(), m.samples_us.end());
    colds.push_back(m.cold_us);
    r.peak_rss_kib = std::max(r.peak_rss_kib, m.peak_rss_kib);
    r.start_rss_kib = std::min(r.start_rss_kib, m.start_rss_kib);
    r.process_peak_rss_kib = std::max(r.process_peak_rss_kib, m.start_rss_kib + m.peak_rss_kib);
    r.hash_ok = r.hash_ok && m.consistent && m.hash == ms.front().hash;
  }
  r.hash.value = ms.empty() ? 0 : ms.front().hash;
  r.note = ms.empty() ? "" : ms.back().note;
  r.cold_us = median(colds);
  std::sort(all.begin(), all.end());
  r.iterations = all.size();
  if (!all.empty()) {
    r.min_us = all.front();
    r.max_us = all.back();
    r.p50_us = percentile(all, 50);
    r.p99_us = percentile(all, 99);
    double sum = 0;
    for (const double x : all) {
      sum += x;
    }
    r.mean_us = sum / static_cast<double>(all.size());
    r.throughput_per_s = r.p50_us > 0 ? r.items_per_iteration * 1e6 / r.p50_us : 0;
    for (int q = 0; q <= 100; ++q) {
      r.percentiles_us.push_back(percentile(all, q));
    }
    r.processes = 1;
    r.process_p50_us = {r.p50_us};
    r.process_p99_us = {r.p99_us};
  }
  return r;
}

result pool_processes(const std::vector<result>& parts) {
  result r = parts.front();
  r.process_p50_us.clear();
  r.process_p99_us.clear();
  r.processes = 0;
  r.iterations = 0;
  double sum = 0;
  std::vector<double> colds;
  std::vector<std::vector<double>> percentiles(r.percentiles_us.size());
  for (const auto& p : parts) {
    r.process_p50_us.insert(r.process_p50_us.end(), p.process_p50_us.begin(),
                            p.process_p50_us.end());
    r.process_p99_us.insert(r.process_p99_us.end(), p.process_p99_us.begin(),
                            p.process_p99_us.end());
    r.processes += p.processes;
    r.iterations += p.iterations;
    sum += p.mean_us * static_cast<double>(p.iterations);
    colds.push_back(p.cold_us);
    r.min_us = std::min(r.min_us, p.min_us);
    r.max_us = std::max(r.max_us, p.max_us);
    r.peak_rss_kib = std::max(r.peak_rss_kib, p.peak_rss_kib);
    r.start_rss_kib = std::min(r.start_rss_kib, p.start_rss_kib);
    r.process_peak_rss_kib = std::max(r.process_peak_rss_kib, p.process_peak_rss_kib);
    r.hash_ok = r.hash_ok && p.hash_ok && p.hash == r.hash;
    for (std::size_t q = 0; q < percentiles.size() && q < p.percentiles_us.size(); ++q) {
      percentiles[q].push_back(p.percentiles_us[q]);
    }
    r.note = p.note;
  }
  r.cold_us = median(colds);
  r.p50_us = median(r.process_p50_us);
  r.p99_us = median(r.process_p99_us);
  r.mean_us = r.iterations > 0 ? sum / static_cast<double>(r.iterations) : 0;
  r.throughput_per_s = r.p50_us > 0 ? r.items_per_iteration * 1e6 / r.p50_us : 0;
  for (std::size_t q = 0; q < percentiles.size(); ++q) {
    r.percentiles_us[q] = median(percentiles[q]);
  }
  r.process_spread = spread(r.process_p50_us);
  return r;
}

bool compare_rows(std::vector<result>& rows) {
  std::map<std::string, const result*> reference;
  for (const auto& r : rows) {
    auto& ref = reference[r.workload];
    if (ref == nullptr || (r.variant == "std" && ref->variant != "std")) {
      ref = &r;
    }
  }
  struct reference_values {
    bool is_std;
    std::vector<double> p50s;
    hash_code hash;
  };
  std::map<std::string, reference_values> ref_values;
  for (const auto& [w, r] : reference) {
    ref_values[w] = {r->variant == "std", r->process_p50_us, r->hash};
  }
  bool ok = true;
  for (auto& r : rows) {
    const reference_values& ref = ref_values[r.workload];
    const ratio_interval s =
        ref.is_std ? speedup_interval(ref.p50s, r.process_p50_us) : ratio_interval{};
    r.speedup_vs_std = s.ratio;
    const bool baseline = r.variant == "std";
    r.speedup_lo = baseline ? 0 : s.lo;
    r.speedup_hi = baseline ? 0 : s.hi;
    r.verdict_vs_std = baseline || s.ratio == 0 ? "" : speed_verdict(s);
    r.hash_ok = r.hash_ok && r.hash == ref.hash;
    ok = ok && r.hash_ok;
  }
  return ok;
}

} // namespace memkit::bench
