// SPDX-License-Identifier: BSL-1.0
// tests/replacement/harness.cpp: checks, child processes and the contract test's main.
//
// Usage: memkit_replacement_contract glibc|memkit [CASE...]
//        memkit_replacement_contract_new_delete new-delete [CASE...]
//        memkit_replacement_contract child ACTION
// The first forms prove, before any case, that the run talks to the allocator it names (memkit:
// memkit_owns is defined and claims a fresh block; glibc: it is not, and malloc lives in libc;
// new-delete, the program linked with memkit::new_delete: memkit_owns claims a block from new
// and not one from malloc; malloc is glibc's, or the library MEMKIT_CONTRACT_MALLOC names when a
// run preloads one), then run the cases of that run (or only those named) and exit 1 if any check
// failed.

#include "harness.hpp"

#ifdef MEMKIT_CONTRACT_NEW_DELETE
#include <memkit/replacement.h>
#endif

#include <dlfcn.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <new>
#include <sstream>

extern char** environ;

namespace memkit::contract {
namespace {

expected_allocator expected_ = expected_allocator::glibc;
int failures_ = 0;
int (*memkit_owns_)(const void*) = nullptr;
std::size_t (*memkit_stats_json_)(char*, std::size_t) = nullptr;

std::vector<test_case>& cases() {
  static std::vector<test_case> c;
  return c;
}

std::map<std::string, int (*)()>& child_actions() {
  static std::map<std::string, int (*)()> a;
  return a;
}

/// \returns the file of the shared object that defines `symbol` as the program sees it.
std::string defining_object(const char* symbol) {
  void* address = dlsym(RTLD_DEFAULT, symbol);
  Dl_info info{};
  if (address == nullptr || dladdr(address, &info) == 0 || info.dli_fname == nullptr) {
    return "";
  }
  return info.dli_fname;
}

/// Finds memkit's own entry points (include/memkit/replacement.h), where it is loaded or linked.
void look_up_memkit() {
#ifdef MEMKIT_CONTRACT_NEW_DELETE
  // Linked statically: an executable's symbols are not visible to dlsym.
  memkit_owns_ = &memkit_owns;
  memkit_stats_json_ = &memkit_stats_json;
#else
  memkit_owns_ = reinterpret_cast<int (*)(const void*)>(dlsym(RTLD_DEFAULT, "memkit_owns"));
  memkit_stats_json_ = reinterpret_cast<std::size_t (*)(char*, std::size_t)>(
      dlsym(RTLD_DEFAULT, "memkit_stats_json"));
#endif
}

/// \returns whether the process talks to the expected malloc, printing what it found.
bool verify_allocator() {
  const std::string malloc_from = defining_object("malloc");
  std::printf("malloc is defined in %s; memkit_owns is %s\n", malloc_from.c_str(),
              memkit_owns_ == nullptr ? "not defined" : "defined");
  bool ok = true;
  if (expected_ == expected_allocator::new_delete) {
    ok &= MEMKIT_CHECK(memkit_owns_ != nullptr);
    // The program's malloc: glibc's, or the one a run preloads (MEMKIT_CONTRACT_MALLOC names it).
    const char* preloaded = std::getenv("MEMKIT_CONTRACT_MALLOC");
    ok &= MEMKIT_CHECK(malloc_from.find(preloaded != nullptr ? preloaded : "libc.so") !=
                       std::string::npos);
    if (memkit_owns_ != nullptr) {
      int* q = escape(new int(1));
      ok &= MEMKIT_CHECK(memkit_owns_(q) == 1);
      delete q;
      void* p = escape(std::malloc(16));
      ok &= MEMKIT_CHECK(memkit_owns_(p) == 0);
      std::free(p);
    }
  } else if (expected_ == expected_allocator::memkit) {
    ok &= MEMKIT_CHECK(memkit_owns_ != nullptr);
    ok &= MEMKIT_CHECK(malloc_from.find("libmemkit-preload.so") != std::string::npos);
    if (memkit_owns_ != nullptr) {
      void* p = escape(std::malloc(16));
      ok &= MEMKIT_CHECK(memkit_owns_(p) == 1);
      std::free(p);
      int local = 0;
      ok &= MEMKIT_CHECK(memkit_owns_(escape(&local)) == 0);
    }
  } else {
    ok &= MEMKIT_CHECK(memkit_owns_ == nullptr);
    ok &= MEMKIT_CHECK(malloc_from.find("libc.so") != std::string::npos);
  }
  return ok;
}

/// A static object whose destructor frees a block from main and allocates again, after main has
/// returned and the atexit handler below has run; it can only report by the exit status.
struct frees_at_static_destruction {
  void* block = nullptr;
  ~frees_at_static_destruction() {
    if (block == nullptr) {
      return;
    }
    const bool ok = check_fill(block, 3000, 8);
    ::operator delete(block);
    void* again = ::operator new(100, std::nothrow);
    ::operator delete(again);
    if (!ok || again == nullptr) {
      std::fputs("contract: FAILED: a block freed by a static destructor\n", stderr);
      std::_Exit(3);
    }
  }
} static_holder;

/// An atexit handler allocates and frees after main has returned; it can only report by the exit
/// status.
void allocate_at_exit() {
  const bool cxx_only = expected_ == expected_allocator::new_delete;
  void* p = cxx_only ? ::operator new(4000, std::nothrow) : std::malloc(4000);
  if (p == nullptr) {
    std::_Exit(3);
  }
  fill(p, 4000, 7);
  const bool ok = check_fill(p, 4000, 7) && served(p);
  if (cxx_only) {
    ::operator delete(p);
  } else {
    std::free(p);
  }
  if (!ok) {
    std::fputs("contract: FAILED: allocation in an atexit handler\n", stderr);
    std::_Exit(3);
  }
}

/// \returns whether a case of `kind` belongs to the run.
bool part_of_run(case_kind kind) {
  switch (expected_) {
  case expected_allocator::glibc:
    return kind == case_kind::c_api || kind == case_kind::cxx_api;
  case expected_allocator::new_delete:
    return kind == case_kind::cxx_api || kind == case_kind::memkit_api;
  case expected_allocator::memkit:
    return true;
  }
  return false;
}

} // namespace

bool check(bool ok, const char* what, const char* file, int line) {
  if (!ok) {
    ++failures_;
    std::fprintf(stderr, "%s:%d: FAILED: %s\n", file, line, what);
  }
  return ok;
}

bool served(const void* p) {
  return expected_ == expected_allocator::glibc ||
         (memkit_owns_ != nullptr && memkit_owns_(p) == 1);
}

std::size_t stats_json(char* buffer, std::size_t size) {
  return memkit_stats_json_ == nullptr ? 0 : memkit_stats_json_(buffer, size);
}

long long stats_field(const char* name) {
  char line[512] = {};
  stats_json(line, sizeof line);
  const std::string key = std::string("\"") + name + "\":";
  const char* at = std::strstr(line, key.c_str());
  return at == nullptr ? -1 : std::atoll(at + key.size());
}

long status_kib(const char* name) {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) {
    return -1;
  }
  const std::size_t length = std::strlen(name);
  long kib = -1;
  char line[256];
  while (kib < 0 && std::fgets(line, sizeof line, f) != nullptr) {
    if (std::strncmp(line, name, length) == 0 && line[length] == ':') {
      kib = std::strtol(line + length + 1, nullptr, 10);
    }
  }
  std::fclose(f);
  return kib;
}

