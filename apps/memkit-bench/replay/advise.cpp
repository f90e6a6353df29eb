// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/replay/advise.cpp: the advisor's runs, decisions and outputs.

#include "replay/advise.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <limits>
#include <memory>

#include <nlohmann/json.hpp>

#include "core/machine.hpp"
#include "output/format.hpp"
#include "output/json.hpp"
#include "output/table.hpp"
#include "replay/processes.hpp"
#include "replay/records.hpp"

namespace memkit::bench::replay {
namespace {

std::string percent(double share) { return fixed(share * 100, 0) + (share == 0 ? "" : "%"); }

std::string gain_text(const ratio_interval& r) {
  if (r.ratio == 0) {
    return "-";
  }
  char buf[64];
  if (r.known()) {
    std::snprintf(buf, sizeof buf, "%.2fx [%.2f, %.2f]", r.ratio, r.lo, r.hi);
  } else {
    std::snprintf(buf, sizeof buf, "%.2fx", r.ratio);
  }
  return buf;
}

std::string hex(std::uint64_t address) {
  if (address == 0) {
    return "-";
  }
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(address));
  return buf;
}

void print_sites(std::ostream& out, const std::vector<site_profile>& sites) {
  out << "call sites (top by operations and by peak bytes; lifetimes in trace events; address: "
         "the innermost return address, symbolized with the trace's mappings)\n"
      << std::right << std::setw(8) << "site" << std::setw(11) << "ops" << std::setw(11)
      << "peak KiB" << std::setw(17) << "sizes" << std::setw(7) << "kinds" << std::setw(11)
      << "life p50" << std::setw(11) << "life p99" << std::setw(6) << "LIFO" << std::setw(6)
      << "bulk" << std::setw(7) << "xthr"
      << "  " << std::left << std::setw(14) << "candidate"
      << "rule\n";
  for (const auto& s : sites) {
    out << std::right << std::setw(8) << s.site << std::setw(11) << s.ops << std::setw(11)
        << (s.peak_live_bytes + 1023) / 1024 << std::setw(17)
        << (std::to_string(s.min_size) + ".." + std::to_string(s.max_size)) << std::setw(7)
        << (s.distinct_sizes > 64 ? std::string(">64") : std::to_string(s.distinct_sizes))
        << std::setw(11) << std::llround(s.lifetime_p50) << std::setw(11)
        << std::llround(s.lifetime_p99) << std::setw(6) << percent(s.lifo_share) << std::setw(6)
        << percent(s.bulk_share) << std::setw(7) << percent(s.cross_thread_share) << std::setw(16)
        << hex(s.address) << "  " << std::left << std::setw(14)
        << (s.candidate == strategy::malloc ? "-" : to_string(s.candidate)) << s.reason << "\n";
  }
}

/// \returns the advice's site, or its group's as "FIRST+N" (N sites more).
std::string site_text(const advice& a) {
  return a.group.empty() ? std::to_string(a.site.site)
                         : std::to_string(a.site.site) + "+" + std::to_string(a.group.size() - 1);
}

void print_advice(std::ostream& out, const std::vector<advice>& all, double time_threshold,
                  double rss_threshold) {
  out << "\nadvice (gain: the best general-purpose allocator's replay / the candidate's, "
      << interval_level * 100 << " % interval over processes; kept only if the gain is at "
      << "least " << fixed(1 + time_threshold, 2) << "x in time or " << fixed(1 + rss_threshold, 2)
      << "x in peak RSS, its interval above 1)\n"
      << std::right << std::setw(8) << "site"
      << "  " << std::left << std::setw(14) << "candidate" << std::setw(24) << "time gain"
      << std::setw(24) << "peak RSS gain" << std::setw(22) << "advice"
      << "why\n";
  for (const auto& a : all) {
    out << std::right << std::setw(8) << site_text(a) << "  " << std::left << std::setw(14)
        << (a.site.candidate == strategy::malloc ? "-" : to_string(a.site.candidate))
        << std::setw(24) << gain_text(a.time) << std::setw(24) << gain_text(a.rss) << std::setw(22)
        << a.verdict << a.why << "\n";
  }
}

std::vector<double> of(const std::vector<replay_result>& runs, bool rss) {
  std::vector<double> v;
  for (const auto& r : runs) {
    // A peak below a KiB (a tiny trace) counts as one, so the ratio stays finite.
    v.push_back(rss ? std::max(1.0, static_cast<double>(r.peak_rss_kib)) : r.seconds);
  }
  return v;
}

} // namespace

