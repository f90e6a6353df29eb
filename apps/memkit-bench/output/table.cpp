// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/output/table.cpp: the results as text tables, one per workload.

#include "output/table.hpp"

#include <cmath>
#include <iomanip>
#include <ostream>
#include <sstream>
#include <string>

#include "core/interval.hpp"
#include "output/format.hpp"

namespace memkit::bench {

namespace {

/// "[1.10, 1.35]", or "-" when the interval is unknown. A stream, not operator+: g++ 12 warns
/// (-Wrestrict, a false positive) on a short literal plus a string.
std::string interval_text(double lo, double hi) {
  if (lo <= 0 || hi <= 0) {
    return "-";
  }
  std::ostringstream s;
  s << std::fixed << std::setprecision(2) << '[' << lo << ", " << hi << ']';
  return s.str();
}

} // namespace

void print_tables(std::ostream& out, const std::vector<result>& rows, const run_info& info) {
  out << "memkit-bench on " << info.cpu << " (" << info.cores << " cores), " << info.kernel << ", "
      << info.compiler << "\n";
  if (!info.optimized) {
    out << "!!! UNOPTIMIZED BUILD (no -O or no NDEBUG): these figures say nothing about speed "
           "!!!\n";
  }
  out << "Every variant ran in n processes, each a fresh layout draw"
      << (info.layout.empty() ? "" : " (but " + info.layout + ")")
      << "; p50 and p99 are medians over them.\nvs std: std's p50 / the variant's, with its "
      << interval_level * 100 << " % interval (percentile bootstrap over the processes' medians, "
      << bootstrap_resamples << " resamples, seed " << bootstrap_seed
      << "); faster or slower only when the interval excludes 1. spread: (largest - smallest) / "
         "median of the processes' medians (docs/method.md).\n";
  std::string current;
  for (const auto& r : rows) {
    if (r.workload != current) {
      current = r.workload;
      out << "\n== " << r.workload << (info.optimized ? "" : "  [UNOPTIMIZED]")
          << "  (times per iteration in us, throughput in " << r.unit
          << "/s, +peak: peak RSS above the start)\n";
      out << std::left << std::setw(24) << "variant" << std::right << std::setw(4) << "n"
          << std::setw(10) << "cold" << std::setw(10) << "min" << std::setw(10) << "p50"
          << std::setw(10) << "p99" << std::setw(10) << "max" << std::setw(15) << "throughput"
          << std::setw(8) << "vs std" << std::setw(15) << "95% interval"
          << "  " << std::left << std::setw(20) << "verdict" << std::right << std::setw(7)
          << "spread" << std::setw(11) << "+peak KiB"
          << "  " << std::left << std::setw(20) << "hash"
          << "note\n";
    }
    const int digits = r.p50_us < 100 ? 2 : 0;
    out << std::left << std::setw(24) << r.variant << std::right << std::setw(4) << r.processes
        << std::setw(10) << fixed(r.cold_us, digits) << std::setw(10) << fixed(r.min_us, digits)
        << std::setw(10) << fixed(r.p50_us, digits) << std::setw(10) << fixed(r.p99_us, digits)
        << std::setw(10) << fixed(r.max_us, digits) << std::setw(15)
        << thousands(r.throughput_per_s) << std::setw(8)
        << (r.speedup_vs_std > 0 ? fixed(r.speedup_vs_std, 2) + "x" : "-") << std::setw(15)
        << interval_text(r.speedup_lo, r.speedup_hi) << "  " << std::left << std::setw(20)
        << (r.verdict_vs_std.empty() ? "-" : r.verdict_vs_std) << std::right << std::setw(7)
        << (r.processes > 1 ? std::to_string(std::llround(r.process_spread * 100)) + "%" : "-")
        << std::setw(11) << r.peak_rss_kib << "  " << std::left << std::setw(20)
        << (r.hash_ok ? to_string(r.hash) : to_string(r.hash) + "!") << r.note
        << (r.hash_ok ? "" : "  HASH MISMATCH") << "\n";
  }
}

} // namespace memkit::bench
