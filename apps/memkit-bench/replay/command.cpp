// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/replay/command.cpp: the replay and advise command lines, the replay child and
// the replay command's outputs.

#include "replay/command.hpp"

#include <fstream>
#include <iomanip>
#include <iostream>

#include <CLI/CLI.hpp>

#include "core/machine.hpp"
#include "output/format.hpp"
#include "output/json.hpp"
#include "output/table.hpp"
#include "replacement/replacement.hpp"
#include "replay/advise.hpp"
#include "replay/load.hpp"
#include "replay/processes.hpp"
#include "replay/program_file.hpp"
#include "replay/records.hpp"

namespace memkit::bench::replay {
namespace {

void add_common(CLI::App& cmd, common_options& c) {
  cmd.add_option("trace", c.trace,
                 "the trace: a recorded file, or synthetic:EVENTS[:THREADS[:SEED]] "
                 "(docs/TRACE.md)")
      ->required();
  cmd.add_option("--allocators", c.allocators,
                 "general-purpose allocators: std, null, memkit, mimalloc, jemalloc, tcmalloc, "
                 "tbbmalloc (default: std and every replacement installed)")
      ->delimiter(',');
  cmd.add_option("--processes", c.processes,
                 "processes per variant, interleaved; ratios get 95% intervals over them "
                 "(default 5)")
      ->check(CLI::Range(1u, 1000u));
  cmd.add_option("--touch", c.touch,
                 "what is written into each new block: none (an 8-byte stamp), page (a byte a "
                 "page, default) or line (a byte a cache line)")
      ->check(CLI::IsMember({"none", "page", "line"}));
  cmd.add_option("--sample-every", c.sample_every,
                 "time one operation in N on each thread (default 64; 0: none)");
  cmd.add_option("--json", c.json_file, "write the results as JSON to FILE");
  cmd.add_option("--report", c.report_dir,
                 "write batch mode's PNG charts and index.html of the replays to DIR (needs "
                 "python3-matplotlib)");
}

replay_options options_of(const common_options& c) {
  replay_options o;
  o.touch = parse_touch(c.touch).value_or(touch_mode::page);
  o.sample_every = c.sample_every;
  return o;
}

/// The paired child: every policy of --child-paired replayed in turn, one round to warm the
/// allocator up and then --child-rounds rounds, each starting one policy further on so that no
/// policy always follows the same one. Writes each policy's replay times of the measured rounds.
int run_paired_child(const replay_command_options& o, const program& p) {
  std::vector<std::string> policies;
  for (std::size_t at = 0;;) {
    const std::size_t end = o.child_paired.find(';', at);
    policies.push_back(o.child_paired.substr(at, end - at));
    if (end == std::string::npos) {
      break;
    }
    at = end + 1;
  }
  std::vector<std::vector<double>> seconds(policies.size());
  std::uint64_t content_errors = 0;
  for (unsigned round = 0; round <= o.child_rounds; ++round) {
    for (std::size_t k = 0; k < policies.size(); ++k) {
      const std::size_t i = (k + round) % policies.size();
      router routes(p, parse_policy(policies[i]));
      const replay_result r = replay_routed(p, routes, options_of(o.c));
      content_errors += r.content_errors;
      if (round != 0) {
        seconds[i].push_back(r.seconds);
      }
    }
  }
  nlohmann::json doc;
  doc["paired_seconds"] = seconds;
  std::ofstream(o.c.json_file) << doc.dump(1) << "\n";
  if (content_errors != 0) {
    std::cerr << "memkit-bench: ERROR: " << content_errors
              << " blocks had wrong contents when freed\n";
    return 1;
  }
  return 0;
}

/// The child: one replay under the allocator it was started with.
int run_child(const replay_command_options& o) {
  if (is_replacement(o.as_child)) {
    if (const std::string why = check_interception(o.as_child); !why.empty()) {
      std::cerr << "memkit-bench: ERROR: " << o.as_child << " did not intercept allocation: " << why
                << "\n";
      return 3;
    }
  }
  // Compiled and verified by the parent: nothing is decoded or compiled here, so the heap under
  // test holds nothing the harness freed (program_file.hpp). Started by hand without one (to
  // count instructions under callgrind), the child compiles the trace itself.
  const program p =
      o.program_file.empty() ? compile(load_events(o.c.trace)) : load_program(o.program_file);
  if (!o.child_paired.empty()) {
    return run_paired_child(o, p);
  }
  replay_result r;
  if (o.as_child == "null") {
    r = replay_null(p, options_of(o.c));
  } else {
    router routes(p, parse_policy(o.child_routes));
    r = replay_routed(p, routes, options_of(o.c));
  }
  nlohmann::json doc;
  doc["result"] = r;
  std::ofstream(o.c.json_file) << doc.dump(1) << "\n";
  if (r.content_errors != 0) {
    std::cerr << "memkit-bench: ERROR: " << r.content_errors
              << " blocks had wrong contents when freed\n";
    return 1;
  }
  return 0;
}

/// Prints the per-operation figures beside the harness's own cost.
void print_operations(std::ostream& out, const std::vector<result>& rows,
                      const std::map<std::string, std::vector<replay_result>>& runs,
                      const compile_stats& stats) {
  double harness_ns = 0;
  if (const auto it = runs.find("null"); it != runs.end()) {
    harness_ns = median_of(it->second, &replay_result::seconds) * 1e9 /
                 static_cast<double>(it->second.front().ops);
  }
  out << "\nper operation (ns: the median replay's time / operations; harness: the null "
         "allocator's, included in every row)\n"
      << std::left << std::setw(24) << "variant" << std::right << std::setw(10) << "ns/op"
      << std::setw(12) << "- harness" << std::setw(10) << "op p50" << std::setw(10) << "op p99"
      << std::setw(12) << "peak MiB" << std::setw(8) << "frag"
      << "\n";
  for (const auto& r : rows) {
    const auto& v = runs.at(r.variant);
    const double ns = r.p50_us * 1e3 / r.items_per_iteration;
    out << std::left << std::setw(24) << r.variant << std::right << std::setw(10) << fixed(ns, 1)
        << std::setw(12) << (r.variant == "null" ? "-" : fixed(ns - harness_ns, 1)) << std::setw(10)
        << fixed(median_of(v, &replay_result::op_p50_ns), 0) << std::setw(10)
        << fixed(median_of(v, &replay_result::op_p99_ns), 0) << std::setw(12)
        << fixed(static_cast<double>(r.peak_rss_kib) / 1024.0, 1) << std::setw(8)
        << (r.variant == "null" || stats.peak_live_bytes == 0
                ? "-"
                : fixed(static_cast<double>(r.peak_rss_kib) * 1024.0 /
                            static_cast<double>(stats.peak_live_bytes),
                        2))
        << "\n";
  }
}

int run_replay(const replay_command_options& o) {
  bool ok = true;
  std::vector<variant_spec> variants = general_purpose_variants(o.c.allocators, true, ok);
  for (const auto& policy : o.policies) {
    try {
      const std::string spelled = to_string(parse_policy(policy));
      variants.push_back({"std+" + spelled, "std", "", spelled});
    } catch (const std::exception& e) {
      std::cerr << "memkit-bench: " << e.what() << "\n";
      return 2;
    }
  }
  if (!ok) {
    return 2;
  }
  const compiled_trace trace(o.c.trace);
  const compile_stats& stats = trace.stats();
  std::cerr << "memkit-bench: " << o.c.trace << ": " << trace.summary() << "\n";
  const auto runs = replay_in_processes(o.c, trace, variants, ok);
  std::vector<result> rows;
  for (const auto& v : variants) {
    if (const auto it = runs.find(v.name); it != runs.end() && !it->second.empty()) {
      rows.push_back(to_row("replay " + o.c.trace, v.name, it->second, stats));
    }
  }
  if (rows.empty()) {
    return 1;
  }
  const run_info info = check_rows(rows, o.c, {{"policies", o.policies}}, ok);
  print_tables(std::cout, rows, info);
  print_operations(std::cout, rows, runs, stats);
  nlohmann::json doc = to_json(rows, info, {});
  doc["replay"] = {{"trace", o.c.trace},
                   {"compile", stats},
                   {"live_over_time", trace.live_over_time()},
                   {"runs", runs}};
  write_outputs(doc, o.c, ok);
  return ok ? 0 : 1;
}

} // namespace

void add_replay_commands(CLI::App& app, replay_commands& c) {
  c.replay = app.add_subcommand(
      "replay", "replay a trace of allocation calls against every allocator, each in its own "
                "processes, causality kept across threads; the null allocator's row is the "
                "harness's own cost (docs/TRACE.md)");
  add_common(*c.replay, c.r.c);
  c.replay->add_option("--policy", c.r.policies,
                       "one more variant over std: sites routed to memkit strategies, "
                       "SITE=STRATEGY,... (SITE a site id or *; STRATEGY malloc, pool, "
                       "multipool, arena, stack, thread-cached, huge-page); repeatable");
  c.replay->add_option("--as-child", c.r.as_child, "internal")->group("");
  c.replay->add_option("--child-routes", c.r.child_routes, "internal")->group("");
  c.replay->add_option("--program", c.r.program_file, "internal")->group("");
  c.replay->add_option("--child-paired", c.r.child_paired, "internal")->group("");
  c.replay->add_option("--child-rounds", c.r.child_rounds, "internal")->group("");

  c.advise = app.add_subcommand(
      "advise", "per call site of a trace: sizes, lifetimes, LIFO, bulk-death and cross-thread "
                "shares and a candidate memkit strategy, each replayed against the best "
                "general-purpose allocator and kept only if its gain clears the thresholds "
                "(docs/TRACE.md)");
  add_common(*c.advise, c.a.c);
  c.advise->add_option("--top", c.a.top, "sites by operations, and as many by peak bytes (5)")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1000}));
  c.advise
      ->add_option("--time-threshold", c.a.time_threshold,
                   "least time gain a candidate must show, its interval above 1 (0.05)")
      ->check(CLI::Range(0.0, 10.0));
  c.advise
      ->add_option("--rss-threshold", c.a.rss_threshold,
                   "least peak-RSS gain a candidate must show, its interval above 1 (0.10)")
      ->check(CLI::Range(0.0, 10.0));
  c.advise
      ->add_option("--rounds", c.a.rounds,
                   "replays of each candidate and of the allocator it must beat in each of "
                   "--processes processes, in turn, for the time gain (3)")
      ->check(CLI::Range(1u, 100u));
}

int run_replay_commands(const replay_commands& c) {
  try {
    if (c.replay != nullptr && *c.replay) {
      return c.r.as_child.empty() ? run_replay(c.r) : run_child(c.r);
    }
    if (c.advise != nullptr && *c.advise) {
      return run_advise(c.a);
    }
  } catch (const std::exception& e) {
    std::cerr << "memkit-bench: ERROR: " << e.what() << "\n";
    return 2;
  }
  return -1;
}

} // namespace memkit::bench::replay
