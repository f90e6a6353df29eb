// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/output/markdown.cpp: a run's summary and headline table as Markdown, from its
// results document. The columns are result fields named by MEMKIT_BENCH_RESULT_FIELDS, read from
// each row's JSON record under the same names, so a renamed field breaks the build here rather
// than leaving a stale column.

#include "output/markdown.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <sstream>
#include <vector>

#include "core/summary.hpp"
#include "output/format.hpp"
#include "output/json.hpp"

namespace memkit::bench {
namespace {

#define MEMKIT_BENCH_FIELD_NAME(name) std::string_view{#name},
constexpr std::string_view result_fields[] = {MEMKIT_BENCH_RESULT_FIELDS(MEMKIT_BENCH_FIELD_NAME)};
#undef MEMKIT_BENCH_FIELD_NAME

/// The result fields a workload's table shows, in this order: latency, memory, the ratio to std,
/// whether every variant computed the same result.
constexpr std::string_view shown_fields[] = {"p50_us",         "p99_us",     "peak_rss_kib",
                                             "speedup_vs_std", "speedup_lo", "speedup_hi",
                                             "verdict_vs_std", "processes",  "hash_ok"};

constexpr bool is_result_field(std::string_view name) {
  return std::find(std::begin(result_fields), std::end(result_fields), name) !=
         std::end(result_fields);
}
static_assert(std::all_of(std::begin(shown_fields), std::end(shown_fields), is_result_field),
              "every field the summary shows must be in MEMKIT_BENCH_RESULT_FIELDS");

/// A time in microseconds: three significant digits at most below 1000, whole numbers above.
std::string microseconds(double us) {
  if (us <= 0) {
    return "-";
  }
  return us < 10 ? fixed(us, 2) : us < 1000 ? fixed(us, 1) : thousands(us);
}

std::string ratio(double r) { return r > 0 ? fixed(r, 2) + "x" : "-"; }

/// `value`, the member `field` of a row's record, as a table cell.
std::string cell(std::string_view field, const nlohmann::json& value) {
  if (value.is_boolean()) {
    return value.get<bool>() ? "yes" : "**no**";
  }
  if (value.is_number()) {
    const double v = value.get<double>();
    if (field.size() > 3 && field.substr(field.size() - 3) == "_us") {
      return microseconds(v);
    }
    if (field.rfind("speedup", 0) == 0) {
      return ratio(v);
    }
    return thousands(v);
  }
  return value.is_string() ? value.get<std::string>() : value.dump();
}

/// `text` as a table cell's: a '|' (a regular expression's, a list of alternatives') escaped, so
/// it does not end the cell.
std::string in_cell(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (c == '|') {
      out += '\\';
    }
    out += c;
  }
  return out;
}

std::string text_or_unknown(const nlohmann::json& doc, const char* key) {
  const auto it = doc.find(key);
  return it != doc.end() && it->is_string() && !it->get<std::string>().empty()
             ? it->get<std::string>()
             : "unknown";
}

/// The command line that repeats the run: every option of the document's `options` as written.
/// (Appends only: GCC 12 warns of an overlapping copy, falsely, in `"--" + name`.)
std::string command_line(const nlohmann::json& options) {
  std::string line = "memkit-bench";
  for (const auto& [key, value] : options.items()) {
    if (value.is_null() || (value.is_array() && value.empty()) ||
        (key == "iterations" && value == 0)) {
      continue; // the default: every workload or variant, each workload's own iteration count
    }
    line += " --";
    for (const char c : key) {
      line += c == '_' ? '-' : c;
    }
    line += ' ';
    if (!value.is_array()) {
      line += value.dump();
      continue;
    }
    for (std::size_t i = 0; i < value.size(); ++i) {
      if (i != 0) {
        line += ',';
      }
      line += value[i].is_string() ? value[i].get<std::string>() : value[i].dump();
    }
  }
  return line;
}

/// The rows of one workload, in the document's order.
struct workload_rows {
  std::string name;
  std::vector<result> rows;
};

std::vector<workload_rows> by_workload(const nlohmann::json& doc) {
  std::vector<workload_rows> out;
  for (result& r : doc.at("results").get<std::vector<result>>()) {
    if (out.empty() || out.back().name != r.workload) {
      out.push_back({r.workload, {}});
    }
    out.back().rows.push_back(std::move(r));
  }
  return out;
}

/// \returns the row with the lowest p50 among those `keep` accepts, or null.
template <class Keep>
const result* fastest(const std::vector<result>& rows, Keep keep) {
  const result* best = nullptr;
  for (const result& r : rows) {
    if (keep(r.variant) && r.p50_us > 0 && (best == nullptr || r.p50_us < best->p50_us)) {
      best = &r;
    }
  }
  return best;
}

bool is_peer(std::string_view variant) noexcept {
  return variant != "std" && !is_memkit_variant(variant);
}

const result* std_row(const std::vector<result>& rows) {
  return fastest(rows, [](std::string_view v) { return v == "std"; });
}

} // namespace

bool is_memkit_variant(std::string_view variant) noexcept {
  return variant == "memkit" || variant.rfind("memkit-", 0) == 0;
}

