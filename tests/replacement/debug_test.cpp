// SPDX-License-Identifier: BSL-1.0
// tests/replacement/debug_test.cpp: MEMKIT_OPTIONS=debug:1 under the hazards a debug mode must
// survive, each in a child of this program (its exit and stderr checked): a byte written anywhere
// in the 64 bytes before or after a block is reported as an underrun or overrun naming the block,
// never a crash, a "foreign pointer" or silence; the quarantine is bounded in bytes, keeps large
// blocks out of the resident set, and is drained before a request fails.

#include "harness.hpp"

#include <malloc.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

namespace {

using namespace memkit::contract;

constexpr int child_timeout_seconds = 20;
/// How far before and after a block every byte is checked (docs/REPLACEMENT.md, "Options").
constexpr long guarded_bytes = 64;

/// \returns the integer in environment variable `name`, or `otherwise`.
long env_long(const char* name, long otherwise) {
  const char* v = std::getenv(name);
  return v == nullptr ? otherwise : std::strtol(v, nullptr, 0);
}

/// A block of `bytes` aligned to `alignment` (16: malloc), from the C API.
char* block(std::size_t alignment, std::size_t bytes) {
  if (alignment <= 16) {
    return static_cast<char*>(escape(std::malloc(opaque(bytes))));
  }
  void* p = nullptr;
  return posix_memalign(&p, alignment, opaque(bytes)) == 0 ? static_cast<char*>(escape(p))
                                                           : nullptr;
}

/// Child: changes the byte at MEMKIT_CONTRACT_OFFSET from a block of MEMKIT_CONTRACT_BYTES bytes
/// aligned to MEMKIT_CONTRACT_ALIGNMENT, then frees the block. No core file: every run aborts.
int write_around() {
  const rlimit no_core{0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  const auto alignment = static_cast<std::size_t>(env_long("MEMKIT_CONTRACT_ALIGNMENT", 16));
  const auto bytes = static_cast<std::size_t>(env_long("MEMKIT_CONTRACT_BYTES", 100));
  const long offset = env_long("MEMKIT_CONTRACT_OFFSET", 0);
  char* p = block(alignment, bytes);
  if (p == nullptr) {
    return 3;
  }
  std::printf("%p\n", static_cast<void*>(p));
  std::fflush(stdout);
  // Complemented, so the byte changes whatever it held (a guard byte, a header's).
  char* const at = p + opaque(static_cast<std::size_t>(offset));
  *at = static_cast<char>(~*at);
  std::free(p);
  return 0;
}

/// Sixty rounds of a 32 MiB block allocated, every page touched, and freed; prints the peak
/// resident size in KiB.
int large_blocks_freed() {
  constexpr std::size_t size = std::size_t{32} << 20;
  for (int round = 0; round < 60; ++round) {
    auto* p = static_cast<char*>(escape(std::malloc(opaque(size))));
    if (p == nullptr) {
      return 3;
    }
    for (std::size_t i = 0; i < size; i += 4096) {
      p[i] = static_cast<char>(round);
    }
    std::free(p);
  }
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  std::printf("%ld\n", u.ru_maxrss);
  return 0;
}

char* reserve = nullptr;

void free_the_reserve() {
  delete[] reserve;
  reserve = nullptr;
  std::set_new_handler(nullptr);
}

/// With a 160 MiB reserve and a data limit (RLIMIT_DATA) 96 MiB above what the process then
/// holds, a 192 MiB request fits only once the new_handler has freed the reserve. Exits 0 if it
/// succeeds, 4 on bad_alloc, 5 if it succeeded without the reserve freed (the limit did not bind).
/// RLIMIT_AS would not bind: memkit's reservations count whole from the start.
int new_handler_frees_a_reserve() {
  constexpr std::size_t mib = std::size_t{1} << 20;
  reserve = new char[opaque(160 * mib)];
  std::memset(reserve, 1, 160 * mib);
  const std::size_t limit = data_bytes() + 96 * mib;
  const rlimit data{limit, limit};
  if (limit == 96 * mib || setrlimit(RLIMIT_DATA, &data) != 0) {
    return 3;
  }
  std::set_new_handler(free_the_reserve);
  try {
    char* big = new char[opaque(192 * mib)];
    std::memset(big, 2, 192 * mib);
    delete[] big;
  } catch (const std::bad_alloc&) {
    return 4;
  }
  return reserve == nullptr ? 0 : 5;
}

/// Frees sixteen blocks of 20 MiB and prints how many bytes memkit still has mapped above what it
/// had before, once malloc_trim gave back the regions of the blocks that left the quarantine
/// (the upstream keeps freed regions for reuse; the trim leaves the quarantine as it is).
int quarantine_of_large_blocks() {
  constexpr std::size_t size = std::size_t{20} << 20;
  malloc_trim(0);
  const long long before = stats_field("mapped_bytes");
  for (int i = 0; i < 16; ++i) {
    std::free(escape(std::malloc(opaque(size))));
  }
  malloc_trim(0);
  std::printf("%lld\n", stats_field("mapped_bytes") - before);
  return 0;
}

const int registered =
    add_child_action("write-around", write_around) +
    add_child_action("large-blocks-freed", large_blocks_freed) +
    add_child_action("new-handler-frees-a-reserve", new_handler_frees_a_reserve) +
    add_child_action("quarantine-of-large-blocks", quarantine_of_large_blocks);

/// Writes at every offset within guarded_bytes of a block of `bytes` aligned to `alignment`, each
/// in a child under debug:1; \returns the number of offsets not reported as they must be.
int sweep(std::size_t alignment, std::size_t bytes) {
  int missed = 0;
  const long n = static_cast<long>(bytes);
  for (long offset = -guarded_bytes; offset < n + guarded_bytes; ++offset) {
    if (offset == 0) {
      offset = n; // the block's own bytes are the program's
    }
    const child_result r = run_self({"child", "write-around"},
                                    {"MEMKIT_OPTIONS=debug:1",
                                     "MEMKIT_CONTRACT_ALIGNMENT=" + std::to_string(alignment),
                                     "MEMKIT_CONTRACT_BYTES=" + std::to_string(bytes),
                                     "MEMKIT_CONTRACT_OFFSET=" + std::to_string(offset)},
                                    child_timeout_seconds);
    const std::string address = announced_address(r);
    const char* kind = offset < 0 ? "underrun at" : "overrun at";
    const bool ok = !r.timed_out && !r.exited && r.code == SIGABRT && address.size() >= 4 &&
                    has_line(r.err, "memkit: ", std::string(kind) + " 0x" + address);
    if (!ok) {
      ++missed;
      std::fprintf(stderr, "alignment %zu, %zu bytes, offset %ld: %s %d, stderr: %s\n", alignment,
                   bytes, offset, r.exited ? "exit" : "signal", r.code, r.err.c_str());
    }
  }
  return missed;
}

MEMKIT_CONTRACT_CASE(DebugOptionReportsEveryByteWrittenAroundABlock, preload_when_named) {
  MEMKIT_CHECK(sweep(16, 100) == 0);
  MEMKIT_CHECK(sweep(16, 1) == 0);
  MEMKIT_CHECK(sweep(64, 100) == 0);
  MEMKIT_CHECK(sweep(4096, 100) == 0);
  MEMKIT_CHECK(sweep(16, 40000) == 0); // a large region of its own
}

MEMKIT_CONTRACT_CASE(DebugOptionKeepsFreedLargeBlocksOutOfTheResidentSet, preload_when_named) {
  const child_result r =
      run_self({"child", "large-blocks-freed"}, {"MEMKIT_OPTIONS=debug:1"}, child_timeout_seconds);
  const long peak_kib = std::atol(r.out.c_str());
  std::fprintf(stderr, "60 x 32 MiB freed under debug:1: peak RSS %ld KiB\n", peak_kib);
  MEMKIT_CHECK(r.exited && r.code == 0);
  // One live block (32 MiB) and the program; 1.9 GiB when the quarantine kept every block.
  MEMKIT_CHECK(peak_kib > 0 && peak_kib < 128 * 1024);
}

MEMKIT_CONTRACT_CASE(DebugOptionDrainsTheQuarantineBeforeARequestFails, preload_when_named) {
  for (const char* options : {"MEMKIT_OPTIONS=debug:1", "MEMKIT_OPTIONS="}) {
    const child_result r =
        run_self({"child", "new-handler-frees-a-reserve"}, {options}, child_timeout_seconds);
    std::fprintf(stderr, "%s: new_handler freeing a reserve: %s %d\n", options,
                 r.exited ? "exit" : "signal", r.code);
    MEMKIT_CHECK(r.exited && r.code == 0);
  }
}

MEMKIT_CONTRACT_CASE(DebugOptionBoundsTheQuarantineInBytes, preload_when_named) {
  constexpr long long mib = 1 << 20;
  // The bound, and what the 16 blocks of 20 MiB may leave mapped under it: the blocks that fit in
  // the bound, and the newest, which is kept even alone (a region of 22 MiB on the size grid, and
  // a page or two of the engine's bookkeeping: 23 MiB).
  const struct {
    const char* options;
    long long most;
  } runs[] = {{"MEMKIT_OPTIONS=debug:1", 64 * mib + 23 * mib},
              {"MEMKIT_OPTIONS=debug:1,quarantine:8m", 8 * mib + 23 * mib},
              {"MEMKIT_OPTIONS=debug:1,quarantine:0", 23 * mib}};
  for (const auto& run : runs) {
    const child_result r =
        run_self({"child", "quarantine-of-large-blocks"}, {run.options}, child_timeout_seconds);
    const long long kept = std::atoll(r.out.c_str());
    std::fprintf(stderr, "%s: %lld bytes still mapped; stderr: %s\n", run.options, kept,
                 r.err.c_str());
    MEMKIT_CHECK(r.exited && r.code == 0 && r.err.empty());
    MEMKIT_CHECK(kept >= 0 && kept <= run.most);
  }
}

} // namespace
