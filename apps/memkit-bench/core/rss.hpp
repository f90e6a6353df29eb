// apps/memkit-bench/core/rss.hpp: the process's resident memory, now and at its peak, from /proc.
#pragma once

#include <cstddef>

namespace memkit::bench {

/// Resets the process's peak resident set size, so that each measurement reports its own peak
/// (Linux >= 4.0: writing 5 to /proc/self/clear_refs resets VmHWM). \returns false if refused.
bool reset_peak_rss() noexcept;
/// \returns VmHWM from /proc/self/status, in KiB (0 if unreadable).
std::size_t peak_rss_kib() noexcept;
/// \returns VmRSS from /proc/self/status, in KiB (0 if unreadable).
std::size_t rss_kib() noexcept;

} // namespace memkit::bench