std::string markdown_summary(const nlohmann::json& doc) {
  const nlohmann::json& m = doc.at("machine");
  std::ostringstream out;
  out << "# memkit-bench run of " << text_or_unknown(doc, "date") << "\n\n"
      << "Generated by memkit-bench from the results document beside it; do not edit.\n\n"
      << "| | |\n|---|---|\n"
      << "| memkit | " << text_or_unknown(doc, "version") << ", commit `"
      << text_or_unknown(doc, "commit") << "` |\n"
      << "| machine | " << m.value("cpu", "unknown") << ", " << m.value("cores", 0u) << " cores, "
      << m.value("kernel", "unknown") << ", transparent huge pages "
      << m.value("thp_policy", "unknown") << " |\n"
      << "| compiler | " << m.value("compiler", "unknown")
      << (doc.value("optimized", false) ? ", optimized" : ", **not optimized: times say nothing**")
      << " |\n"
      << "| reproduce | `" << command_line(doc.at("options"))
      << " --json FILE --markdown FILE` |\n\n"
      << "Per workload: ";
  for (const std::string_view f : shown_fields) {
    out << "`" << f << "`, ";
  }
  out << "as the JSON names them (times per iteration in microseconds, medians over the row's "
         "processes of each process's percentile; `peak_rss_kib` the peak resident memory above "
         "the start, the largest of the processes'; `speedup_vs_std` std's p50 over the row's, "
         "with its 95 % interval `speedup_lo`..`speedup_hi` and the verdict it allows, "
         "docs/method.md), and `vs_best_peer`, the fastest peer's p50 over the row's (a peer is "
         "any variant neither std nor memkit's).\n";

  for (const workload_rows& w : by_workload(doc)) {
    out << "\n## " << w.name << "\n\n| variant |";
    for (const std::string_view f : shown_fields) {
      out << " " << f << " |";
    }
    out << " vs_best_peer |\n|---|";
    for (std::size_t i = 0; i < std::size(shown_fields); ++i) {
      out << "---:|";
    }
    out << "---:|\n";
    const result* peer = fastest(w.rows, is_peer);
    for (const result& r : w.rows) {
      const nlohmann::json record = r;
      out << "| " << r.variant << " |";
      for (const std::string_view f : shown_fields) {
        out << " " << cell(f, record.at(std::string(f))) << " |";
      }
      out << " " << (peer != nullptr && r.p50_us > 0 ? ratio(peer->p50_us / r.p50_us) : "-")
          << " |\n";
    }
  }

  const nlohmann::json& targets = doc.at("targets");
  out << "\n## Targets\n\n";
  if (targets.empty()) {
    out << "No target's workload, candidate and baseline were all in this run.\n";
  } else {
    out << "| target | verdict | measured |\n|---|---|---|\n";
    for (const auto& t : targets) {
      const std::string verdict = t.value("verdict", t.value("met", false) ? "met" : "missed");
      out << "| " << in_cell(t.value("target", "")) << " | "
          << (verdict == "missed" ? "**missed**" : verdict) << " | "
          << in_cell(t.value("measured", "")) << " |\n";
    }
  }
  return out.str();
}

std::string markdown_headline(const nlohmann::json& doc) {
  std::ostringstream out;
  out << "| workload | std p50 (us) | fastest memkit | p50 (us) | vs std | fastest peer | p50 (us) "
         "| memkit vs peer |\n|---|---:|---|---:|---:|---|---:|---:|\n";
  for (const workload_rows& w : by_workload(doc)) {
    const result* base = std_row(w.rows);
    const result* mine = fastest(w.rows, is_memkit_variant);
    const result* peer = fastest(w.rows, is_peer);
    if (base == nullptr || mine == nullptr) {
      continue;
    }
    out << "| " << w.name << " | " << microseconds(base->p50_us) << " | " << mine->variant << " | "
        << microseconds(mine->p50_us) << " | " << ratio(base->p50_us / mine->p50_us) << " | "
        << (peer != nullptr ? peer->variant : "-") << " | "
        << (peer != nullptr ? microseconds(peer->p50_us) : "-") << " | "
        << (peer != nullptr ? ratio(peer->p50_us / mine->p50_us) : "-") << " |\n";
  }
  return out.str();
}

int write_markdown(const std::string& results_file, bool headline, const std::string& output_file) {
  nlohmann::json doc;
  std::string text;
  try {
    std::ifstream in(results_file);
    if (!in) {
      std::cerr << "memkit-bench markdown: cannot read " << results_file << "\n";
      return 2;
    }
    doc = nlohmann::json::parse(in);
    text = headline ? markdown_headline(doc) : markdown_summary(doc);
  } catch (const nlohmann::json::exception& e) {
    std::cerr << "memkit-bench markdown: " << results_file
              << " is not a memkit-bench results document: " << e.what() << "\n";
    return 2;
  }
  if (output_file.empty()) {
    std::cout << text;
    return 0;
  }
  std::ofstream out(output_file);
  out << text;
  if (!out.flush()) {
    std::cerr << "memkit-bench markdown: cannot write " << output_file << "\n";
    return 2;
  }
  return 0;
}

} // namespace memkit::bench
