// SPDX-License-Identifier: BSL-1.0
// tests/replacement/harness.hpp: the contract test's own small harness. The program runs once on
// glibc and once under LD_PRELOAD=libmemkit-preload.so (tests/replacement/CMakeLists.txt), so it
// cannot use GoogleTest's allocation-heavy machinery as the thing under test's first client; a
// check prints what failed and counts, and each case is a function registered by name.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace memkit::contract {

/// What the run expects to be talking to: glibc, libmemkit-preload.so preloaded, or
/// memkit::new_delete linked into the program (operator new is memkit's, malloc is glibc's).
enum class expected_allocator { glibc, memkit, new_delete };

/// Records a failed check (printed with its place) and \returns `ok`.
bool check(bool ok, const char* what, const char* file, int line);

#define MEMKIT_CHECK(condition)                                                                    \
  ::memkit::contract::check((condition), #condition, __FILE__, __LINE__)

/// \returns whether the block at `p` came from the allocator the run expects: memkit_owns(p) for
/// memkit and new_delete (whose runs use only operator new's blocks); for glibc, true (the run
/// proved at its start that memkit is not loaded).
bool served(const void* p);

/// memkit_stats_json (include/memkit/replacement.h) of the memkit and new_delete runs; 0 and
/// nothing written in the glibc run.
std::size_t stats_json(char* buffer, std::size_t size);

/// Sizes no allocator can serve: past PTRDIFF_MAX, 2^60 (beyond any x86-64 or AArch64 user
/// address space, so it fails even under overcommit_memory=1), and just below SIZE_MAX, where
/// adding a header or rounding up to a size class or page wraps around to a small size.
inline constexpr std::size_t impossible[] = {
    SIZE_MAX,      SIZE_MAX / 2 + 1, std::size_t{1} << 60,
    SIZE_MAX - 15, SIZE_MAX - 4095,  SIZE_MAX - (std::size_t{1} << 20)};

/// \returns the field `name` of the stats line (stats_json), or -1 if the line has none.
long long stats_field(const char* name);

/// \returns the field `name` of /proc/self/status ("VmData", "RssAnon"), in KiB; -1 if absent.
long status_kib(const char* name);
/// \returns the process's writable private memory (VmData, what RLIMIT_DATA bounds), in bytes.
std::size_t data_bytes();

/// \returns `n` through a volatile, so the compiler cannot fold a call with a known huge size.
std::size_t opaque(std::size_t n);

/// Makes `p` escape, so an allocation and its release cannot be elided as unused.
template <class T>
T* escape(T* p) {
  asm volatile("" : : "r"(p) : "memory");
  return p;
}

/// Fills `n` bytes at `p` with a pattern derived from `seed`; check_fill checks them.
void fill(void* p, std::size_t n, unsigned seed);
bool check_fill(const void* p, std::size_t n, unsigned seed);

bool is_aligned(const void* p, std::size_t alignment);

/// A child process of this executable (/proc/self/exe) and what it did.
struct child_result {
  bool exited = false; ///< false: killed by a signal (or timed out and killed)
  int code = 0;        ///< the exit status, or the signal
  bool timed_out = false;
  std::string out;
  std::string err;
};

/// Runs this executable with `args`, the environment with `extra_env` ("NAME=value") added or
/// replacing the variable of that name, and waits at most `timeout_seconds` (then kills it).
child_result run_self(const std::vector<std::string>& args,
                      const std::vector<std::string>& extra_env, int timeout_seconds);

/// \returns whether some line of `text` starts with `prefix` and contains `needle`, ignoring case.
bool has_line(const std::string& text, const std::string& prefix, const std::string& needle);

/// \returns the address a child printed as its first line of output, without "0x", so "0x7f.."
/// and "7F.." both match has_line.
std::string announced_address(const child_result& r);

/// What a case exercises, which decides the runs it is part of.
enum class case_kind {
  c_api,      ///< malloc and friends: the glibc and memkit runs
  cxx_api,    ///< operator new and delete only: every run
  memkit_api, ///< memkit beyond glibc, through operator new or replacement.h: memkit, new_delete
  preload_options, ///< MEMKIT_OPTIONS, seen through malloc: the memkit runs
  /// MEMKIT_OPTIONS through hundreds of children, each setting its own options: a memkit run that
  /// names the case (replacement.debug), not every one.
  preload_when_named
};

/// A named case of the contract.
struct test_case {
  const char* name;
  void (*run)();
  case_kind kind;
};

/// Registers a case at static-initialization time; \returns a dummy for the registering variable.
int add_case(test_case c);

/// A child-process action ("child NAME" on the command line), run instead of the cases.
int add_child_action(const char* name, int (*run)());

} // namespace memkit::contract

#define MEMKIT_CONTRACT_CONCAT2(a, b) a##b
#define MEMKIT_CONTRACT_CONCAT(a, b) MEMKIT_CONTRACT_CONCAT2(a, b)

/// Defines and registers a case: MEMKIT_CONTRACT_CASE(CallocZeroes, c_api) { ... }
#define MEMKIT_CONTRACT_CASE(name, kind)                                                           \
  static void name();                                                                              \
  static const int MEMKIT_CONTRACT_CONCAT(registered_, name) =                                     \
      ::memkit::contract::add_case({#name, &name, ::memkit::contract::case_kind::kind});           \
  static void name()
