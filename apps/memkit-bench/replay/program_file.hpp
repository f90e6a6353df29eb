// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/replay/program_file.hpp: a compiled trace written to a file by the parent and
// read by each replay child. The child thus never decodes or compiles: the heap under test holds
// the streams and nothing the harness allocated and freed before the replay (an allocator that
// keeps freed memory would otherwise serve the replay from the compiler's leftovers, and its peak
// RSS would not rise).
#pragma once

#include <string>

#include "replay/compile.hpp"

namespace memkit::bench::replay {

/// \effects writes `p` to `path`, for this same binary to read back. \throws std::runtime_error
/// if it cannot be written.
void save_program(const program& p, const std::string& path);

/// \returns the program save_program wrote to `path`. \throws std::runtime_error naming `path` if
/// it cannot be read or was not written by this binary's save_program.
program load_program(const std::string& path);

} // namespace memkit::bench::replay