bool clears(const ratio_interval& r, double threshold) {
  return r.ratio >= 1 + threshold && judge(r, 1) == verdict::above;
}

void decide(advice& a, double time_threshold, double rss_threshold) {
  const std::string keep = "keep " + a.baseline;
  if (a.site.candidate == strategy::malloc) {
    a.use = false;
    a.verdict = keep;
    a.why = a.site.reason.empty() ? "no candidate" : a.site.reason;
    return;
  }
  const bool faster = clears(a.time, time_threshold);
  // A ratio of small peaks is mostly the harness's own memory: a saving counts from a MiB.
  const bool smaller = clears(a.rss, rss_threshold) && a.rss_saved_kib >= rss_floor_kib;
  a.use = faster || smaller;
  a.verdict = a.use ? "use " + to_string(a.site.candidate) : keep;
  if (a.use) {
    a.why = faster && smaller ? "faster and smaller" : faster ? "faster" : "smaller";
  } else if (!a.time.known()) {
    // The bootstrap needs two processes a side: say which side had fewer, and why.
    a.why = a.processes < 2 ? "no interval: the bootstrap needs --processes 2 or more"
                            : "no interval: " + std::to_string(a.time.processes) + " of " +
                                  std::to_string(a.processes) +
                                  " processes replayed both sides (a failed replay says why "
                                  "above); the bootstrap needs 2 or more";
  } else if (clears(a.rss, rss_threshold)) {
    a.why = "peak RSS saved " + std::to_string(std::llround(a.rss_saved_kib)) +
            " KiB, under the 1 MiB that counts";
  } else {
    a.why = "gain not above the thresholds";
  }
  if (!a.group.empty()) {
    std::string ids;
    for (const std::uint32_t site : a.group) {
      ids += (ids.empty() ? "" : ",") + std::to_string(site);
    }
    a.why += "; sites " + ids + " routed together";
  }
}

