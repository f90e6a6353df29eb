// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/core/summary.cpp: summaries of measurements and the checks across rows.

#include "summary.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <utility>

#include <nlohmann/json.hpp>

namespace memkit::bench {
namespace {

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return percentile(v, 50);
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
  for (auto& m : ms) {
    all.insert(all.end(), m.samples_us.begin(), m.samples_us.end());
    colds.push_back(m.cold_us);
    r.peak_rss_kib = std::max(r.peak_rss_kib, m.peak_rss_kib);
    r.hash_ok = r.hash_ok && m.consistent && m.hash == ms.front().hash;
  }
  r.hash.value = ms.empty() ? 0 : ms.front().hash;
  r.note = ms.empty() ? "" : ms.back().note;
  r.cold_us = median_of(colds);
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
  }
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
  std::map<std::string, std::pair<double, hash_code>> ref_values;
  for (const auto& [w, r] : reference) {
    ref_values[w] = {r->variant == "std" ? r->p50_us : 0.0, r->hash};
  }
  bool ok = true;
  for (auto& r : rows) {
    const auto [std_p50, hash] = ref_values[r.workload];
    r.speedup_vs_std = std_p50 > 0 && r.p50_us > 0 ? std_p50 / r.p50_us : 0;
    r.hash_ok = r.hash_ok && r.hash == hash;
    ok = ok && r.hash_ok;
  }
  return ok;
}

} // namespace memkit::bench
