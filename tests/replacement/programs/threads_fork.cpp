// SPDX-License-Identifier: BSL-1.0
// tests/replacement/programs/threads_fork.cpp: a C++ program with threads and fork() for
// tests/replacement/real_programs.py. Four threads build and tear down maps of strings, handing
// every fourth node's string to a neighbour to free; meanwhile the main thread forks children that
// allocate in turn and report through a pipe. Its output depends only on the computation, so a run
// on glibc and a run under a preloaded malloc must print the same.

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr int threads = 4;
constexpr int rounds = 150;
constexpr int forks = 8;

/// FNV-1a over `s`, folded into `h`.
std::uint64_t mix(std::uint64_t h, const std::string& s) {
  for (const char c : s) {
    h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  }
  return h;
}

struct handoff {
  std::mutex m;
  std::vector<std::unique_ptr<std::string>> strings;
};

/// One thread's work: \returns a digest of every string it built and of those handed to it.
std::uint64_t work(int id, handoff* boxes, std::atomic<int>& finished) {
  std::uint64_t h = 14695981039346656037ull;
  for (int r = 0; r < rounds; ++r) {
    std::map<int, std::unique_ptr<std::string>> m;
    for (int i = 0; i < 2000; ++i) {
      const int key = (i * 7919 + r * 31 + id) % 5003;
      m[key] = std::make_unique<std::string>(static_cast<std::size_t>(key % 200 + 1),
                                             static_cast<char>('a' + (key + id) % 26));
    }
    handoff& next = boxes[(id + 1) % threads];
    int n = 0;
    for (auto& [key, s] : m) {
      h = mix(h, *s);
      if (++n % 4 == 0) {
        const std::lock_guard<std::mutex> lock(next.m);
        next.strings.push_back(std::move(s));
      }
    }
  }
  finished.fetch_add(1);
  // Strings from the neighbour are freed here, by a thread that did not allocate them; their
  // digest is order-independent (a sum), since arrival order varies from run to run.
  std::uint64_t received = 0;
  for (;;) {
    std::vector<std::unique_ptr<std::string>> mine;
    {
      const std::lock_guard<std::mutex> lock(boxes[id].m);
      mine.swap(boxes[id].strings);
    }
    for (const auto& s : mine) {
      received += mix(14695981039346656037ull, *s);
    }
    if (mine.empty()) {
      if (finished.load() == threads) {
        const std::lock_guard<std::mutex> lock(boxes[id].m);
        if (boxes[id].strings.empty()) {
          break;
        }
      }
      std::this_thread::yield();
    }
  }
  return h ^ received;
}

/// In a child: builds a vector of strings and writes their total length to `fd`.
[[noreturn]] void child(int k, int fd) {
  std::vector<std::string> v;
  std::size_t total = 0;
  for (int i = 0; i < 10000; ++i) {
    v.emplace_back(static_cast<std::size_t>((i * k) % 300 + 1), 'z');
    total += v.back().size();
  }
  const std::string line = "child " + std::to_string(k) + ": " + std::to_string(total) + "\n";
  const bool ok = write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  _exit(ok ? 0 : 1);
}

} // namespace

int main() {
  handoff boxes[threads];
  std::atomic<int> finished{0};
  std::uint64_t digests[threads] = {};
  std::vector<std::thread> pool;
  for (int id = 0; id < threads; ++id) {
    pool.emplace_back([&, id] { digests[id] = work(id, boxes, finished); });
  }
  // Fork while the threads are busy allocating.
  int failed_children = 0;
  for (int k = 1; k <= forks; ++k) {
    int fds[2];
    if (pipe(fds) != 0) {
      return 2;
    }
    const pid_t pid = fork();
    if (pid == 0) {
      close(fds[0]);
      child(k, fds[1]);
    }
    close(fds[1]);
    std::string got;
    char buffer[256];
    for (ssize_t n; (n = read(fds[0], buffer, sizeof buffer)) > 0;) {
      got.append(buffer, static_cast<std::size_t>(n));
    }
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    failed_children += WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
    std::fputs(got.c_str(), stdout);
  }
  for (auto& t : pool) {
    t.join();
  }
  for (int id = 0; id < threads; ++id) {
    std::printf("thread %d: %016llx\n", id, static_cast<unsigned long long>(digests[id]));
  }
  std::printf("failed children: %d\n", failed_children);
  return failed_children == 0 ? 0 : 1;
}
