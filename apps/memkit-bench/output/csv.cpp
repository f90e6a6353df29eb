// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/output/csv.cpp: the results as CSV, the columns generated from
// MEMKIT_BENCH_RESULT_FIELDS.

#include "output/csv.hpp"

#include <charconv>
#include <ostream>
#include <string>

namespace memkit::bench {
namespace {

std::string cell(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) {
    return s;
  }
  std::string quoted = "\"";
  for (const char c : s) {
    quoted += c == '"' ? "\"\"" : std::string(1, c);
  }
  return quoted + "\"";
}

std::string cell(bool b) { return b ? "true" : "false"; }

std::string cell(hash_code h) { return to_string(h); }

/// The shortest text that reads back as `n` exactly.
template <class Number>
std::string cell(Number n) {
  char buf[32];
  return std::string(buf, std::to_chars(buf, buf + sizeof buf, n).ptr);
}

std::string cell(const std::vector<double>& v) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i != 0) {
      s += ';';
    }
    s += cell(v[i]);
  }
  return s;
}

} // namespace

void write_csv(std::ostream& out, const std::vector<result>& rows, bool optimized) {
#define MEMKIT_BENCH_RESULT_CSV_NAME(name) << #name ","
  out MEMKIT_BENCH_RESULT_FIELDS(MEMKIT_BENCH_RESULT_CSV_NAME) << "optimized\n";
#undef MEMKIT_BENCH_RESULT_CSV_NAME
  for (const auto& r : rows) {
#define MEMKIT_BENCH_RESULT_CSV_CELL(name) << cell(r.name) << ','
    out MEMKIT_BENCH_RESULT_FIELDS(MEMKIT_BENCH_RESULT_CSV_CELL) << cell(optimized) << '\n';
#undef MEMKIT_BENCH_RESULT_CSV_CELL
  }
}

} // namespace memkit::bench
