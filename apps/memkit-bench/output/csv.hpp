// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/output/csv.hpp: the results as CSV (batch mode's --csv).
#pragma once

#include <iosfwd>
#include <vector>

#include "core/summary.hpp"

namespace memkit::bench {

/// \effects writes a header and one line per row: a column per field of
/// MEMKIT_BENCH_RESULT_FIELDS (percentiles_us as one column of ';'-separated values), then
/// `optimized`, repeated on every line so no row can be mistaken for an optimized build's.
/// Text is quoted where RFC 4180 needs it.
void write_csv(std::ostream& out, const std::vector<result>& rows, bool optimized);

} // namespace memkit::bench
