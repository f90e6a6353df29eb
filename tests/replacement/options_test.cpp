// SPDX-License-Identifier: BSL-1.0
// tests/replacement/options_test.cpp: memkit's MEMKIT_OPTIONS, each seen from outside: a child of
// this program runs under the option, and its exit and stderr are checked. debug:1 must report a
// double free, an invalid free and an overrun on a line starting "memkit: " that names the address,
// then abort; stats:1 prints one JSON line at exit; an unknown option is reported and ignored.

#include "harness.hpp"

#include <signal.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
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

const int registered = add_child_action("double-free", double_free) +
                       add_child_action("invalid-free", invalid_free) +
                       add_child_action("overrun", overrun) +
                       add_child_action("overrun-after-realloc", overrun_after_realloc) +
                       add_child_action("overrun-aligned", overrun_aligned) +
                       add_child_action("double-delete", double_delete) +
                       add_child_action("wrong-size-delete", wrong_size_delete) +
                       add_child_action("allocate", allocate);

std::string lower(std::string s) {
  for (char& c : s) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return s;
}

/// \returns whether some line of `text` starts with `prefix` and contains `needle`.
bool has_line(const std::string& text, const std::string& prefix, const std::string& needle) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(prefix, 0) == 0 && lower(line).find(lower(needle)) != std::string::npos) {
      return true;
    }
  }
  return false;
}

void expect_report_and_abort(const char* action) {
  const child_result r =
      run_self({"child", action}, {"MEMKIT_OPTIONS=debug:1"}, child_timeout_seconds);
  // The address as the child printed it, without "0x", so "0x7f.." and "7F.." both match.
  std::string address = r.out.substr(0, r.out.find('\n'));
  address = address.rfind("0x", 0) == 0 ? address.substr(2) : address;
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

MEMKIT_CONTRACT_CASE(UnknownOptionIsReportedAndIgnored, preload_options) {
  const child_result r =
      run_self({"child", "allocate"}, {"MEMKIT_OPTIONS=bogus:1,stats:1"}, child_timeout_seconds);
  std::fprintf(stderr, "bogus:1,stats:1: stderr: %s", r.err.c_str());
  MEMKIT_CHECK(r.exited && r.code == 0);
  MEMKIT_CHECK(has_line(r.err, "memkit: unknown option", "bogus"));
  MEMKIT_CHECK(stats_lines(r.err).size() == 1);
}

} // namespace
