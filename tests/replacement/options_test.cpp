// SPDX-License-Identifier: BSL-1.0
// tests/replacement/options_test.cpp: memkit's MEMKIT_OPTIONS, each seen from outside: a child of
// this program runs under the option, and its exit and stderr are checked. debug:1 must report a
// double free, an invalid free and an overrun on a line starting "memkit: " that names the address,
// then abort; stats:1 prints one JSON line at exit, only to the stderr the program started with,
// stats:PATH appends it to a file; decay:0 gives freed memory back at once; an unknown option is
// reported and ignored.

#include "harness.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>
#include <sstream>
#include <string>

namespace {

using namespace memkit::contract;

constexpr int child_timeout_seconds = 20;

/// Prints `p` as the child's first line of output, so the parent knows which address to look for.
void announce(const void* p) {
  std::printf("%p\n", p);
  std::fflush(stdout);
}

int double_free() {
  void* p = escape(std::malloc(48));
  announce(p);
  std::free(p);
  std::free(p);
  return 0;
}

int invalid_free() {
  auto* p = static_cast<char*>(escape(std::malloc(64)));
  announce(p + 16);
  std::free(p + 16);
  return 0;
}

/// Writes the byte just past the `n` bytes requested at `p`, announcing `p`.
void overrun_at(char* p, std::size_t n) {
  announce(p);
  // Opaque, so the compiler does not reject the write it can see is out of bounds.
  p[opaque(n)] = 'x';
}

int overrun() {
  auto* p = static_cast<char*>(escape(std::malloc(opaque(24))));
  overrun_at(p, 24);
  std::free(p);
  return 0;
}

int overrun_after_realloc() {
  auto* p = static_cast<char*>(escape(std::malloc(10)));
  p = static_cast<char*>(escape(std::realloc(p, opaque(100))));
  overrun_at(p, 100);
  std::free(p);
  return 0;
}

int overrun_aligned() {
  void* p = nullptr;
  if (posix_memalign(&p, 256, opaque(100)) != 0) {
    return 1;
  }
  overrun_at(static_cast<char*>(escape(p)), 100);
  std::free(p);
  return 0;
}

int double_delete() {
  auto* p = escape(new std::string(40, 'x'));
  announce(p);
  // A copy the compiler cannot follow, so it does not reject the second delete it would see.
  void* again = p;
  asm volatile("" : "+r"(again));
  delete p;
  ::operator delete(again);
  return 0;
}

int wrong_size_delete() {
  void* p = escape(::operator new(100));
  announce(p);
  ::operator delete(p, opaque(40));
  return 0;
}

constexpr int allocations = 20000;

/// Allocates and frees `allocations` blocks.
int allocate() {
  for (int i = 0; i < allocations; ++i) {
    std::free(escape(std::malloc(static_cast<std::size_t>(i % 1000 + 1))));
  }
  return 0;
}

/// Closes stderr, opens MEMKIT_CONTRACT_FILE (which takes descriptor 2, the lowest free), writes
/// the program's data to it and allocates: memkit's stats line must not land in that file.
int stderr_reopened_as_data() {
  const char* path = std::getenv("MEMKIT_CONTRACT_FILE");
  if (path == nullptr || close(2) != 0 || open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600) != 2) {
    return 3;
  }
  allocate();
  const char data[] = "the program's data\n";
  return write(2, data, sizeof data - 1) == sizeof data - 1 ? 0 : 4;
}

/// Allocates 64 MiB of 1000-byte blocks, writes every byte, frees them all, and prints the
/// anonymous resident memory in KiB before the allocations, with them, and right after the frees.
int free_then_measure() {
  constexpr std::size_t count = 64 * 1024;
  constexpr std::size_t size = 1000;
  static void* blocks[count]; // not on the heap, and resident before the first measure
  std::memset(blocks, 0, sizeof blocks);
  const long before = status_kib("RssAnon");
  for (void*& p : blocks) {
    p = escape(std::malloc(size));
    if (p == nullptr) {
      return 3;
    }
    std::memset(p, 1, size);
  }
  const long with_blocks = status_kib("RssAnon");
  for (void* p : blocks) {
    std::free(p);
  }
  const long after = status_kib("RssAnon");
  std::printf("%ld %ld %ld\n", before, with_blocks, after);
  return 0;
}