std::size_t data_bytes() {
  const long kib = status_kib("VmData");
  return kib < 0 ? 0 : static_cast<std::size_t>(kib) * 1024;
}

std::size_t opaque(std::size_t n) {
  volatile std::size_t v = n;
  return v;
}

void fill(void* p, std::size_t n, unsigned seed) {
  auto* b = static_cast<unsigned char*>(p);
  for (std::size_t i = 0; i < n; ++i) {
    b[i] = static_cast<unsigned char>((i * 131 + seed * 31 + (i >> 8)) ^ seed);
  }
}

bool check_fill(const void* p, std::size_t n, unsigned seed) {
  const auto* b = static_cast<const unsigned char*>(p);
  for (std::size_t i = 0; i < n; ++i) {
    if (b[i] != static_cast<unsigned char>((i * 131 + seed * 31 + (i >> 8)) ^ seed)) {
      return false;
    }
  }
  return true;
}

bool is_aligned(const void* p, std::size_t alignment) {
  return reinterpret_cast<std::uintptr_t>(p) % alignment == 0;
}

child_result run_self(const std::vector<std::string>& args,
                      const std::vector<std::string>& extra_env, int timeout_seconds) {
  child_result r;
  int out[2];
  int err[2];
  if (pipe(out) != 0 || pipe(err) != 0) {
    r.code = -1;
    return r;
  }
  std::vector<std::string> argv_strings{"memkit_replacement_contract"};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<std::string> env_strings(extra_env);
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    bool replaced = false;
    for (const auto& extra : extra_env) {
      replaced =
          replaced || entry.compare(0, extra.find('=') + 1, extra, 0, extra.find('=') + 1) == 0;
    }
    if (!replaced) {
      env_strings.push_back(entry);
    }
  }
  std::vector<char*> argv;
  for (auto& s : argv_strings) {
    argv.push_back(s.data());
  }
  argv.push_back(nullptr);
  std::vector<char*> env;
  for (auto& s : env_strings) {
    env.push_back(s.data());
  }
  env.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], 1);
    dup2(err[1], 2);
    close(out[0]);
    close(err[0]);
    execve("/proc/self/exe", argv.data(), env.data());
    _exit(127);
  }
  close(out[1]);
  close(err[1]);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_seconds);
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  std::string* sinks[2] = {&r.out, &r.err};
  int open_pipes = 2;
  while (open_pipes > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) {
      r.timed_out = true;
      kill(pid, SIGKILL);
      break;
    }
    if (poll(fds, 2, static_cast<int>(left)) < 0) {
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd >= 0 && (fds[i].revents & (POLLIN | POLLHUP)) != 0) {
        char buffer[4096];
        const ssize_t n = read(fds[i].fd, buffer, sizeof buffer);
        if (n <= 0) {
          close(fds[i].fd);
          fds[i].fd = -1;
          --open_pipes;
        } else {
          sinks[i]->append(buffer, static_cast<std::size_t>(n));
        }
      }
    }
  }
  for (auto& f : fds) {
    if (f.fd >= 0) {
      close(f.fd);
    }
  }
  int status = 0;
  waitpid(pid, &status, 0);
  r.exited = WIFEXITED(status);
  r.code = r.exited ? WEXITSTATUS(status) : WTERMSIG(status);
  return r;
}

