// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/replay/command.hpp: `memkit-bench replay TRACE` and `memkit-bench advise
// TRACE` (docs/TRACE.md): the command lines, the processes (each allocator in its own, under
// LD_PRELOAD with the interception check, several processes each) and the outputs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace memkit::bench::replay {

/// What replay and advise share.
struct common_options {
  std::string trace;
  std::vector<std::string> allocators; ///< empty: std and every replacement available
  unsigned processes = 5;              ///< processes per variant, interleaved
  std::string touch = "page";          ///< none, page or line (replayer.hpp)
  std::uint32_t sample_every = 64;
  std::string json_file;
  std::string report_dir; ///< batch mode's HTML report of the replays' rows
};

struct replay_command_options {
  common_options c;
  std::vector<std::string> policies; ///< each "SITE=STRATEGY,...": one more variant over std
  std::string as_child;              ///< internal: replay once under this allocator
  std::string child_routes;          ///< internal: the child's policy
  /// internal: policies the child replays in turn, `;` between them (paired_replays,
  /// processes.hpp); --child-rounds rounds of each, after one round to warm up
  std::string child_paired;
  unsigned child_rounds = 3;
  std::string program_file; ///< internal: the compiled trace (program_file.hpp)
};

struct advise_command_options {
  common_options c;
  std::size_t top = 5;          ///< sites by operations, and as many by peak bytes
  double time_threshold = 0.05; ///< a candidate must be this much faster...
  double rss_threshold = 0.10;  ///< ...or need this much less peak RSS, interval and all
  unsigned rounds = 3;          ///< replays of each candidate per paired process (advise.cpp)
};

/// The two subcommands and what they parse into.
struct replay_commands {
  CLI::App* replay = nullptr;
  CLI::App* advise = nullptr;
  replay_command_options r;
  advise_command_options a;
};

/// \effects adds `replay` and `advise` to `app`, parsing into `c`.
void add_replay_commands(CLI::App& app, replay_commands& c);

/// \returns the exit status of whichever of the two ran (0 ok, 1 a process failed or a block's
/// contents were wrong, 2 bad input), or -1 if neither was chosen.
int run_replay_commands(const replay_commands& c);

} // namespace memkit::bench::replay
