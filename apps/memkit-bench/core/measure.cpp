// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/core/measure.cpp: the resident-memory probes, and measurements in children
// forked from one zygote, their results relayed back through pipes.

#include "core/measure.hpp"

#include <memkit/config.hpp>
#if defined(MEMKIT_ASAN)
#include <sanitizer/lsan_interface.h>
#endif

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <string>
#include <system_error>

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
  std::uint64_t start_rss_kib;
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
    const wire_header h{m.cold_us,       m.hash,        m.consistent ? 1u : 0u, m.peak_rss_kib,
                        m.start_rss_kib, m.note.size(), m.samples_us.size()};
    const bool ok = write_all(fd, &h, sizeof h) && write_all(fd, m.note.data(), m.note.size()) &&
                    write_all(fd, m.samples_us.data(), m.samples_us.size() * sizeof(double));
    _exit(ok ? 0 : 1);
  } catch (const std::exception& e) {
    const std::string what = e.what();
    write_all(2, what.data(), what.size());
    _exit(1);
  }
}

/// How the zygote frames what it relays: a length, then that many bytes of the child's output; the
/// length `end_of_child` then a `child_end`.
constexpr std::uint64_t end_of_child = ~std::uint64_t{0};
struct child_end {
  std::int64_t wait_status; ///< from waitpid; meaningless if `error`
  std::int64_t error;       ///< errno of a failed pipe or fork, else 0
};
struct request {
  std::uint64_t index;
  std::uint64_t iterations;
};

/// Copies everything `from` yields to `to`, framed, through a buffer on the stack: the zygote
/// allocates nothing, so every child starts from the same heap.
void relay(int from, int to) {
  char buffer[4096];
  for (;;) {
    const ssize_t k = ::read(from, buffer, sizeof buffer);
    if (k < 0 && errno == EINTR) {
      continue;
    }
    if (k <= 0) {
      return;
    }
    const auto length = static_cast<std::uint64_t>(k);
    if (!write_all(to, &length, sizeof length) || !write_all(to, buffer, length)) {
      return;
    }
  }
}

[[noreturn]] void zygote_main(const std::vector<const bench_case*>& cases, int requests,
                              int results) {
  request r{};
  while (read_all(requests, &r, sizeof r)) {
    child_end end{0, 0};
    int fds[2];
    if (pipe(fds) != 0) {
      end.error = errno;
    } else if (const pid_t pid = fork(); pid < 0) {
      end.error = errno;
      close(fds[0]);
      close(fds[1]);
    } else {
      if (pid == 0) {
        close(fds[0]);
        close(requests);
        close(results);
        child_main(*cases[r.index], r.iterations, fds[1]);
      }
      close(fds[1]);
      relay(fds[0], results);
      close(fds[0]);
      int status = 0;
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      end.wait_status = status;
    }
    if (!write_all(results, &end_of_child, sizeof end_of_child) ||
        !write_all(results, &end, sizeof end)) {
      break;
    }
  }
  _exit(0);
}

/// \returns what `m`'s child wrote, parsed, into `m`; false if it is cut short.
bool parse(const std::string& bytes, measurement& m) {
  wire_header h{};
  if (bytes.size() < sizeof h) {
    return false;
  }
  std::memcpy(&h, bytes.data(), sizeof h);
  if (bytes.size() != sizeof h + h.note_size + h.samples * sizeof(double)) {
    return false;
  }
  m.cold_us = h.cold_us;
  m.hash = h.hash;
  m.consistent = h.consistent != 0;
  m.peak_rss_kib = h.peak_rss_kib;
  m.start_rss_kib = h.start_rss_kib;
  m.note.assign(bytes.data() + sizeof h, h.note_size);
  m.samples_us.resize(h.samples);
  if (h.samples != 0) { // no samples: data() may be null, which memcpy must not get
    std::memcpy(m.samples_us.data(), bytes.data() + sizeof h + h.note_size,
                h.samples * sizeof(double));
  }
  return true;
}

} // namespace

zygote::zygote(const std::vector<const bench_case*>& cases) {
  // A request to a zygote that died fails with EPIPE, reported by measure, instead of killing
  // this process.
  std::signal(SIGPIPE, SIG_IGN);
  int to_zygote[2];
  int from_zygote[2];
  if (pipe(to_zygote) != 0) {
    throw std::system_error(errno, std::generic_category(), "pipe");
  }
  if (pipe(from_zygote) != 0) {
    const int e = errno;
    close(to_zygote[0]);
    close(to_zygote[1]);
    throw std::system_error(e, std::generic_category(), "pipe");
  }
  pid_ = fork();
  if (pid_ == 0) {
    close(to_zygote[1]);
    close(from_zygote[0]);
    zygote_main(cases, to_zygote[0], from_zygote[1]);
  }
  close(to_zygote[0]);
  close(from_zygote[1]);
  requests_ = to_zygote[1];
  results_ = from_zygote[0];
  if (pid_ < 0) {
    const int e = errno;
    close(requests_);
    close(results_);
    throw std::system_error(e, std::generic_category(), "fork");
  }
}

zygote::~zygote() {
  close(requests_); // the zygote reads the end of its requests and exits
  close(results_);
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
}

measurement zygote::measure(std::size_t index, std::size_t iterations, std::string& error) {
  measurement m;
  const request r{index, iterations};
  if (!write_all(requests_, &r, sizeof r)) {
    error = "the zygote is gone";
    return m;
  }
  std::string bytes;
  std::uint64_t length = 0;
  while (read_all(results_, &length, sizeof length) && length != end_of_child) {
    const std::size_t at = bytes.size();
    bytes.resize(at + length);
    if (!read_all(results_, bytes.data() + at, length)) {
      break;
    }
  }
  child_end end{};
  if (length != end_of_child || !read_all(results_, &end, sizeof end)) {
    error = "the zygote is gone";
    return m;
  }
  const int status = static_cast<int>(end.wait_status);
  if (end.error != 0) {
    error = std::string("fork: ") + std::strerror(static_cast<int>(end.error));
  } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    error = WIFSIGNALED(status) ? "killed by signal " + std::to_string(WTERMSIG(status))
                                : "the measuring process failed";
  } else if (!parse(bytes, m)) {
    error = "the measuring process sent a cut-short measurement";
  }
  return m;
}

} // namespace memkit::bench
