// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/core/measure.cpp: the resident-memory probes, and a measurement in a forked
// child, its result sent back through a pipe.

#include "core/measure.hpp"

#include <memkit/config.hpp>
#if defined(MEMKIT_ASAN)
#include <sanitizer/lsan_interface.h>
#endif

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <string>

#include "core/registry.hpp"

namespace memkit::bench {

bool reset_peak_rss() noexcept {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  out.flush();
  return static_cast<bool>(out);
}

namespace {

std::size_t status_kib(const char* field) noexcept {
  std::ifstream in("/proc/self/status");
  std::string key;
  while (in >> key) {
    if (key == field) {
      std::size_t kib = 0;
      in >> kib;
      return kib;
    }
  }
  return 0;
}

} // namespace

std::size_t peak_rss_kib() noexcept { return status_kib("VmHWM:"); }

std::size_t rss_kib() noexcept {
  // /proc/self/statm's second field, read with plain system calls into the stack: a sampler
  // beside an allocator under test must not allocate.
  const int fd = ::open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return 0;
  }
  char text[128];
  const ssize_t n = ::read(fd, text, sizeof text - 1);
  ::close(fd);
  if (n <= 0) {
    return 0;
  }
  text[n] = '\0';
  const char* p = std::strchr(text, ' ');
  const unsigned long long pages = p == nullptr ? 0 : std::strtoull(p + 1, nullptr, 10);
  return static_cast<std::size_t>(pages) * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE)) / 1024;
}

namespace {

// Moves all `n` bytes through `io` (read or write), retrying short transfers and EINTR.
template <class Byte, class Io>
bool transfer_all(int fd, Byte* p, std::size_t n, Io io) {
  while (n > 0) {
    const ssize_t k = io(fd, p, n);
    if (k < 0 && errno == EINTR) {
      continue;
    }
    if (k <= 0) {
      return false;
    }
    p += k;
    n -= static_cast<std::size_t>(k);
  }
  return true;
}

bool write_all(int fd, const void* data, std::size_t n) {
  return transfer_all(fd, static_cast<const char*>(data), n, ::write);
}

bool read_all(int fd, void* data, std::size_t n) {
  return transfer_all(fd, static_cast<char*>(data), n, ::read);
}

/// The measurement as the child sends it: fixed fields, then the note and the samples.
struct wire_header {
  double cold_us;
  std::uint64_t hash;
  std::uint64_t consistent;
  std::uint64_t peak_rss_kib;
  std::uint64_t note_size;
  std::uint64_t samples;
};

[[noreturn]] void child_main(const bench_case& c, std::size_t iterations, int fd) {
  try {
    const measurement m = c.measure(iterations, true);
#if defined(MEMKIT_ASAN)
    // _exit skips LeakSanitizer's exit-time check, so a leaking variant is caught here.
    if (__lsan_do_recoverable_leak_check() != 0) {
      _exit(1);
    }
#endif
    const wire_header h{m.cold_us,      m.hash,        m.consistent ? 1u : 0u,
                        m.peak_rss_kib, m.note.size(), m.samples_us.size()};
    const bool ok = write_all(fd, &h, sizeof h) && write_all(fd, m.note.data(), m.note.size()) &&
                    write_all(fd, m.samples_us.data(), m.samples_us.size() * sizeof(double));
    _exit(ok ? 0 : 1);
  } catch (const std::exception& e) {
    const std::string what = e.what();
    write_all(2, what.data(), what.size());
    _exit(1);
  }
}

} // namespace

measurement measure_in_child(const bench_case& c, std::size_t iterations, std::string& error) {
  measurement m;
  int fds[2];
  if (pipe(fds) != 0) {
    error = std::string("pipe: ") + std::strerror(errno);
    return m;
  }
  const pid_t pid = fork();
  if (pid < 0) {
    error = std::string("fork: ") + std::strerror(errno);
    close(fds[0]);
    close(fds[1]);
    return m;
  }
  if (pid == 0) {
    close(fds[0]);
    child_main(c, iterations, fds[1]);
  }
  close(fds[1]);
  wire_header h{};
  bool ok = read_all(fds[0], &h, sizeof h);
  if (ok) {
    m.cold_us = h.cold_us;
    m.hash = h.hash;
    m.consistent = h.consistent != 0;
    m.peak_rss_kib = h.peak_rss_kib;
    m.note.resize(h.note_size);
    m.samples_us.resize(h.samples);
    ok = read_all(fds[0], m.note.data(), m.note.size()) &&
         read_all(fds[0], m.samples_us.data(), m.samples_us.size() * sizeof(double));
  }
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!ok || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    error = WIFSIGNALED(status) ? "killed by signal " + std::to_string(WTERMSIG(status))
                                : "the measuring process failed";
  }
  return m;
}

} // namespace memkit::bench
