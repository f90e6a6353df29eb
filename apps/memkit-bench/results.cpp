// apps/memkit-bench/results.cpp: summaries, the tables, JSON and CSV.

#include "results.hpp"

#include <sys/utsname.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <map>
#include <ostream>
#include <sstream>
#include <thread>

#include <memkit/huge_page.hpp>

namespace memkit::bench {
namespace {

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return percentile(v, 50);
}

std::string hex(std::uint64_t h) {
  char buf[19];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::uint64_t from_hex(const std::string& s) { return std::stoull(s, nullptr, 16); }

std::string first_line_with(const char* path, const std::string& key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) {
      const auto colon = line.find(':');
      return colon == std::string::npos ? line
                                        : line.substr(line.find_first_not_of(" \t", colon + 1));
    }
  }
  return "unknown";
}

/// Fixed-point with `digits` decimals, or "-" for 0 (not applicable).
std::string fixed(double v, int digits) {
  if (v == 0) {
    return "-";
  }
  std::ostringstream s;
  s << std::fixed << std::setprecision(digits) << v;
  return s.str();
}

std::string thousands(double v) {
  const std::string digits = std::to_string(static_cast<long long>(std::llround(v)));
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i != 0 && (digits.size() - i) % 3 == 0) {
      out += ',';
    }
    out += digits[i];
  }
  return out;
}

} // namespace

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
  r.items = w.items;
  std::vector<double> all;
  std::vector<double> colds;
  for (auto& m : ms) {
    all.insert(all.end(), m.samples_us.begin(), m.samples_us.end());
    colds.push_back(m.cold_us);
    r.peak_rss_kib = std::max(r.peak_rss_kib, m.peak_rss_kib);
    r.hash_ok = r.hash_ok && m.consistent && m.hash == ms.front().hash;
  }
  r.hash = ms.empty() ? 0 : ms.front().hash;
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
    r.throughput_per_s = r.p50_us > 0 ? r.items * 1e6 / r.p50_us : 0;
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
  std::map<std::string, std::pair<double, std::uint64_t>> ref_values;
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

run_info describe_run() {
  run_info info;
  info.optimized = built_optimized();
#if defined(__clang__)
  info.compiler = "clang " __clang_version__;
#elif defined(__GNUC__)
  info.compiler = "gcc " __VERSION__;
#endif
  info.cpu = first_line_with("/proc/cpuinfo", "model name");
  info.cores = std::thread::hardware_concurrency();
  utsname u{};
  if (uname(&u) == 0) {
    info.kernel = std::string(u.sysname) + " " + u.release;
  }
  switch (huge_page_resource::transparent_huge_page_policy()) {
  case thp_policy::always:
    info.thp_policy = "always";
    break;
  case thp_policy::madvise:
    info.thp_policy = "madvise";
    break;
  case thp_policy::never:
    info.thp_policy = "never";
    break;
  default:
    info.thp_policy = "unavailable";
    break;
  }
  return info;
}

void print_tables(std::ostream& out, const std::vector<result>& rows, const run_info& info) {
  out << "memkit-bench on " << info.cpu << " (" << info.cores << " cores), " << info.kernel << ", "
      << info.compiler << "\n";
  if (!info.optimized) {
    out << "!!! UNOPTIMIZED BUILD (no -O or no NDEBUG): these figures say nothing about speed "
           "!!!\n";
  }
  std::string current;
  for (const auto& r : rows) {
    if (r.workload != current) {
      current = r.workload;
      out << "\n== " << r.workload << (info.optimized ? "" : "  [UNOPTIMIZED]")
          << "  (times per iteration in us, throughput in " << r.unit
          << "/s, +peak: peak RSS above the start)\n";
      out << std::left << std::setw(24) << "variant" << std::right << std::setw(10) << "cold"
          << std::setw(10) << "min" << std::setw(10) << "p50" << std::setw(10) << "p99"
          << std::setw(10) << "max" << std::setw(15) << "throughput" << std::setw(8) << "vs std"
          << std::setw(11) << "+peak KiB"
          << "  " << std::left << std::setw(20) << "hash"
          << "note\n";
    }
    const int digits = r.p50_us < 100 ? 2 : 0;
    out << std::left << std::setw(24) << r.variant << std::right << std::setw(10)
        << fixed(r.cold_us, digits) << std::setw(10) << fixed(r.min_us, digits) << std::setw(10)
        << fixed(r.p50_us, digits) << std::setw(10) << fixed(r.p99_us, digits) << std::setw(10)
        << fixed(r.max_us, digits) << std::setw(15) << thousands(r.throughput_per_s) << std::setw(8)
        << (r.speedup_vs_std > 0 ? fixed(r.speedup_vs_std, 2) + "x" : "-") << std::setw(11)
        << r.peak_rss_kib << "  " << std::left << std::setw(20)
        << (r.hash_ok ? hex(r.hash) : hex(r.hash) + "!") << r.note
        << (r.hash_ok ? "" : "  HASH MISMATCH") << "\n";
  }
}