const int registered = add_child_action("double-free", double_free) +
                       add_child_action("stderr-reopened-as-data", stderr_reopened_as_data) +
                       add_child_action("invalid-free", invalid_free) +
                       add_child_action("overrun", overrun) +
                       add_child_action("overrun-after-realloc", overrun_after_realloc) +
                       add_child_action("overrun-aligned", overrun_aligned) +
                       add_child_action("double-delete", double_delete) +
                       add_child_action("wrong-size-delete", wrong_size_delete) +
                       add_child_action("allocate", allocate) +
                       add_child_action("free-then-measure", free_then_measure);

void expect_report_and_abort(const char* action) {
  const child_result r =
      run_self({"child", action}, {"MEMKIT_OPTIONS=debug:1"}, child_timeout_seconds);
  const std::string address = announced_address(r);
  std::fprintf(stderr, "%s: exited %d, code %d, address %s, stderr: %s", action, r.exited, r.code,
               address.c_str(), r.err.c_str());
  MEMKIT_CHECK(!r.timed_out);
  MEMKIT_CHECK(!r.exited && r.code == SIGABRT);
  MEMKIT_CHECK(address.size() >= 4);
  MEMKIT_CHECK(has_line(r.err, "memkit: ", address));
}

MEMKIT_CONTRACT_CASE(DebugOptionReportsADoubleFreeWithItsAddress, preload_options) {
  expect_report_and_abort("double-free");
}

MEMKIT_CONTRACT_CASE(DebugOptionReportsAnInvalidFreeWithItsAddress, preload_options) {
  expect_report_and_abort("invalid-free");
}

MEMKIT_CONTRACT_CASE(DebugOptionReportsAnOverrunWithItsAddress, preload_options) {
  expect_report_and_abort("overrun");
  expect_report_and_abort("overrun-after-realloc");
  expect_report_and_abort("overrun-aligned");
}

MEMKIT_CONTRACT_CASE(DebugOptionReportsADoubleDeleteWithItsAddress, preload_options) {
  expect_report_and_abort("double-delete");
}

MEMKIT_CONTRACT_CASE(DebugOptionReportsASizedDeleteWithTheWrongSize, preload_options) {
  expect_report_and_abort("wrong-size-delete");
  // Without debug:1 the header decides, and the program goes on.
  const child_result r =
      run_self({"child", "wrong-size-delete"}, {"MEMKIT_OPTIONS="}, child_timeout_seconds);
  MEMKIT_CHECK(r.exited && r.code == 0);
}

// Without a delay, a chunk whose blocks are all free gives its pages back as it enters the depot,
// all but its header's page (a 16th of it, which links it into the depot): of 64 MiB freed, what
// stays is those pages and the thread's spare and current chunks. (By default all of it stays
// 100 ms, a time a test cannot count on either way.)
MEMKIT_CONTRACT_CASE(DecayZeroGivesFreedChunksBackAtOnce, preload_options) {
  const child_result r =
      run_self({"child", "free-then-measure"}, {"MEMKIT_OPTIONS=decay:0"}, child_timeout_seconds);
  MEMKIT_CHECK(r.exited && r.code == 0);
  long before = 0;
  long with_blocks = 0;
  long after = 0;
  MEMKIT_CHECK(std::sscanf(r.out.c_str(), "%ld %ld %ld", &before, &with_blocks, &after) == 3);
  std::fprintf(stderr, "decay:0, anonymous KiB: %ld before, %ld with 64 MiB, %ld after\n", before,
               with_blocks, after);
  MEMKIT_CHECK(with_blocks - before >= 60 * 1024);
  MEMKIT_CHECK(after - before < (with_blocks - before) / 16 + 2 * 1024);
}

/// \returns the number after "\"name\":" in `line`, or -1.
long long field(const std::string& line, const std::string& name) {
  const auto at = line.find("\"" + name + "\":");
  return at == std::string::npos ? -1 : std::atoll(line.c_str() + at + name.size() + 3);
}

/// \returns the lines of `text` that start with the stats object's opening.
std::vector<std::string> stats_lines(const std::string& text) {
  std::vector<std::string> found;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("{\"memkit\":", 0) == 0) {
      found.push_back(line);
    }
  }
  return found;
}

