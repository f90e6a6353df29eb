// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/replacement/replacement.hpp: memkit's own libmemkit-preload.so, mimalloc,
// jemalloc, tcmalloc and oneTBB's tbbmalloc proxy as global malloc/operator new replacements, each
// run in child processes under LD_PRELOAD (core/spawn.hpp) and checked to have really taken over.
#pragma once

#include <string>
#include <vector>

namespace memkit::bench {

/// A malloc replacement and the shared library that provides it ("" when not installed).
struct replacement {
  std::string name;
  std::string library;
};

/// \returns memkit, mimalloc, jemalloc, tcmalloc and oneTBB's tbbmalloc proxy with the libraries
/// found (memkit's: built) when memkit-bench was built.
std::vector<replacement> known_replacements();

/// \returns why `r` has no library: memkit's was not built with this binary (not under
/// sanitizers), a peer's is not installed.
std::string why_missing(const replacement& r);

/// \returns whether `name` is one of known_replacements().
bool is_replacement(const std::string& name);

/// \returns why the global replacements cannot run in this binary ("" if they can): a sanitizer
/// runtime replaces malloc itself, so a preloaded allocator would not be what gets measured.
std::string replacements_unavailable_reason();

/// Called in the child: \returns "" if both malloc and operator new are served by `name`'s
/// library, else what was found instead. Checks that `malloc` resolves into the library (dladdr)
/// and asks the library itself, through its own API, whether a block from `new` is its own.
std::string check_interception(const std::string& name);

} // namespace memkit::bench
