// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/core/spawn.cpp: posix_spawn of /proc/self/exe with an environment of a chosen
// size, and the checks that address space layout randomization is on.

#include "core/spawn.hpp"

#include <spawn.h>
#include <sys/personality.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>

extern char** environ;

namespace memkit::bench {

std::string enable_layout_randomization() {
  const int persona = personality(0xffffffff);
  if (persona != -1 && (persona & ADDR_NO_RANDOMIZE) != 0) {
    personality(static_cast<unsigned long>(persona & ~ADDR_NO_RANDOMIZE));
  }
  // Documentation/admin-guide/sysctl/kernel.rst: 0 turns randomization off for every process.
  int level = -1;
  std::ifstream("/proc/sys/kernel/randomize_va_space") >> level;
  if (level == 0) {
    return "ASLR is off (kernel.randomize_va_space = 0): every process gets the same layout "
           "apart from the environment padding";
  }
  return "";
}

int run_self(const std::vector<std::string>& args, const std::string& preload,
             std::size_t padding) {
  const std::string padding_prefix = std::string(padding_variable) + "=";
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    const bool replaced = (!preload.empty() && std::strncmp(*e, "LD_PRELOAD=", 11) == 0) ||
                          std::strncmp(*e, padding_prefix.c_str(), padding_prefix.size()) == 0;
    if (!replaced) {
      env_strings.emplace_back(*e);
    }
  }
  if (!preload.empty()) {
    env_strings.push_back("LD_PRELOAD=" + preload);
  }
  env_strings.push_back(padding_prefix + std::string(padding, 'x'));
  std::vector<char*> env;
  for (auto& s : env_strings) {
    env.push_back(s.data());
  }
  env.push_back(nullptr);
  std::vector<std::string> argv_strings{"memkit-bench"};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : argv_strings) {
    argv.push_back(s.data());
  }
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv.data(), env.data()) != 0) {
    return 127;
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) {
    return 127;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

} // namespace memkit::bench