namespace {

std::string lower(std::string s) {
  for (char& c : s) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return s;
}

} // namespace

bool has_line(const std::string& text, const std::string& prefix, const std::string& needle) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(prefix, 0) == 0 && lower(line).find(lower(needle)) != std::string::npos) {
      return true;
    }
  }
  return false;
}

std::string announced_address(const child_result& r) {
  const std::string address = r.out.substr(0, r.out.find('\n'));
  return address.rfind("0x", 0) == 0 ? address.substr(2) : address;
}

int add_case(test_case c) {
  cases().push_back(c);
  return 0;
}

int add_child_action(const char* name, int (*run)()) {
  child_actions()[name] = run;
  return 0;
}

} // namespace memkit::contract

int main(int argc, char** argv) {
  using namespace memkit::contract;
  const std::string mode = argc > 1 ? argv[1] : "";
  look_up_memkit();
  if (mode == "child" && argc == 3) {
    const auto action = child_actions().find(argv[2]);
    return action == child_actions().end() ? 126 : action->second();
  }
  if (mode != "glibc" && mode != "memkit" && mode != "new-delete") {
    std::fprintf(stderr, "usage: %s glibc|memkit|new-delete [CASE...] | child ACTION\n", argv[0]);
    return 2;
  }
  expected_ = mode == "memkit"       ? expected_allocator::memkit
              : mode == "new-delete" ? expected_allocator::new_delete
                                     : expected_allocator::glibc;
  if (!verify_allocator()) {
    std::fprintf(stderr, "contract: the run does not talk to %s's malloc; no case run\n",
                 mode.c_str());
    return 1;
  }
  std::atexit(allocate_at_exit);
  static_holder.block = ::operator new(3000);
  fill(static_holder.block, 3000, 8);
  int run = 0;
  for (const auto& c : cases()) {
    bool named = argc == 2;
    for (int i = 2; i < argc; ++i) {
      named = named || c.name == std::string(argv[i]);
    }
    if (!named || !part_of_run(c.kind) || (c.kind == case_kind::preload_when_named && argc == 2)) {
      continue;
    }
    const int before = failures_;
    c.run();
    ++run;
    std::printf("%-40s %s\n", c.name, failures_ == before ? "ok" : "FAILED");
    std::fflush(stdout);
  }
  if (run == 0) {
    std::fprintf(stderr, "contract: no case matched\n");
    return 2;
  }
  std::printf("%d cases, %d failed checks\n", run, failures_);
  return failures_ == 0 ? 0 : 1;
}
