// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/output/format.hpp: number formats shared by the tables and the targets.
#pragma once

#include <cmath>
#include <iomanip>
#include <sstream>
#include <string>

namespace memkit::bench {

/// Fixed-point with `digits` decimals, or "-" for 0 (not applicable).
inline std::string fixed(double v, int digits) {
  if (v == 0) {
    return "-";
  }
  std::ostringstream s;
  s << std::fixed << std::setprecision(digits) << v;
  return s.str();
}

/// `v` rounded, with thousands separators: 1234567.8 -> "1,234,568".
inline std::string thousands(double v) {
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

} // namespace memkit::bench
