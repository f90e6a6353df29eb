// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/core/params.cpp: the parameters' JSON form, command-line options and child
// arguments, each generated from MEMKIT_BENCH_PARAMS_FIELDS.

#include "params.hpp"

#include <sstream>
#include <type_traits>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "core/fields.hpp"

namespace memkit::bench {
namespace {

/// "tree_depth" -> "--tree-depth".
std::string option_name(std::string field) {
  for (char& c : field) {
    c = c == '_' ? '-' : c;
  }
  return "--" + field;
}

template <class T>
std::string argument(const T& value) {
  std::ostringstream s;
  if constexpr (std::is_floating_point_v<T>) {
    s.precision(17); // every double prints back to itself
    s << value;
  } else if constexpr (std::is_arithmetic_v<T>) {
    s << value;
  } else {
    for (std::size_t i = 0; i < value.size(); ++i) {
      s << (i == 0 ? "" : ",") << value[i];
    }
  }
  return s.str();
}

/// The help text and the value check of each option.
void describe(CLI::App& app, params& p) {
  app.get_option("--scale")
      ->description("multiplies every workload's element counts (default 1)")
      ->check(CLI::PositiveNumber);
  app.get_option("--iterations")
      ->description("timed iterations per workload (default: per workload)");
  app.get_option("--tree-depth")
      ->description("json-tree: maximum depth (default " + std::to_string(p.tree_depth) + ")")
      ->check(CLI::Range(1, 12));
  app.get_option("--tree-branching")
      ->description("json-tree: fields of the root, tapering below it to 0-1 above the leaves "
                    "(default " +
                    std::to_string(p.tree_branching) + ")")
      ->check(CLI::Range(0, 16));
  app.get_option("--tree-values")
      ->description("json-tree: most ints per node (default " + std::to_string(p.tree_values) + ")")
      ->check(CLI::Range(0, 1000));
  app.get_option("--pair-sizes")
      ->description("pairs: block sizes (default " + argument(p.pair_sizes) + ")")
      ->check(CLI::Range(std::size_t{8}, std::size_t{1} << 20));
  app.get_option("--pair-blocks")
      ->description("pairs: blocks allocated, then freed, per iteration (default " +
                    std::to_string(p.pair_blocks) + ")");
  app.get_option("--list-sizes")
      ->description("node-lists: element counts (default " + argument(p.list_sizes) + ")");
  app.get_option("--sharing-threads")
      ->description("false-sharing: threads, one counter each (default " +
                    std::to_string(p.sharing_threads) + ")")
      ->check(CLI::Range(1u, 64u));
}

} // namespace

MEMKIT_BENCH_DEFINE_JSON(params, MEMKIT_BENCH_PARAMS_FIELDS)

void add_options(CLI::App& app, params& p) {
#define MEMKIT_BENCH_PARAMS_OPTION(name)                                                           \
  if constexpr (std::is_arithmetic_v<decltype(p.name)>) {                                          \
    app.add_option(option_name(#name), p.name);                                                    \
  } else {                                                                                         \
    app.add_option(option_name(#name), p.name)->delimiter(',');                                    \
  }
  MEMKIT_BENCH_PARAMS_FIELDS(MEMKIT_BENCH_PARAMS_OPTION)
#undef MEMKIT_BENCH_PARAMS_OPTION
  describe(app, p);
}

std::vector<std::string> to_arguments(const params& p) {
  std::vector<std::string> a;
#define MEMKIT_BENCH_PARAMS_ARGUMENT(name)                                                         \
  a.insert(a.end(), {option_name(#name), argument(p.name)});
  MEMKIT_BENCH_PARAMS_FIELDS(MEMKIT_BENCH_PARAMS_ARGUMENT)
#undef MEMKIT_BENCH_PARAMS_ARGUMENT
  return a;
}

} // namespace memkit::bench