std::vector<target_check> check_targets(const std::vector<result>& rows) {
  auto find = [&](const std::string& workload, const std::string& variant) -> const result* {
    for (const auto& r : rows) {
      if (r.workload == workload && r.variant == variant) {
        return &r;
      }
    }
    return nullptr;
  };
  auto best_memkit = [&](const std::string& workload) -> const result* {
    const result* best = nullptr;
    for (const auto& r : rows) {
      if (r.workload == workload && r.variant.rfind("memkit-", 0) == 0 &&
          (best == nullptr || r.p50_us < best->p50_us)) {
        best = &r;
      }
    }
    return best;
  };
  std::vector<target_check> out;
  auto ratio = [&](const std::string& workload, double wanted) {
    const result* best = best_memkit(workload);
    if (best == nullptr || find(workload, "std") == nullptr) {
      return;
    }
    out.push_back({workload + ": best memkit variant at least " + fixed(wanted, 1) + "x std at p50",
                   best->speedup_vs_std >= wanted,
                   best->variant + " " + fixed(best->speedup_vs_std, 2) + "x"});
  };
  ratio("json-tree", 1.6);
  if (const result* best = best_memkit("json-tree"); best != nullptr) {
    if (const result* seed = find("json-tree", "pmr-monotonic-sync-pool"); seed != nullptr) {
      out.push_back({"json-tree: best memkit variant ahead of seed 003's pmr configuration at p50",
                     best->p50_us < seed->p50_us,
                     best->variant + " " + fixed(best->p50_us, 2) + " us vs " +
                         fixed(seed->p50_us, 2) + " us"});
    }
    if (const result* std_row = find("json-tree", "std"); std_row != nullptr) {
      out.push_back({"json-tree: its p99 no worse than std's", best->p99_us <= std_row->p99_us,
                     best->variant + " " + fixed(best->p99_us, 2) + " us vs std " +
                         fixed(std_row->p99_us, 2) + " us"});
    }
  }
  ratio("vector-strings-native", 1.5);
  ratio("list-1m", 1.8);
  ratio("containers-map", 1.3);
  return out;
}

void print_targets(std::ostream& out, const std::vector<target_check>& targets) {
  if (targets.empty()) {
    return;
  }
  out << "\n== speed targets (issue 5; one run, medians)\n";
  for (const auto& t : targets) {
    out << (t.met ? "  met     " : "  MISSED  ") << t.target << ": " << t.measured << "\n";
  }
}

nlohmann::json record_json(const result& r) {
  return {{"workload", r.workload},
          {"variant", r.variant},
          {"unit", r.unit},
          {"items_per_iteration", r.items},
          {"iterations", r.iterations},
          {"cold_us", r.cold_us},
          {"min_us", r.min_us},
          {"p50_us", r.p50_us},
          {"p99_us", r.p99_us},
          {"max_us", r.max_us},
          {"mean_us", r.mean_us},
          {"throughput_per_s", r.throughput_per_s},
          {"speedup_vs_std", r.speedup_vs_std},
          {"peak_rss_kib", r.peak_rss_kib},
          {"hash", hex(r.hash)},
          {"hash_ok", r.hash_ok},
          {"percentiles_us", r.percentiles_us},
          {"note", r.note}};
}

nlohmann::json to_json(const std::vector<result>& rows, const run_info& info) {
  nlohmann::json doc;
  doc["schema"] = schema_version;
  doc["tool"] = "memkit-bench";
  doc["optimized"] = info.optimized;
  doc["machine"] = {{"cpu", info.cpu},
                    {"cores", info.cores},
                    {"kernel", info.kernel},
                    {"thp_policy", info.thp_policy},
                    {"compiler", info.compiler}};
  doc["options"] = info.options;
  auto& targets = doc["targets"] = nlohmann::json::array();
  for (const auto& t : check_targets(rows)) {
    targets.push_back({{"target", t.target}, {"met", t.met}, {"measured", t.measured}});
  }
  auto& out = doc["results"] = nlohmann::json::array();
  for (const auto& r : rows) {
    out.push_back(record_json(r));
  }
  return doc;
}

std::vector<result> rows_from_json(const nlohmann::json& doc) {
  std::vector<result> rows;
  for (const auto& j : doc.at("results")) {
    result r;
    j.at("workload").get_to(r.workload);
    j.at("variant").get_to(r.variant);
    j.at("unit").get_to(r.unit);
    j.at("items_per_iteration").get_to(r.items);
    j.at("iterations").get_to(r.iterations);
    j.at("cold_us").get_to(r.cold_us);
    j.at("min_us").get_to(r.min_us);
    j.at("p50_us").get_to(r.p50_us);
    j.at("p99_us").get_to(r.p99_us);
    j.at("max_us").get_to(r.max_us);
    j.at("mean_us").get_to(r.mean_us);
    j.at("throughput_per_s").get_to(r.throughput_per_s);
    j.at("peak_rss_kib").get_to(r.peak_rss_kib);
    r.hash = from_hex(j.at("hash").get<std::string>());
    j.at("hash_ok").get_to(r.hash_ok);
    j.at("percentiles_us").get_to(r.percentiles_us);
    j.at("note").get_to(r.note);
    rows.push_back(std::move(r));
  }
  return rows;
}

void write_csv(std::ostream& out, const std::vector<result>& rows, bool optimized) {
  out << "workload,variant,unit,iterations,cold_us,min_us,p50_us,p99_us,max_us,mean_us,"
         "throughput_per_s,speedup_vs_std,peak_rss_kib,hash,hash_ok,optimized,note\n";
  for (const auto& r : rows) {
    std::string note = r.note;
    std::replace(note.begin(), note.end(), '"', '\'');
    out << r.workload << ',' << r.variant << ',' << r.unit << ',' << r.iterations << ','
        << r.cold_us << ',' << r.min_us << ',' << r.p50_us << ',' << r.p99_us << ',' << r.max_us
        << ',' << r.mean_us << ',' << r.throughput_per_s << ',' << r.speedup_vs_std << ','
        << r.peak_rss_kib << ',' << hex(r.hash) << ',' << (r.hash_ok ? "true" : "false") << ','
        << (optimized ? "true" : "false") << ",\"" << note << "\"\n";
  }
}

} // namespace memkit::bench
