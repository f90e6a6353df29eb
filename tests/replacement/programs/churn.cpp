// SPDX-License-Identifier: BSL-1.0
// tests/replacement/programs/churn.cpp: thread churn and memory return, for
// tests/replacement/real_programs.py.
//
// Usage: churn [--threads N] [--peak-mib M] [--block-bytes MIN-MAX] [--release-seconds S]
//              [--tolerance-mib T] [--report-only]
//
// 1. N short-lived threads (eight at a time) each allocate blocks, free some, and leave the rest
//    live in a shared pool when they exit; the next threads free those: frees to the heap of a
//    thread that is gone. Every block's bytes are checked when freed.
// 2. M MiB of blocks of MIN-MAX bytes (default 4-64 KiB) are allocated and touched, then all
//    freed in random order; from then on a little allocation of small blocks goes on (100 every
//    10 ms), and the resident set (/proc/self/statm) must fall back to within T MiB of
//    what it was before the peak within S seconds. --report-only prints what happened and does not
//    judge it (the glibc run: glibc keeps freed memory unless the top of its heap is free).
// Exits 0 if every block was intact and (unless --report-only) the memory came back in time.

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

struct options {
  unsigned threads = 2000;
  std::size_t peak_mib = 256;
  double release_seconds = 1.0;
  std::size_t tolerance_mib = 64;
  std::size_t min_block = 4096;
  std::size_t max_block = 64 * 1024;
  bool report_only = false;
};

constexpr std::size_t mib = 1024 * 1024;

struct block {
  unsigned char* p;
  std::size_t n;
  unsigned char stamp;
};

std::mutex pool_mutex;
std::vector<block> pool;

block make_block(std::size_t n, unsigned char stamp) {
  auto* p = static_cast<unsigned char*>(std::malloc(n));
  if (p == nullptr) {
    std::fprintf(stderr, "churn: malloc(%zu) failed\n", n);
    std::exit(2);
  }
  std::memset(p, stamp, n);
  return {p, n, stamp};
}

/// Frees `b`; \returns whether its bytes were intact.
bool release(const block& b) {
  bool ok = true;
  for (std::size_t i = 0; i < b.n; i += 61) {
    ok = ok && b.p[i] == b.stamp;
  }
  ok = ok && b.p[b.n - 1] == b.stamp;
  std::free(b.p);
  return ok;
}

/// A short-lived thread: frees up to 50 blocks that exited threads left, allocates 100, frees
/// half of them and leaves the other half live. \returns the number of corrupted blocks it freed.
unsigned short_lived(unsigned id) {
  std::mt19937 rng(id);
  std::vector<block> inherited;
  {
    const std::lock_guard<std::mutex> lock(pool_mutex);
    for (int i = 0; i < 50 && !pool.empty(); ++i) {
      inherited.push_back(pool.back());
      pool.pop_back();
    }
  }
  unsigned corrupted = 0;
  for (const auto& b : inherited) {
    corrupted += release(b) ? 0 : 1;
  }
  std::vector<block> mine;
  for (int i = 0; i < 100; ++i) {
    mine.push_back(make_block(16 + rng() % 4096, static_cast<unsigned char>(id + i)));
  }
  for (std::size_t i = 0; i < mine.size(); i += 2) {
    corrupted += release(mine[i]) ? 0 : 1;
  }
  const std::lock_guard<std::mutex> lock(pool_mutex);
  for (std::size_t i = 1; i < mine.size(); i += 2) {
    pool.push_back(mine[i]);
  }
  return corrupted;
}

std::size_t resident_bytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  unsigned long size = 0;
  unsigned long resident = 0;
  if (f == nullptr || std::fscanf(f, "%lu %lu", &size, &resident) != 2) {
    std::fprintf(stderr, "churn: cannot read /proc/self/statm\n");
    std::exit(2);
  }
  std::fclose(f);
  return resident * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
}

/// Prints memkit's statistics when it is the malloc (looked up, so the glibc run links too).
void print_memkit_stats() {
  using stats_json = std::size_t(char*, std::size_t);
  if (auto* stats = reinterpret_cast<stats_json*>(dlsym(RTLD_DEFAULT, "memkit_stats_json"))) {
    char buffer[1024];
    stats(buffer, sizeof buffer);
    std::printf("memkit stats: %s\n", buffer);
  }
}

