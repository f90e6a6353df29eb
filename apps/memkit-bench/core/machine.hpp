// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/core/machine.hpp: the facts about a run shown beside its results: the build,
// the machine and the options.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace memkit::bench {

/// Facts about the run shown beside the results.
struct run_info {
  std::string version; ///< memkit's release (memkit/version.hpp)
  std::string commit;  ///< `git describe --always --dirty` of the source tree, or "unknown"
  std::string date;    ///< when the run started, ISO 8601 in UTC: 2026-11-26T14:05:00Z
  bool optimized = false;
  std::string compiler;
  std::string cpu;
  unsigned cores = 0;
  std::string kernel;
  std::string thp_policy;
  std::string layout; ///< why the processes may share a layout ("" when each gets its own draw)
  nlohmann::json options;
};

/// \returns whether this binary was built with optimizations and NDEBUG.
constexpr bool built_optimized() noexcept {
#if defined(__OPTIMIZE__) && defined(NDEBUG)
  return true;
#else
  return false;
#endif
}

/// \returns the release, commit and date, and the machine facts (CPU model, cores, kernel, THP
/// policy, compiler); `options` empty.
run_info describe_run();

} // namespace memkit::bench
