// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/batch.cpp: batch mode: selection, the interleaved measurements, the global
// replacements in their own processes, and the outputs.

#include "batch.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/machine.hpp"
#include "core/measure.hpp"
#include "core/registry.hpp"
#include "core/summary.hpp"
#include "output/csv.hpp"
#include "output/json.hpp"
#include "output/markdown.hpp"
#include "output/report.hpp"
#include "output/table.hpp"
#include "output/targets.hpp"
#include "replacement/replacement.hpp"
#include "workloads/workloads.hpp"

namespace memkit::bench {
namespace {

/// A workload is selected by its name or by a prefix ending at a '-': "pairs" selects
/// "pairs-lifo-8" and the rest, "node-lists-list" every list size.
bool selected(const std::vector<std::string>& filters, const std::string& name) {
  if (filters.empty()) {
    return true;
  }
  return std::any_of(filters.begin(), filters.end(), [&](const std::string& f) {
    return name == f || (name.rfind(f, 0) == 0 && name.size() > f.size() && name[f.size()] == '-');
  });
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

template <class T>
std::string join(const std::vector<T>& v) {
  std::ostringstream s;
  for (std::size_t i = 0; i < v.size(); ++i) {
    s << (i == 0 ? "" : ",") << v[i];
  }
  return s.str();
}

/// The arguments that make a child process measure, under the replacement `name`, the std rows
/// of what this one measures, and write them to `json_file`.
std::vector<std::string> child_arguments(const batch_options& o,
                                         const std::vector<std::string>& workloads,
                                         const std::string& name, const std::string& json_file) {
  std::vector<std::string> a{"--as-replacement", name,
                             "--variants",       "std",
                             "--workloads",      join(workloads),
                             "--repeat",         std::to_string(o.repeat)};
  const std::vector<std::string> p = to_arguments(o.p);
  a.insert(a.end(), p.begin(), p.end());
  a.insert(a.end(), {"--json", json_file});
  return a;
}

/// \returns the options of the run as its JSON results record them.
nlohmann::json options_json(const batch_options& o) {
  nlohmann::json j = o.p;
  j["workloads"] = o.workloads;
  j["variants"] = o.variants;
  j["repeat"] = o.repeat;
  return j;
}

void print_list(const registry& reg) {
  std::map<std::string, std::vector<std::string>> variants;
  for (const auto& c : reg.cases()) {
    variants[c.w->name].push_back(c.variant);
  }
  std::set<std::string> shown;
  std::cout
      << "workloads (variants that fit each; every workload with a std row also runs under "
         "the global replacements memkit, mimalloc, jemalloc, tcmalloc and oneTBB's tbbmalloc "
         "proxy):\n";
  for (const auto& c : reg.cases()) {
    if (shown.insert(c.w->name).second) {
      std::cout << "  " << c.w->name << ": " << c.w->description << "\n      "
                << join(variants[c.w->name]) << "\n";
    }
  }
  std::cout << "replacements:";
  for (const auto& r : known_replacements()) {
    std::cout << " " << r.name << " (" << (r.library.empty() ? why_missing(r) : r.library) << ")";
  }
  std::cout << "\n";
}

/// Measures the selected workloads' std rows under each global replacement, inserting the rows
/// after each workload's last row. \returns false if one was requested and failed.
bool measure_under_replacements(const batch_options& o, const std::vector<std::string>& workloads,
                                std::vector<result>& rows) {
  bool ok = true;
  const bool explicit_choice = !o.variants.empty();
  for (const auto& r : known_replacements()) {
    if (explicit_choice && !contains(o.variants, r.name)) {
      continue;
    }
    if (const std::string why = replacements_unavailable_reason(); !why.empty()) {
      std::cerr << "memkit-bench: skipping " << r.name << ": " << why << "\n";
      continue;
    }
    if (r.library.empty()) {
      std::cerr << "memkit-bench: " << (explicit_choice ? "error" : "skipping") << ": " << r.name
                << " is " << why_missing(r) << "\n";
      ok = ok && !explicit_choice;
      continue;
    }
    const std::string file = (std::filesystem::temp_directory_path() /
                              ("memkit-bench-" + std::to_string(getpid()) + "-" + r.name + ".json"))
                                 .string();
    std::cerr << "memkit-bench: running " << r.name
              << " in its own process (LD_PRELOAD=" << r.library << ")\n";
    const int status = run_preloaded(r, child_arguments(o, workloads, r.name, file));
    if (status != 0) {
      std::cerr << "memkit-bench: ERROR: the " << r.name << " process failed (status " << status
                << "); no " << r.name << " rows\n";
      ok = false;
      continue;
    }
    std::ifstream in(file);
    auto child_rows = rows_from_json(nlohmann::json::parse(in));
    std::filesystem::remove(file);
    for (auto& c : child_rows) {
      c.variant = r.name;
      auto last = std::find_if(rows.rbegin(), rows.rend(),
                               [&](const result& x) { return x.workload == c.workload; });
      rows.insert(last.base(), std::move(c));
    }
  }
  return ok;
}

} // namespace

int run_batch(const batch_options& o) {
  run_info info = describe_run();
  info.options = options_json(o);
  if (!info.optimized) {
    std::cerr << "\n!!! memkit-bench: WARNING: built without optimizations (no -O or no NDEBUG). "
                 "Timings are meaningless; build with CMAKE_BUILD_TYPE=Release. !!!\n\n";
  }
  const bool child = !o.as_replacement.empty();
  if (child) {
    if (const std::string why = check_interception(o.as_replacement); !why.empty()) {
      std::cerr << "memkit-bench: ERROR: " << o.as_replacement
                << " did not intercept allocation: " << why << "\n";
      return 3;
    }
    std::cerr << "memkit-bench: " << o.as_replacement
              << " intercepts malloc and operator new (verified through its own API)\n";
  }

  registry reg;
  add_all(reg, o.p);
  std::set<std::string> known;
  for (const auto& c : reg.cases()) {
    known.insert(c.variant);
  }
  for (const auto& v : o.variants) {
    if (known.count(v) == 0 && !is_replacement(v)) {
      std::cerr << "memkit-bench: unknown variant '" << v << "' (see --list)\n";
      return 2;
    }
  }
  if (o.list) {
    print_list(reg);
    return 0;
  }
  std::vector<target> targets;
  if (!child) {
    try {
      targets = load_targets(o.targets_file);
    } catch (const std::exception& e) {
      std::cerr << "memkit-bench: ERROR: " << e.what() << "\n";
      return 2;
    }
  }

  std::vector<const bench_case*> chosen;
  std::vector<std::string> chosen_workloads;
  for (const auto& c : reg.cases()) {
    if (selected(o.workloads, c.w->name) &&
        (o.variants.empty() || contains(o.variants, c.variant))) {
      chosen.push_back(&c);
    }
    if (selected(o.workloads, c.w->name) && c.variant == "std" &&
        !contains(chosen_workloads, c.w->name)) {
      chosen_workloads.push_back(c.w->name);
    }
  }
  if (chosen.empty() && chosen_workloads.empty()) {
    std::cerr << "memkit-bench: no workload matches (see --list)\n";
    return 2;
  }

  std::vector<std::vector<measurement>> measurements(chosen.size());
  const std::size_t total = chosen.size() * o.repeat;
  std::size_t done = 0;
  std::vector<std::string> failed;
  for (unsigned rep = 0; rep < o.repeat; ++rep) {
    for (std::size_t i = 0; i < chosen.size(); ++i) {
      const bench_case& c = *chosen[i];
      const std::size_t n = o.p.iterations != 0 ? o.p.iterations : c.w->iterations;
      const std::string shown = child ? o.as_replacement : c.variant;
      std::fprintf(stderr, "[%4zu/%zu] %-24s %-24s %zu iterations", ++done, total,
                   c.w->name.c_str(), shown.c_str(), n);
      std::string error;
      measurements[i].push_back(measure_in_child(c, n, error));
      if (!error.empty()) {
        std::fprintf(stderr, "  ERROR: %s\n", error.c_str());
        failed.push_back(c.w->name + " / " + shown + ": " + error);
        measurements[i].pop_back();
        continue;
      }
      const auto& m = measurements[i].back();
      auto sorted = m.samples_us;
      std::sort(sorted.begin(), sorted.end());
      std::fprintf(stderr, "  p50 %.2f us\n", sorted.empty() ? 0.0 : sorted[sorted.size() / 2]);
    }
  }
  std::vector<result> rows;
  for (std::size_t i = 0; i < chosen.size(); ++i) {
    if (!measurements[i].empty()) {
      rows.push_back(summarize(*chosen[i]->w, chosen[i]->variant, measurements[i]));
    }
  }

  bool ok = failed.empty();
  for (const auto& f : failed) {
    std::cerr << "memkit-bench: ERROR: " << f << "\n";
  }
  ok = (child || measure_under_replacements(o, chosen_workloads, rows)) && ok;
  if (!compare_rows(rows)) {
    std::cerr << "memkit-bench: ERROR: result hashes disagree (rows marked HASH MISMATCH)\n";
    ok = false;
  }
  if (!child) {
    print_tables(std::cout, rows, info);
  }
  const std::vector<target_check> checks = check_targets(targets, rows);
  if (!child) {
    print_targets(std::cout, checks);
  }
  const nlohmann::json doc = to_json(rows, info, checks);
  if (!o.json_file.empty()) {
    std::ofstream(o.json_file) << doc.dump(1) << "\n";
  }
  if (!o.markdown_file.empty()) {
    std::ofstream(o.markdown_file) << markdown_summary(doc);
  }
  if (!o.csv_file.empty()) {
    std::ofstream out(o.csv_file);
    write_csv(out, rows, info.optimized);
  }
  if (!o.report_dir.empty()) {
    if (const std::string error = write_report(o.report_dir, doc); !error.empty()) {
      std::cerr << "memkit-bench: ERROR: " << error << "\n";
      ok = false;
    } else {
      std::cerr << "memkit-bench: report in " << o.report_dir << "/index.html\n";
    }
  }
  return ok ? 0 : 1;
}

} // namespace memkit::bench