int run_advise(const advise_command_options& o) {
  std::vector<site_profile> sites;
  std::unique_ptr<compiled_trace> trace;
  {
    std::map<std::uint32_t, std::uint64_t> addresses;
    site_profiler profiler;
    trace = std::make_unique<compiled_trace>(
        o.c.trace, [&profiler](const event& e) { profiler.add(e); }, &addresses);
    sites = top_sites(profiler.finish(), o.top);
    for (auto& s : sites) {
      const auto it = addresses.find(s.site);
      s.address = it == addresses.end() ? 0 : it->second;
    }
  }
  const compile_stats& stats = trace->stats();
  std::cerr << "memkit-bench: " << o.c.trace << ": " << trace->summary() << "\n";
  print_sites(std::cout, sites);

  bool ok = true;
  const std::vector<variant_spec> general = general_purpose_variants(o.c.allocators, false, ok);
  if (!ok) {
    return 2;
  }
  const auto first = replay_in_processes(o.c, *trace, general, ok);
  const variant_spec* best = nullptr;
  double best_time = std::numeric_limits<double>::infinity();
  std::vector<result> rows;
  for (const auto& v : general) {
    const auto it = first.find(v.name);
    if (it == first.end() || it->second.empty()) {
      continue;
    }
    rows.push_back(to_row("advise " + o.c.trace + ": general purpose", v.name, it->second, stats));
    if (const double t = median_of(it->second, &replay_result::seconds); t < best_time) {
      best_time = t;
      best = &v;
    }
  }
  if (best == nullptr) {
    std::cerr << "memkit-bench: ERROR: no general-purpose allocator replayed the trace\n";
    return 1;
  }

  // The candidates run interleaved with the best allocator again, so they are compared with
  // processes that ran at the same time. Every candidate's site goes through the router in every
  // replay of the round, to the best allocator's malloc (routed-malloc) but for the one site a
  // candidate takes: both sides of a gain pay the router's dispatch, which is the replay's, not
  // the strategy's.
  policy_map routed;
  for (const auto& s : sites) {
    if (s.candidate != strategy::malloc) {
      routed[s.site] = strategy::routed_malloc;
    }
  }
  const std::string baseline = routed.empty() ? best->name : best->name + "+routed";
  std::vector<variant_spec> round{{baseline, best->allocator, best->library, to_string(routed)}};
  std::vector<advice> all;
  const auto add = [&](advice a, const policy_map& own) {
    a.baseline = best->name;
    if (!own.empty()) {
      policy_map routes = routed;
      for (const auto& [site, s] : own) {
        routes[site] = s;
      }
      a.variant = best->name + "+" + to_string(own);
      round.push_back({a.variant, best->allocator, best->library, to_string(routes)});
    }
    all.push_back(a);
  };
  for (const auto& s : sites) {
    advice a;
    a.site = s;
    add(a, s.candidate == strategy::malloc ? policy_map{} : policy_map{{s.site, s.candidate}});
  }
  for (const auto& s : sites) {
    advice g;
    g.site = s;
    policy_map own;
    for (const auto& other : sites) {
      if (s.candidate != strategy::malloc && other.candidate == s.candidate) {
        own[other.site] = other.candidate;
        g.group.push_back(other.site);
      }
    }
    // Each group once, from its first site.
    if (g.group.size() > 1 && g.group.front() == s.site) {
      add(g, own);
    }
  }
  const auto second = round.size() > 1 ? replay_in_processes(o.c, *trace, round, ok)
                                       : std::map<std::string, std::vector<replay_result>>{};
  for (const auto& v : round) {
    if (const auto it = second.find(v.name); it != second.end() && !it->second.empty()) {
      rows.push_back(to_row("advise " + o.c.trace + ": candidates on " + best->name, v.name,
                            it->second, stats));
    }
  }
  // The time gains: the baseline and every candidate replayed in turn within each process, so a
  // gain is measured within one layout draw and one moment of the machine (paired_replays).
  std::vector<std::string> policies;
  for (const auto& v : round) {
    policies.push_back(v.routes);
  }
  const auto paired = round.size() > 1
                          ? paired_replays(o.c, *trace, round.front(), policies, o.rounds, ok)
                          : std::vector<std::vector<double>>{};
  const auto base = second.find(baseline);
  for (auto& a : all) {
    const auto it = a.variant.empty() ? second.end() : second.find(a.variant);
    a.processes = o.c.processes;
    if (it != second.end() && base != second.end() && !it->second.empty()) {
      a.time_between = speedup_interval(of(base->second, false), of(it->second, false));
      a.rss = speedup_interval(of(base->second, true), of(it->second, true));
      a.rss_saved_kib = median(of(base->second, true)) - median(of(it->second, true));
    }
    const auto in_round = std::find_if(round.begin(), round.end(),
                                       [&a](const variant_spec& v) { return v.name == a.variant; });
    if (!a.variant.empty() && in_round != round.end()) {
      const auto& candidate = paired[static_cast<std::size_t>(in_round - round.begin())];
      std::vector<double> ratios;
      for (std::size_t p = 0; p < candidate.size(); ++p) {
        if (candidate[p] > 0) {
          ratios.push_back(paired.front()[p] / candidate[p]);
        }
      }
      a.time = paired_interval(ratios);
    }
    decide(a, o.time_threshold, o.rss_threshold);
  }
  const run_info info = check_rows(rows, o.c,
                                   {{"top", o.top},
                                    {"time_threshold", o.time_threshold},
                                    {"rss_threshold", o.rss_threshold},
                                    {"rounds", o.rounds}},
                                   ok);
  std::cout << "\n";
  print_tables(std::cout, rows, info);
  print_advice(std::cout, all, o.time_threshold, o.rss_threshold);
  nlohmann::json doc = to_json(rows, info, {});
  nlohmann::json advice_json = nlohmann::json::array();
  for (const auto& a : all) {
    advice_json.push_back({{"site", a.site},
                           {"group", a.group},
                           {"baseline", a.baseline},
                           {"variant", a.variant},
                           {"time_gain", a.time.ratio},
                           {"time_gain_lo", a.time.lo},
                           {"time_gain_hi", a.time.hi},
                           {"time_gain_between_processes", a.time_between.ratio},
                           {"time_gain_between_processes_lo", a.time_between.lo},
                           {"time_gain_between_processes_hi", a.time_between.hi},
                           {"rss_gain", a.rss.ratio},
                           {"rss_gain_lo", a.rss.lo},
                           {"rss_gain_hi", a.rss.hi},
                           {"rss_saved_kib", a.rss_saved_kib},
                           {"use", a.use},
                           {"verdict", a.verdict},
                           {"why", a.why}});
  }
  auto runs = first;
  runs.insert(second.begin(), second.end());
  doc["advice"] = {{"trace", o.c.trace},
                   {"compile", stats},
                   {"live_over_time", trace->live_over_time()},
                   {"runs", runs},
                   {"best_general_purpose", best->name},
                   {"baseline_variant", baseline},
                   {"time_threshold", o.time_threshold},
                   {"rss_threshold", o.rss_threshold},
                   {"sites", advice_json}};
  write_outputs(doc, o.c, ok);
  return ok ? 0 : 1;
}

} // namespace memkit::bench::replay
