// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/replay/program_file.hpp: a compiled trace in a file, written by the parent and
// read by each replay child. The child thus never decodes or compiles: the heap under test holds
// nothing the harness allocated and freed before the replay (an allocator that keeps freed memory
// would otherwise serve the replay from the compiler's leftovers, and its peak RSS would not rise).
// The operations stay in the file: the compiler writes each stream's chunks there as it goes, and
// the replay reads them a chunk at a time, so neither holds a long trace's operations in memory.
#pragma once

#include <string>

#include "replay/compile.hpp"

namespace memkit::bench::replay {

/// \returns storage in a new file at `path` (replacing any), for a causal_compiler to write the
/// operations into; finish_program_file completes it. \throws std::runtime_error if it cannot be
/// created.
op_storage create_program_file(const std::string& path);

/// \effects writes the rest of `p` (streams, chunks, sites, statistics) into the file its
/// operations were compiled into (create_program_file). \throws std::runtime_error if it cannot.
void finish_program_file(const program& p);

/// \effects writes `p` to `path`, operations and all, for this same binary to read back.
/// \throws std::runtime_error if it cannot be written.
void save_program(const program& p, const std::string& path);

/// \returns the program in the file at `path`, its operations left there and read as the replay
/// goes. \throws std::runtime_error naming `path` if it cannot be read or was not written by this
/// binary.
program load_program(const std::string& path);

} // namespace memkit::bench::replay
