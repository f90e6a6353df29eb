// apps/memkit-bench/main.cpp: the command line: which workloads and variants run, how often, and
// where the results go.

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include <CLI/CLI.hpp>

#include "harness.hpp"
#include "replacement.hpp"
#include "results.hpp"
#include "serve.hpp"

#ifndef MEMKIT_BENCH_REPORT_SCRIPT
#define MEMKIT_BENCH_REPORT_SCRIPT "report.py"
#endif
#ifndef MEMKIT_BENCH_PYTHON
#define MEMKIT_BENCH_PYTHON "python3"
#endif

namespace memkit::bench {
namespace {

struct options {
  params p;
  std::vector<std::string> workloads;
  std::vector<std::string> variants;
  unsigned repeat = 3; // interleaved, so a burst of load from elsewhere hits every variant alike
  std::string json_file;
  std::string csv_file;
  std::string report_dir;
  bool list = false;
  std::string as_replacement; ///< set in a child process: the replacement it runs under
};

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
std::vector<std::string> child_arguments(const options& o,
                                         const std::vector<std::string>& workloads,
                                         const std::string& name, const std::string& json_file) {
  std::vector<std::string> a{"--as-replacement", name,
                             "--variants",       "std",
                             "--workloads",      join(workloads),
                             "--repeat",         std::to_string(o.repeat),
                             "--scale",          std::to_string(o.p.scale),
                             "--tree-depth",     std::to_string(o.p.tree_depth),
                             "--tree-branching", std::to_string(o.p.tree_branching),
                             "--tree-values",    std::to_string(o.p.tree_values),
                             "--pair-sizes",     join(o.p.pair_sizes),
                             "--pair-blocks",    std::to_string(o.p.pair_blocks),
                             "--list-sizes",     join(o.p.list_sizes),
                             "--threads",        std::to_string(o.p.threads),
                             "--json",           json_file};
  if (o.p.iterations != 0) {
    a.insert(a.end(), {"--iterations", std::to_string(o.p.iterations)});
  }
  return a;
}

nlohmann::json options_json(const options& o) {
  return {{"workloads", o.workloads},
          {"variants", o.variants},
          {"iterations", o.p.iterations},
          {"repeat", o.repeat},
          {"scale", o.p.scale},
          {"tree_depth", o.p.tree_depth},
          {"tree_branching", o.p.tree_branching},
          {"tree_values", o.p.tree_values},
          {"pair_sizes", o.p.pair_sizes},
          {"pair_blocks", o.p.pair_blocks},
          {"list_sizes", o.p.list_sizes},
          {"threads", o.p.threads}};
}

void print_list(const registry& reg) {
  std::map<std::string, std::vector<std::string>> variants;
  for (const auto& c : reg.cases()) {
    variants[c.w->name].push_back(c.variant);
  }
  std::set<std::string> shown;
  std::cout << "workloads (variants that fit each; every workload with a std row also runs under "
               "the global replacements mimalloc, jemalloc and tcmalloc):\n";
  for (const auto& c : reg.cases()) {
    if (shown.insert(c.w->name).second) {
      std::cout << "  " << c.w->name << ": " << c.w->description << "\n      "
                << join(variants[c.w->name]) << "\n";
    }
  }
  std::cout << "replacements:";
  for (const auto& r : known_replacements()) {
    std::cout << " " << r.name << " (" << (r.library.empty() ? "not installed" : r.library) << ")";
  }
  std::cout << "\n";
}

/// Runs the global replacements on the selected workloads' std rows, inserting their rows after
/// each workload's last row. \returns false if one was requested and failed.
bool run_replacements(const options& o, const std::vector<std::string>& workloads,
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
                << " is not installed (scripts/install-deps.sh bench installs it)\n";
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

int run(const options& o) {
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
      measurements[i].push_back(run_isolated(c, n, error));
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
  ok = (child || run_replacements(o, chosen_workloads, rows)) && ok;
  if (!compare_rows(rows)) {
    std::cerr << "memkit-bench: ERROR: result hashes disagree (rows marked HASH MISMATCH)\n";
    ok = false;
  }
  if (!child) {
    print_tables(std::cout, rows, info);
    print_targets(std::cout, check_targets(rows));
  }
  const nlohmann::json doc = to_json(rows, info);
  if (!o.json_file.empty()) {
    std::ofstream(o.json_file) << doc.dump(1) << "\n";
  }
  if (!o.csv_file.empty()) {
    std::ofstream out(o.csv_file);
    write_csv(out, rows, info.optimized);
  }
  if (!o.report_dir.empty()) {
    std::filesystem::create_directories(o.report_dir);
    const std::string data = (std::filesystem::path(o.report_dir) / "results.json").string();
    std::ofstream(data) << doc.dump(1) << "\n";
    const std::string command = std::string(MEMKIT_BENCH_PYTHON) + " '" +
                                MEMKIT_BENCH_REPORT_SCRIPT + "' '" + data + "' '" + o.report_dir +
                                "'";
    if (std::system(command.c_str()) != 0) {
      std::cerr << "memkit-bench: ERROR: the report script failed: " << command << "\n";
      ok = false;
    } else {
      std::cerr << "memkit-bench: report in " << o.report_dir << "/index.html\n";
    }
  }
  return ok ? 0 : 1;
}

} // namespace
} // namespace memkit::bench

int main(int argc, char** argv) {
  memkit::bench::options o;
  CLI::App app{
      "memkit-bench: the seed documents' workloads against every memkit strategy and every "
      "peer allocator, side by side. Tables on stdout, progress on stderr."};
  app.add_option("--workloads", o.workloads,
                 "workloads to run, by name or prefix (e.g. json-tree,pairs); default: all")
      ->delimiter(',');
  app.add_option("--variants", o.variants,
                 "variants to run (e.g. std,memkit-arena,mimalloc); default: all")
      ->delimiter(',');
  app.add_option("--iterations", o.p.iterations,
                 "timed iterations per workload (default: per workload)");
  app.add_option("--repeat", o.repeat,
                 "repetitions of the whole set, interleaved; samples are pooled (default 3)")
      ->check(CLI::Range(1u, 1000u));
  app.add_option("--scale", o.p.scale, "multiplies every workload's element counts (default 1)")
      ->check(CLI::PositiveNumber);
  app.add_option("--json", o.json_file, "write the results as JSON to FILE");
  app.add_option("--csv", o.csv_file, "write the results as CSV to FILE");
  app.add_option("--report", o.report_dir,
                 "write PNG charts and index.html to DIR (needs python3-matplotlib)");
  app.add_flag("--list", o.list, "list the workloads and the variants that fit each, then exit");
  app.add_option("--tree-depth", o.p.tree_depth, "json-tree: maximum depth (seed 003: 6)")
      ->check(CLI::Range(1, 12));
  app.add_option(
         "--tree-branching", o.p.tree_branching,
         "json-tree: fields of the root, tapering below it to 0-1 above the leaves (seed 003: 4)")
      ->check(CLI::Range(0, 16));
  app.add_option("--tree-values", o.p.tree_values, "json-tree: most ints per node (seed 003: 8)")
      ->check(CLI::Range(0, 1000));
  app.add_option("--pair-sizes", o.p.pair_sizes, "pairs: block sizes")
      ->delimiter(',')
      ->check(CLI::Range(std::size_t{8}, std::size_t{1} << 20));
  app.add_option("--pair-blocks", o.p.pair_blocks,
                 "pairs: blocks allocated, then freed, per iteration");
  app.add_option("--list-sizes", o.p.list_sizes,
                 "node-lists: element counts (seed 004: 1000..1000000)")
      ->delimiter(',');
  app.add_option("--threads", o.p.threads, "false-sharing: threads, one counter each")
      ->check(CLI::Range(1u, 64u));
  app.add_option("--as-replacement", o.as_replacement,
                 "internal: run as the child of a global replacement")
      ->group("");

  memkit::bench::serve_options so;
  CLI::App* serve = app.add_subcommand(
      "serve", "serve the workloads over HTTP: GET /healthz, /info, /run?workload=W&variant=V&"
               "iters=N and /metrics (Prometheus) until SIGINT or SIGTERM (docs/SERVE.md); batch "
               "mode's workload options (--scale, --tree-depth, ...) apply, before or after "
               "'serve'");
  serve->add_option("--host", so.host, "address to listen on (default 127.0.0.1)")
      ->envname("MEMKIT_BENCH_HOST");
  serve->add_option("--port", so.port, "port to listen on, 0 for any free one (default 8080)")
      ->envname("MEMKIT_BENCH_PORT")
      ->check(CLI::Range(0, 65535));
  serve->add_option("--threads", so.threads, "/run requests that run at once (default 4)")
      ->check(CLI::Range(1u, 256u));
  serve
      ->add_option("--max-connections", so.max_connections,
                   "connections served at once, a thread each; more wait (default 512)")
      ->check(CLI::Range(std::size_t{1}, std::size_t{65536}));
  serve->add_flag("--log-requests{-}", so.log_requests,
                  "write one JSON line per request to stderr, or with =FILE append to FILE");
  serve->add_option("--warmup", so.warmup,
                    "timed warm-up iterations of every served case at start-up (default 2)");

  memkit::bench::load_options lo;
  CLI::App* load = app.add_subcommand(
      "load", "drive a serve-mode server: N keep-alive clients for T seconds, every answer "
              "checked; prints counts, requests/s and latencies as JSON, exits 1 on any failure");
  load->add_option("--host", lo.host, "server address (default 127.0.0.1)")
      ->envname("MEMKIT_BENCH_HOST");
  // 0 passes the check: CLI11 reads MEMKIT_BENCH_PORT for every subcommand, and serve's 0 is valid.
  load->add_option("--port", lo.port, "server port (default 8080)")
      ->envname("MEMKIT_BENCH_PORT")
      ->check(CLI::Range(0, 65535));
  load->add_option("--connections", lo.connections, "concurrent clients (default 4)")
      ->check(CLI::Range(1u, 256u));
  load->add_option("--seconds", lo.seconds, "how long to send (default 10)")
      ->check(CLI::Range(0.1, 3600.0));
  load->add_option("--workload", lo.workload, "workload of the /run requests (default json-tree)");
  load->add_option("--variants", lo.variants,
                   "variants to cycle through (default: every one the server serves for it)")
      ->delimiter(',');
  load->add_option("--iters", lo.iters, "iters of every /run request (default 1)")
      ->check(CLI::Range(memkit::bench::min_serve_iters, memkit::bench::max_serve_iters));
  load->add_option("--bad-every", lo.bad_every,
                   "make every n-th request a bad one (400s and a 404; default 0: none)");
  app.require_subcommand(0, 1);
  serve->fallthrough(); // the workload options may follow "serve"

  CLI11_PARSE(app, argc, argv);
  if (*serve) {
    return memkit::bench::serve(so, o.p);
  }
  if (*load) {
    return memkit::bench::load(lo);
  }
  return memkit::bench::run(o);
}
