// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/output/table.hpp: the results as text tables, one per workload.
#pragma once

#include <iosfwd>
#include <vector>

#include "core/machine.hpp"
#include "core/summary.hpp"

namespace memkit::bench {

/// Prints the machine line and one table per workload, in the order of `rows`.
void print_tables(std::ostream& out, const std::vector<result>& rows, const run_info& info);

} // namespace memkit::bench
