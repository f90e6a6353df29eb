// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/batch.cpp: batch mode: selection, the processes (each group of variants
// re-executed several times, interleaved), the pooling of their rows, and the outputs.

#include "batch.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/interval.hpp"
#include "core/machine.hpp"
#include "core/measure.hpp"
#include "core/registry.hpp"
#include "core/spawn.hpp"
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

/// A group of variants measured together in one child process: the in-process ones (no
/// library), or the std rows under one global replacement.
struct group {
  std::string name; ///< the replacement, "" for the in-process variants
  std::string library;
};

/// The arguments that make a child process measure its group's slice of what this one measures
/// and write the rows to `json_file`.
std::vector<std::string> child_arguments(const batch_options& o, const group& g,
                                         const std::vector<std::string>& workloads,
                                         const std::string& json_file) {
  std::vector<std::string> a;
  if (g.name.empty()) {
    a.push_back("--as-child");
    if (!o.workloads.empty()) {
      a.insert(a.end(), {"--workloads", join(o.workloads)});
    }
    std::vector<std::string> in_process;
    std::copy_if(o.variants.begin(), o.variants.end(), std::back_inserter(in_process),
                 [](const std::string& v) { return !is_replacement(v); });
    if (!in_process.empty()) {
      a.insert(a.end(), {"--variants", join(in_process)});
    }
  } else {
    a.insert(a.end(),
             {"--as-replacement", g.name, "--variants", "std", "--workloads", join(workloads)});
  }
  a.insert(a.end(), {"--repeat", std::to_string(o.repeat)});
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
  j["processes"] = o.processes;
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

/// \returns the replacements to run: every available one, or those `o.variants` names. Sets `ok`
/// to false if a replacement named is missing.
std::vector<group> replacement_groups(const batch_options& o, bool& ok) {
  std::vector<group> groups;
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
    groups.push_back({r.name, r.library});
  }
  return groups;
}

using row_key = std::pair<std::string, std::string>; // workload, variant

/// Runs `o.processes` processes of every group, interleaved (A B C A B C ...), each with a fresh
/// layout draw, and collects each (workload, variant)'s rows, one per process. \returns false if
/// a process failed.
bool measure_in_processes(const batch_options& o, const std::vector<group>& groups,
                          const std::vector<std::string>& workloads,
                          std::map<row_key, std::vector<result>>& parts) {
  bool ok = true;
  std::random_device layout_seed; // layouts are drawn, not replayed: ASLR is not seeded either
  std::uniform_int_distribution<std::size_t> padding(0, max_padding);
  for (unsigned p = 0; p < o.processes; ++p) {
    for (const auto& g : groups) {
      const std::string shown = g.name.empty() ? "the in-process variants" : g.name;
      const std::string file =
          (std::filesystem::temp_directory_path() /
           ("memkit-bench-" + std::to_string(getpid()) + "-" + std::to_string(p) + "-" +
            (g.name.empty() ? "in-process" : g.name) + ".json"))
              .string();
      const std::size_t pad = padding(layout_seed);
      std::cerr << "memkit-bench: process " << p + 1 << "/" << o.processes << ": " << shown
                << (g.library.empty() ? "" : " (LD_PRELOAD=" + g.library + ")") << ", "
                << padding_variable << " of " << pad << " bytes\n";
      const int status = run_self(child_arguments(o, g, workloads, file), g.library, pad);
      if (status != 0) {
        std::cerr << "memkit-bench: ERROR: process " << p + 1 << " of " << shown
                  << " failed (status " << status << ")\n";
        ok = false;
      }
      // A process that failed after measuring wrote the rows that succeeded; one that failed
      // before (or was killed while writing) left no file, or a file that does not parse.
      std::ifstream in(file);
      if (!in) {
        continue;
      }
      try {
        for (auto& row : rows_from_json(nlohmann::json::parse(in))) {
          if (!g.name.empty()) {
            row.variant = g.name;
          }
          parts[{row.workload, row.variant}].push_back(std::move(row));
        }
      } catch (const std::exception& e) {
        std::cerr << "memkit-bench: ERROR: the rows of process " << p + 1 << " of " << shown << ": "
                  << e.what() << "\n";
        ok = false;
      }
      std::filesystem::remove(file);
    }
  }
  return ok;
}