bool parse(int argc, char** argv, options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--report-only") {
      o.report_only = true;
    } else if (a == "--threads" && has_value) {
      o.threads = static_cast<unsigned>(std::stoul(argv[++i]));
    } else if (a == "--peak-mib" && has_value) {
      o.peak_mib = std::stoul(argv[++i]);
    } else if (a == "--release-seconds" && has_value) {
      o.release_seconds = std::stod(argv[++i]);
    } else if (a == "--block-bytes" && has_value) {
      // MIN-MAX
      const std::string range = argv[++i];
      o.min_block = std::stoul(range);
      o.max_block = std::stoul(range.substr(range.find('-') + 1));
    } else if (a == "--tolerance-mib" && has_value) {
      o.tolerance_mib = std::stoul(argv[++i]);
    } else {
      std::fprintf(stderr, "churn: unknown argument %s\n", a.c_str());
      return false;
    }
  }
  return true;
}

} // namespace

int main(int argc, char** argv) {
  options o;
  if (!parse(argc, argv, o)) {
    return 2;
  }
  using clock = std::chrono::steady_clock;
  unsigned corrupted = 0;
  const auto churn_start = clock::now();
  for (unsigned first = 0; first < o.threads; first += 8) {
    std::vector<std::thread> batch;
    std::vector<unsigned> results(8, 0);
    for (unsigned t = 0; t < 8 && first + t < o.threads; ++t) {
      batch.emplace_back([&results, t, id = first + t] { results[t] = short_lived(id); });
    }
    for (auto& th : batch) {
      th.join();
    }
    for (const unsigned r : results) {
      corrupted += r;
    }
  }
  for (const auto& b : pool) {
    corrupted += release(b) ? 0 : 1;
  }
  pool.clear();
  pool.shrink_to_fit();
  std::printf("churn: %u threads in %.2f s, %u corrupted blocks\n", o.threads,
              std::chrono::duration<double>(clock::now() - churn_start).count(), corrupted);
  print_memkit_stats();

  const std::size_t before = resident_bytes();
  std::mt19937 rng(1);
  std::vector<block> peak;
  for (std::size_t total = 0; total < o.peak_mib * mib;) {
    const std::size_t n = o.min_block + rng() % (o.max_block - o.min_block + 1);
    peak.push_back(make_block(n, static_cast<unsigned char>(total)));
    total += n;
  }
  const std::size_t at_peak = resident_bytes();
  // Freed in random order, so no allocator returns the memory merely by trimming its heap's top
  // as the last-allocated blocks go.
  std::shuffle(peak.begin(), peak.end(), rng);
  for (const auto& b : peak) {
    corrupted += release(b) ? 0 : 1;
  }
  peak = std::vector<block>();
  const auto freed_at = clock::now();
  const std::size_t limit = before + o.tolerance_mib * mib;
  std::size_t after = resident_bytes();
  double fell_after = -1;
  // The allocation activity a program goes on with, which memkit may use to return memory: only
  // small blocks, which the thread has cached (src/heap.hpp: a thread visits the depot every
  // 1,024 frees, so a peak freed goes back even then).
  while (std::chrono::duration<double>(clock::now() - freed_at).count() < o.release_seconds) {
    for (int i = 0; i < 100; ++i) {
      // Through a volatile pointer: the compiler may drop a malloc whose block is only freed.
      void* volatile p = std::malloc(64 + static_cast<std::size_t>(i));
      std::free(p);
    }
    after = resident_bytes();
    if (after <= limit) {
      fell_after = std::chrono::duration<double>(clock::now() - freed_at).count();
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::printf("rss: %zu MiB before the peak, %zu MiB at it, %zu MiB after the free (limit %zu "
              "MiB within %.2f s): %s\n",
              before / mib, at_peak / mib, after / mib, limit / mib, o.release_seconds,
              fell_after >= 0 ? ("returned after " + std::to_string(fell_after) + " s").c_str()
                              : "not returned in time");
  print_memkit_stats();
  const bool returned = fell_after >= 0 || o.report_only;
  return corrupted == 0 && returned ? 0 : 1;
}
