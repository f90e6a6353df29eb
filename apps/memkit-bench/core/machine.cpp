// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/core/machine.cpp: the machine facts, from /proc, uname and the compiler.

#include "core/machine.hpp"

#include <sys/utsname.h>

#include <cstdio>
#include <ctime>
#include <fstream>
#include <thread>

#include <memkit/huge_page.hpp>
#include <memkit/version.hpp>

namespace memkit::bench {
namespace {

std::string first_line_with(const char* path, const std::string& key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) {
      const auto colon = line.find(':');
      return colon == std::string::npos ? line
                                        : line.substr(line.find_first_not_of(" \t", colon + 1));
    }
  }
  return "unknown";
}

/// The commit memkit-bench was built from, asked of git at run time so a rebuild after a commit
/// is not needed: "unknown" where the source tree or git is missing.
std::string source_commit() {
  std::string commit;
  if (std::FILE* p = ::popen("git -C '" MEMKIT_BENCH_SOURCE_DIR
                             "' describe --always --dirty --abbrev=12 2>/dev/null",
                             "r")) {
    char line[128];
    if (std::fgets(line, sizeof line, p) != nullptr) {
      commit = line;
      commit.erase(commit.find_last_not_of("\n") + 1);
    }
    ::pclose(p);
  }
  return commit.empty() ? "unknown" : commit;
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm t{};
  char text[32];
  return ::gmtime_r(&now, &t) != nullptr && std::strftime(text, sizeof text, "%FT%TZ", &t) != 0
             ? text
             : "unknown";
}

} // namespace

run_info describe_run() {
  run_info info;
  info.version = MEMKIT_VERSION_STRING;
  info.commit = source_commit();
  info.date = utc_now();
  info.optimized = built_optimized();
#if defined(__clang__)
  info.compiler = "clang " __clang_version__;
#elif defined(__GNUC__)
  info.compiler = "gcc " __VERSION__;
#endif
  info.cpu = first_line_with("/proc/cpuinfo", "model name");
  info.cores = std::thread::hardware_concurrency();
  utsname u{};
  if (uname(&u) == 0) {
    info.kernel = std::string(u.sysname) + " " + u.release;
  }
  switch (huge_page_resource::transparent_huge_page_policy()) {
  case thp_policy::always:
    info.thp_policy = "always";
    break;
  case thp_policy::madvise:
    info.thp_policy = "madvise";
    break;
  case thp_policy::never:
    info.thp_policy = "never";
    break;
  default:
    info.thp_policy = "unavailable";
    break;
  }
  return info;
}

} // namespace memkit::bench