/// \returns the pooled rows: the in-process variants in registration order, each replacement's
/// after its workload's last row.
std::vector<result> pooled_rows(const std::vector<const bench_case*>& chosen,
                                const std::vector<group>& groups,
                                const std::vector<std::string>& workloads,
                                const std::map<row_key, std::vector<result>>& parts) {
  std::vector<result> rows;
  for (const bench_case* c : chosen) {
    if (const auto it = parts.find({c->w->name, c->variant}); it != parts.end()) {
      rows.push_back(pool_processes(it->second));
    }
  }
  for (const auto& g : groups) {
    for (const auto& w : workloads) {
      const auto it = parts.find({w, g.name});
      if (g.name.empty() || it == parts.end()) {
        continue;
      }
      auto last = std::find_if(rows.rbegin(), rows.rend(),
                               [&](const result& x) { return x.workload == w; });
      rows.insert(last.base(), pool_processes(it->second));
    }
  }
  return rows;
}

/// The child's part: measures `chosen` in `o.repeat` interleaved rounds and writes the rows of
/// this one process to --json, those that failed left out. \returns the exit status.
int measure_slice(const batch_options& o, const run_info& info,
                  const std::vector<const bench_case*>& chosen) {
  std::vector<std::vector<measurement>> measurements(chosen.size());
  const std::size_t total = chosen.size() * o.repeat;
  std::size_t done = 0;
  std::vector<std::string> failed;
  zygote children(chosen);
  for (unsigned rep = 0; rep < o.repeat; ++rep) {
    for (std::size_t i = 0; i < chosen.size(); ++i) {
      const bench_case& c = *chosen[i];
      const std::size_t n =
          o.p.iterations != 0 ? o.p.iterations : iterations_per_process(c.w->iterations);
      const std::string shown = o.as_replacement.empty() ? c.variant : o.as_replacement;
      std::fprintf(stderr, "[%4zu/%zu] %-24s %-24s %zu iterations", ++done, total,
                   c.w->name.c_str(), shown.c_str(), n);
      std::string error;
      measurements[i].push_back(children.measure(i, n, error));
      if (!error.empty()) {
        std::fprintf(stderr, "  ERROR: %s\n", error.c_str());
        failed.push_back(c.w->name + " / " + shown + ": " + error);
        measurements[i].pop_back();
        continue;
      }
      std::fprintf(stderr, "  p50 %.2f us\n", median(measurements[i].back().samples_us));
    }
  }
  std::vector<result> rows;
  for (std::size_t i = 0; i < chosen.size(); ++i) {
    if (!measurements[i].empty()) {
      rows.push_back(summarize(*chosen[i]->w, chosen[i]->variant, measurements[i]));
    }
  }
  for (const auto& f : failed) {
    std::cerr << "memkit-bench: ERROR: " << f << "\n";
  }
  if (!o.json_file.empty()) {
    std::ofstream(o.json_file) << to_json(rows, info, {}).dump(1) << "\n";
  }
  return failed.empty() ? 0 : 1;
}

} // namespace

int run_batch(const batch_options& o) {
  run_info info = describe_run();
  info.options = options_json(o);
  const bool child = o.as_child || !o.as_replacement.empty();
  if (!info.optimized && !child) {
    std::cerr << "\n!!! memkit-bench: WARNING: built without optimizations (no -O or no NDEBUG). "
                 "Timings are meaningless; build with CMAKE_BUILD_TYPE=Release. !!!\n\n";
  }
  if (!o.as_replacement.empty()) {
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
  if (child) {
    return measure_slice(o, info, chosen);
  }

  info.layout = enable_layout_randomization();
  if (!info.layout.empty()) {
    std::cerr << "memkit-bench: WARNING: " << info.layout << "\n";
  }
  bool ok = true;
  std::vector<group> groups;
  if (!chosen.empty()) {
    groups.push_back({});
  }
  for (auto& g : replacement_groups(o, ok)) {
    groups.push_back(std::move(g));
  }
  std::map<row_key, std::vector<result>> parts;
  ok = measure_in_processes(o, groups, chosen_workloads, parts) && ok;
  std::vector<result> rows = pooled_rows(chosen, groups, chosen_workloads, parts);
  if (!compare_rows(rows)) {
    std::cerr << "memkit-bench: ERROR: result hashes disagree (rows marked HASH MISMATCH)\n";
    ok = false;
  }
  print_tables(std::cout, rows, info);
  const std::vector<target_check> checks = check_targets(targets, rows);
  print_targets(std::cout, checks);
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