MEMKIT_CONTRACT_CASE(StatsOptionPrintsOneJsonLineAtExit, preload_options) {
  const child_result r =
      run_self({"child", "allocate"}, {"MEMKIT_OPTIONS=stats:1"}, child_timeout_seconds);
  MEMKIT_CHECK(r.exited && r.code == 0);
  const auto lines = stats_lines(r.err);
  MEMKIT_CHECK(lines.size() == 1);
  if (lines.size() == 1) {
    std::fprintf(stderr, "stats: %s\n", lines[0].c_str());
    MEMKIT_CHECK(field(lines[0], "allocations") >= allocations);
    MEMKIT_CHECK(field(lines[0], "deallocations") >= allocations);
    // The release first (memkit/version.hpp; the engine test checks the exact string).
    MEMKIT_CHECK(lines[0].rfind("{\"memkit\":{\"version\":\"", 0) == 0);
    MEMKIT_CHECK(lines[0].back() == '}');
  }
  const child_result quiet = run_self({"child", "allocate"}, {}, child_timeout_seconds);
  MEMKIT_CHECK(quiet.exited && quiet.code == 0 && stats_lines(quiet.err).empty());
}

/// \returns the contents of the file at `path` ("" if there is none).
std::string contents(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// A file name of its own for this process, under TMPDIR or /tmp.
std::string scratch_file(const char* name) {
  const char* dir = std::getenv("TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/memkit-contract-" +
         std::to_string(getpid()) + "-" + name;
}

MEMKIT_CONTRACT_CASE(StatsOptionNeverWritesIntoAFileTheProgramOpened, preload_options) {
  const std::string data = scratch_file("data");
  const child_result r =
      run_self({"child", "stderr-reopened-as-data"},
               {"MEMKIT_OPTIONS=stats:1", "MEMKIT_CONTRACT_FILE=" + data}, child_timeout_seconds);
  const std::string written = contents(data);
  std::fprintf(stderr, "stats:1, stderr reopened as a data file: exit %d; the file: %s", r.code,
               written.c_str());
  MEMKIT_CHECK(r.exited && r.code == 0);
  MEMKIT_CHECK(written == "the program's data\n");
  std::remove(data.c_str());
}

MEMKIT_CONTRACT_CASE(StatsOptionWithAPathAppendsTheLineToThatFile, preload_options) {
  const std::string path = scratch_file("stats");
  std::remove(path.c_str());
  for (int run = 0; run < 2; ++run) {
    const child_result r =
        run_self({"child", "allocate"}, {"MEMKIT_OPTIONS=stats:" + path}, child_timeout_seconds);
    MEMKIT_CHECK(r.exited && r.code == 0);
    MEMKIT_CHECK(r.err.empty());
  }
  const auto lines = stats_lines(contents(path));
  std::fprintf(stderr, "stats:%s: %zu lines\n", path.c_str(), lines.size());
  MEMKIT_CHECK(lines.size() == 2);
  for (const auto& line : lines) {
    MEMKIT_CHECK(field(line, "allocations") >= allocations);
  }
  std::remove(path.c_str());
  // A value that is neither 0, 1 nor a path is reported, and no line is written anywhere.
  const child_result bad =
      run_self({"child", "allocate"}, {"MEMKIT_OPTIONS=stats:2"}, child_timeout_seconds);
  MEMKIT_CHECK(bad.exited && bad.code == 0);
  MEMKIT_CHECK(has_line(bad.err, "memkit: bad value", "stats:2"));
  MEMKIT_CHECK(stats_lines(bad.err).empty());
}

MEMKIT_CONTRACT_CASE(UnknownOptionIsReportedAndIgnored, preload_options) {
  const child_result r =
      run_self({"child", "allocate"}, {"MEMKIT_OPTIONS=bogus:1,stats:1"}, child_timeout_seconds);
  std::fprintf(stderr, "bogus:1,stats:1: stderr: %s", r.err.c_str());
  MEMKIT_CHECK(r.exited && r.code == 0);
  MEMKIT_CHECK(has_line(r.err, "memkit: unknown option", "bogus"));
  MEMKIT_CHECK(stats_lines(r.err).size() == 1);
}

} // namespace
