// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/core/params.hpp: the knobs of every workload, described once.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace CLI {
class App;
}

/// The one list of workload parameters: it drives the command-line options, the arguments a
/// replacement's child process gets, the "options" of the JSON results and /info's "params", so a
/// parameter added here appears in all of them. Each is a member of `params`; its option is
/// `--` and the name with '_' as '-'.
#define MEMKIT_BENCH_PARAMS_FIELDS(X)                                                              \
  X(scale)                                                                                         \
  X(iterations)                                                                                    \
  X(tree_depth)                                                                                    \
  X(tree_branching)                                                                                \
  X(tree_values)                                                                                   \
  X(pair_sizes)                                                                                    \
  X(pair_blocks)                                                                                   \
  X(list_sizes)                                                                                    \
  X(sharing_threads)

namespace memkit::bench {

/// The knobs of every workload, from the command line. Sizes are multiplied by `scale` (the smoke
/// test runs everything at a tiny scale).
struct params {
  double scale = 1.0;
  std::size_t iterations = 0; ///< timed iterations; 0: each workload's default
  // json-tree: the request's shape (docs/background.md#json-tree: depth 6, 4 children, 8 ints)
  int tree_depth = 6;
  int tree_branching = 4;
  int tree_values = 8;
  // pairs
  std::vector<std::size_t> pair_sizes{8, 64, 512, 4096};
  std::size_t pair_blocks = 10'000;
  // node-lists: the node-list benchmark's element counts
  std::vector<std::size_t> list_sizes{1'000, 10'000, 100'000, 1'000'000};
  // false-sharing: threads, one counter each
  unsigned sharing_threads = 2;

  /// \returns `n` scaled, at least 1.
  std::size_t scaled(std::size_t n) const noexcept {
    const auto s = static_cast<std::size_t>(static_cast<double>(n) * scale);
    return s == 0 ? 1 : s;
  }

  bool operator==(const params&) const = default;
};

/// `value` as a JSON object, a member per field of MEMKIT_BENCH_PARAMS_FIELDS.
void to_json(nlohmann::json& j, const params& value);
/// \effects reads the members `j` has; the others keep their defaults.
void from_json(const nlohmann::json& j, params& value);

/// \effects adds one option per parameter to `app`, writing into `p`.
void add_options(CLI::App& app, params& p);

/// \returns the command-line arguments that make another memkit-bench process use `p`: what
/// add_options parses back to `p`.
std::vector<std::string> to_arguments(const params& p);

} // namespace memkit::bench
