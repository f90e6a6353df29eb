// apps/memkit-bench/core/isolation.hpp: a measurement in a forked child process.
#pragma once

#include <cstddef>
#include <string>

#include "core/measure.hpp"
#include "core/registry.hpp"

namespace memkit::bench {

/// Measures `c` for `iterations` in a forked child process and returns its measurement, or sets
/// `error` (the child crashed, threw or was killed). Each measurement thus starts from the same
/// small heap, and its peak RSS is its own rather than the most any earlier variant reached
/// (glibc keeps freed memory, Boost's singleton pools never return theirs).
measurement measure_in_child(const bench_case& c, std::size_t iterations, std::string& error);

} // namespace memkit::bench
