// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/replay/processes.cpp: replay children and their rows.

#include "replay/processes.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <stdexcept>

#include "core/interval.hpp"
#include "core/spawn.hpp"
#include "output/report.hpp"
#include "replacement/replacement.hpp"
#include "replay/load.hpp"
#include "replay/program_file.hpp"
#include "replay/records.hpp"

namespace memkit::bench::replay {

std::vector<variant_spec> general_purpose_variants(const std::vector<std::string>& wanted,
                                                   bool with_null, bool& ok) {
  std::vector<variant_spec> out;
  const auto named = [&](const std::string& n) {
    return std::find(wanted.begin(), wanted.end(), n) != wanted.end();
  };
  for (const auto& w : wanted) {
    if (w != "std" && w != "null" && !is_replacement(w)) {
      std::cerr << "memkit-bench: unknown allocator '" << w
                << "' (std, null, memkit, mimalloc, jemalloc, tcmalloc, tbbmalloc)\n";
      ok = false;
    }
  }
  out.push_back({"std", "std", "", ""});
  if (with_null || named("null")) {
    out.push_back({"null", "null", "", ""});
  }
  for (const auto& r : known_replacements()) {
    if (!wanted.empty() && !named(r.name)) {
      continue;
    }
    const std::string why = !replacements_unavailable_reason().empty()
                                ? replacements_unavailable_reason()
                            : r.library.empty() ? why_missing(r)
                                                : "";
    if (!why.empty()) {
      std::cerr << "memkit-bench: " << (wanted.empty() ? "skipping " : "ERROR: ") << r.name << ": "
                << why << "\n";
      ok = ok && wanted.empty();
      continue;
    }
    out.push_back({r.name, r.name, r.library, ""});
  }
  return out;
}

compiled_trace::compiled_trace(const std::string& trace, const event_sink& also,
                               std::map<std::uint32_t, std::uint64_t>* addresses)
    : path_((std::filesystem::temp_directory_path() /
             ("memkit-bench-replay-" + std::to_string(getpid()) + ".program"))
                .string()) {
  causal_compiler c(create_program_file(path_));
  try {
    read_events(
        trace,
        [&](const event& e) {
          c.add(e);
          if (also) {
            also(e);
          }
        },
        addresses);
  } catch (...) {
    std::filesystem::remove(path_);
    throw;
  }
  const program p = c.finish();
  finish_program_file(p);
  const verify_result v = verify(p);
  if (!v.ok) {
    std::filesystem::remove(path_);
    throw std::runtime_error("the compiled trace failed verification: " + v.error);
  }
  stats_ = p.stats;
  live_over_time_ = p.live_over_time;
  std::ostringstream s;
  s << stats_.events << " events, " << p.streams.size() << " threads (at most "
    << stats_.peak_threads << " at once), " << p.slots << " slots, " << stats_.waits << " waits ("
    << stats_.start_waits << " at threads' starts); verified " << v.checked
    << " operations; unknown frees " << stats_.unknown_frees << ", unknown reallocs "
    << stats_.unknown_reallocs << ", double frees " << stats_.double_frees << ", leaked "
    << stats_.leaked;
  summary_ = s.str();
}

compiled_trace::~compiled_trace() {
  std::error_code ignored;
  std::filesystem::remove(path_, ignored);
}

namespace {

/// Runs process `p` (of o.processes) of a replay child under `v`'s allocator with `extra`
/// arguments, at a random layout draw. \returns the JSON document it wrote, or null after saying
/// why on stderr and setting `ok` false.
nlohmann::json run_child_process(const common_options& o, const compiled_trace& trace,
                                 const variant_spec& v, unsigned p,
                                 const std::vector<std::string>& extra, bool& ok) {
  static std::random_device layout_seed;
  std::uniform_int_distribution<std::size_t> padding(0, max_padding);
  const std::string file = (std::filesystem::temp_directory_path() /
                            ("memkit-bench-replay-" + std::to_string(getpid()) + "-" +
                             std::to_string(p) + "-" + v.allocator + ".json"))
                               .string();
  std::vector<std::string> args{"replay",    o.trace,     "--as-child",
                                v.allocator, "--program", trace.path()};
  args.insert(args.end(), {"--touch", o.touch, "--sample-every", std::to_string(o.sample_every),
                           "--json", file});
  args.insert(args.end(), extra.begin(), extra.end());
  std::cerr << "memkit-bench: process " << p + 1 << "/" << o.processes << ": " << v.name
            << (v.library.empty() ? "" : " (LD_PRELOAD=" + v.library + ")") << "\n";
  const int status = run_self(args, v.library, padding(layout_seed));
  std::ifstream in(file);
  if (status != 0 || !in) {
    std::cerr << "memkit-bench: ERROR: process " << p + 1 << " of " << v.name << " failed (status "
              << status << ")\n";
    ok = false;
  }
  nlohmann::json doc;
  if (in) {
    try {
      doc = nlohmann::json::parse(in);
    } catch (const std::exception& e) {
      std::cerr << "memkit-bench: ERROR: the figures of process " << p + 1 << " of " << v.name
                << ": " << e.what() << "\n";
      ok = false;
    }
  }
  std::filesystem::remove(file);
  return doc;
}

} // namespace

std::map<std::string, std::vector<replay_result>>
replay_in_processes(const common_options& o, const compiled_trace& trace,
                    const std::vector<variant_spec>& variants, bool& ok) {
  std::map<std::string, std::vector<replay_result>> runs;
  for (unsigned p = 0; p < o.processes; ++p) {
    for (const auto& v : variants) {
      std::vector<std::string> extra;
      if (!v.routes.empty()) {
        extra = {"--child-routes", v.routes};
      }
      const nlohmann::json doc = run_child_process(o, trace, v, p, extra, ok);
      if (doc.contains("result")) {
        try {
          runs[v.name].push_back(doc.at("result").get<replay_result>());
        } catch (const std::exception& e) {
          std::cerr << "memkit-bench: ERROR: the figures of process " << p + 1 << " of " << v.name
                    << ": " << e.what() << "\n";
          ok = false;
        }
      }
    }
  }
  return runs;
}

std::vector<std::vector<double>>
paired_replays(const common_options& o, const compiled_trace& trace, const variant_spec& allocator,
               const std::vector<std::string>& policies, unsigned rounds, bool& ok) {
  std::string joined;
  for (std::size_t i = 0; i < policies.size(); ++i) {
    joined += (i == 0 ? "" : ";") + policies[i];
  }
  // Only whole replays are compared: no operation is timed on its own, which would add two clock
  // reads every --sample-every operations to both sides of every ratio.
  common_options whole = o;
  whole.sample_every = 0;
  std::vector<std::vector<double>> medians(policies.size());
  for (unsigned p = 0; p < o.processes; ++p) {
    const nlohmann::json doc =
        run_child_process(whole, trace, allocator, p,
                          {"--child-paired", joined, "--child-rounds", std::to_string(rounds)}, ok);
    if (!doc.contains("paired_seconds")) {
      continue;
    }
    const auto seconds = doc.at("paired_seconds").get<std::vector<std::vector<double>>>();
    if (seconds.size() != policies.size()) {
      std::cerr << "memkit-bench: ERROR: process " << p + 1 << " of " << allocator.name
                << " replayed " << seconds.size() << " policies of " << policies.size() << "\n";
      ok = false;
      continue;
    }
    for (std::size_t i = 0; i < policies.size(); ++i) {
      medians[i].push_back(median(seconds[i]));
    }
  }
  return medians;
}

run_info check_rows(std::vector<result>& rows, const common_options& c, nlohmann::json options,
                    bool& ok) {
  if (!compare_rows(rows)) {
    std::cerr << "memkit-bench: ERROR: the replays' checksums disagree (HASH MISMATCH)\n";
    ok = false;
  }
  run_info info = describe_run();
  options["trace"] = c.trace;
  options["processes"] = c.processes;
  options["touch"] = c.touch;
  options["sample_every"] = c.sample_every;
  info.options = std::move(options);
  return info;
}

void write_outputs(const nlohmann::json& doc, const common_options& c, bool& ok) {
  if (!c.json_file.empty()) {
    std::ofstream(c.json_file) << doc.dump(1) << "\n";
  }
  if (!c.report_dir.empty()) {
    if (const std::string error = write_report(c.report_dir, doc); !error.empty()) {
      std::cerr << "memkit-bench: ERROR: " << error << "\n";
      ok = false;
    } else {
      std::cerr << "memkit-bench: report in " << c.report_dir << "/index.html\n";
    }
  }
}

double median_of(const std::vector<replay_result>& runs, double replay_result::*field) {
  std::vector<double> v;
  for (const auto& r : runs) {
    v.push_back(r.*field);
  }
  return median(v);
}

result to_row(const std::string& workload, const std::string& variant,
              const std::vector<replay_result>& runs, const compile_stats& stats) {
  result r;
  r.workload = workload;
  r.variant = variant;
  r.unit = "ops";
  r.items_per_iteration = static_cast<double>(runs.front().ops);
  r.iterations = runs.size();
  r.processes = runs.size();
  std::vector<double> rss;
  r.hash.value = runs.front().checksum;
  for (const auto& x : runs) {
    r.process_p50_us.push_back(x.seconds * 1e6);
    r.process_p99_us.push_back(x.seconds * 1e6);
    rss.push_back(static_cast<double>(x.peak_rss_kib));
    r.hash_ok = r.hash_ok && x.checksum == r.hash.value && x.content_errors == 0;
  }
  std::vector<double> sorted = r.process_p50_us;
  std::sort(sorted.begin(), sorted.end());
  r.p50_us = median(sorted);
  r.min_us = sorted.front();
  r.max_us = sorted.back();
  r.p99_us = percentile(sorted, 99);
  double sum = 0;
  for (double t : sorted) {
    sum += t;
  }
  r.mean_us = sum / static_cast<double>(sorted.size());
  r.throughput_per_s = r.p50_us > 0 ? r.items_per_iteration / (r.p50_us * 1e-6) : 0;
  r.peak_rss_kib = static_cast<std::size_t>(median(rss));
  for (int q = 0; q <= 100; ++q) {
    r.percentiles_us.push_back(percentile(sorted, q));
  }
  const double frag = stats.peak_live_bytes == 0 ? 0
                                                 : static_cast<double>(r.peak_rss_kib) * 1024.0 /
                                                       static_cast<double>(stats.peak_live_bytes);
  char note[160];
  std::snprintf(note, sizeof note, "op p50 %.0f ns, p99 %.0f ns; frag %.2f",
                median_of(runs, &replay_result::op_p50_ns),
                median_of(runs, &replay_result::op_p99_ns), frag);
  r.note = note;
  return r;
}

} // namespace memkit::bench::replay
