// SPDX-License-Identifier: BSL-1.0
// tests/replacement/threads_test.cpp: the replacement under threads: blocks freed by other threads,
// fork() while another thread is inside malloc, and frees during thread and process teardown
// (thread_local destructors, pthread key destructors; the atexit handler is in harness.cpp).

#include "harness.hpp"

#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

namespace {

using namespace memkit::contract;

struct stamped {
  void* p;
  std::size_t n;
  unsigned seed;
};

struct inbox {
  std::mutex m;
  std::vector<stamped> blocks;
};

/// malloc's and operator new's blocks, each freed by its own kind.
struct with_malloc {
  static void* allocate(std::size_t n) { return std::malloc(n); }
  static void release(void* p, std::size_t) { std::free(p); }
};
struct with_new {
  static void* allocate(std::size_t n) { return ::operator new(n); }
  static void release(void* p, std::size_t n) { ::operator delete(p, n); }
};

/// Four threads allocate blocks of 1 B to 256 KiB, stamp them and hand each to another thread,
/// which checks the stamp and frees it. \returns whether every block was served and intact.
template <class Api>
bool four_threads_free_each_others_blocks() {
  constexpr unsigned threads = 4;
  constexpr unsigned per_thread = 40000;
  inbox boxes[threads];
  std::atomic<unsigned> corrupted{0};
  std::atomic<unsigned> not_served{0};
  std::atomic<unsigned> finished{0};
  auto drain = [&](inbox& box) {
    std::vector<stamped> mine;
    {
      const std::lock_guard<std::mutex> lock(box.m);
      mine.swap(box.blocks);
    }
    for (const auto& b : mine) {
      corrupted += check_fill(b.p, b.n, b.seed) ? 0 : 1;
      Api::release(b.p, b.n);
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      std::mt19937 rng(t + 1);
      for (unsigned i = 0; i < per_thread; ++i) {
        // Mostly small blocks, one in 64 of up to 256 KiB.
        const std::size_t n = i % 64 == 0 ? 1 + rng() % (256 * 1024) : 1 + rng() % 2048;
        void* p = escape(Api::allocate(n));
        not_served += p != nullptr && served(p) ? 0 : 1;
        const unsigned seed = t * per_thread + i;
        fill(p, n, seed);
        inbox& to = boxes[(t + 1 + rng() % (threads - 1)) % threads];
        {
          const std::lock_guard<std::mutex> lock(to.m);
          to.blocks.push_back({p, n, seed});
        }
        if (i % 32 == 0) {
          drain(boxes[t]);
        }
      }
      ++finished;
      while (finished.load() < threads) {
        drain(boxes[t]);
      }
      drain(boxes[t]);
    });
  }
  for (auto& th : pool) {
    th.join();
  }
  for (auto& box : boxes) {
    drain(box);
  }
  return corrupted == 0 && not_served == 0;
}

MEMKIT_CONTRACT_CASE(FourThreadsFreeEachOthersMallocBlocksIntact, c_api) {
  MEMKIT_CHECK(four_threads_free_each_others_blocks<with_malloc>());
}

MEMKIT_CONTRACT_CASE(FourThreadsDeleteEachOthersNewBlocksIntact, cxx_api) {
  MEMKIT_CHECK(four_threads_free_each_others_blocks<with_new>());
}

MEMKIT_CONTRACT_CASE(ReallocOfAnotherThreadsBlockKeepsItsBytes, c_api) {
  // A block allocated by one thread, grown and shrunk by another, freed by a third.
  constexpr unsigned count = 3000;
  std::vector<stamped> blocks(count);
  std::thread([&blocks] {
    for (unsigned i = 0; i < count; ++i) {
      const std::size_t n = 1 + (i * 7919) % 20000;
      blocks[i] = {std::malloc(n), n, i};
      fill(blocks[i].p, n, i);
    }
  }).join();
  std::atomic<unsigned> bad{0};
  std::thread([&blocks, &bad] {
    for (auto& b : blocks) {
      const std::size_t grown = b.n * 3 + 100;
      void* p = std::realloc(b.p, grown);
      bad += p != nullptr && served(p) && check_fill(p, b.n, b.seed) ? 0 : 1;
      fill(p, grown, b.seed + 1);
      const std::size_t shrunk = grown / 4 + 1;
      b.p = std::realloc(p, shrunk);
      bad += b.p != nullptr && check_fill(b.p, shrunk, b.seed + 1) ? 0 : 1;
      b.n = shrunk;
      b.seed += 1;
    }
  }).join();
  std::thread([&blocks, &bad] {
    for (const auto& b : blocks) {
      bad += check_fill(b.p, b.n, b.seed) ? 0 : 1;
      std::free(b.p);
    }
  }).join();
  MEMKIT_CHECK(bad == 0);
}

MEMKIT_CONTRACT_CASE(TwoHundredFiftySixLiveThreadsFreeTheirNeighboursBlocks, c_api) {
  // More threads alive at once than cores, counter slots or cached heaps: each allocates, waits
  // until all have, then frees its neighbour's blocks.
  constexpr unsigned threads = 256;
  constexpr unsigned per_thread = 64;
  std::vector<stamped> blocks(threads * per_thread);
  std::atomic<unsigned> ready{0};
  std::atomic<unsigned> bad{0};
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (unsigned i = 0; i < per_thread; ++i) {
        const std::size_t n = 8 + (t * 131 + i * 29) % 3000;
        stamped& b = blocks[t * per_thread + i];
        b = {std::malloc(n), n, t * per_thread + i};
        bad += b.p != nullptr && served(b.p) ? 0 : 1;
        fill(b.p, n, b.seed);
      }
      ++ready;
      while (ready.load() < threads) {
        std::this_thread::yield();
      }
      const unsigned neighbour = (t + 1) % threads;
      for (unsigned i = 0; i < per_thread; ++i) {
        const stamped& b = blocks[neighbour * per_thread + i];
        bad += check_fill(b.p, b.n, b.seed) ? 0 : 1;
        std::free(b.p);
      }
    });
  }
  for (auto& th : pool) {
    th.join();
  }
  MEMKIT_CHECK(bad == 0);
}

/// Blocks the busy thread of the fork case publishes: each starts with its size, then a pattern
/// seeded by the size. Atomic slots, not a mutex, which the child could inherit locked.
constexpr std::size_t fork_slots = 64;
std::atomic<void*> published[fork_slots];

void* make_published(std::size_t n) {
  void* p = std::malloc(n);
  if (p != nullptr) {
    std::memcpy(p, &n, sizeof n);
    fill(static_cast<char*>(p) + sizeof n, n - sizeof n, static_cast<unsigned>(n));
  }
  return p;
}

/// \returns whether the published block `p` is intact, and frees it.
bool free_published(void* p) {
  std::size_t n = 0;
  std::memcpy(&n, p, sizeof n);
  const bool ok =
      check_fill(static_cast<char*>(p) + sizeof n, n - sizeof n, static_cast<unsigned>(n));
  std::free(p);
  return ok;
}

/// In a forked child: frees the blocks of the busy thread, which does not exist here, allocates,
/// frees, starts a thread that does too, and exits 0 if all went well.
[[noreturn]] void child_after_fork() {
  bool ok = true;
  for (auto& slot : published) {
    if (void* p = slot.exchange(nullptr)) {
      ok = free_published(p) && ok;
    }
  }
  std::vector<void*> blocks;
  for (std::size_t n = 1; n < 4 << 20; n = n * 2 + 3) {
    void* p = std::malloc(n);
    ok = ok && p != nullptr && served(p);
    if (p != nullptr) {
      fill(p, n, 1);
      blocks.push_back(p);
    }
  }
  for (void* p : blocks) {
    std::free(p);
  }
  std::thread([&ok] {
    for (int i = 0; i < 1000; ++i) {
      delete escape(new std::vector<int>(static_cast<std::size_t>(i)));
    }
    ok = ok && served(escape(new int));
  }).join();
  _exit(ok ? 0 : 1);
}

MEMKIT_CONTRACT_CASE(ForkWhileAnotherThreadAllocatesGivesAWorkingChild, c_api) {
  std::atomic<bool> stop{false};
  std::atomic<bool> intact{true};
  std::thread busy([&stop, &intact] {
    std::mt19937 rng(9);
    while (!stop.load(std::memory_order_relaxed)) {
      // Small and large blocks, so the fork finds the thread in either path.
      const std::size_t n = 16 + rng() % (rng() % 8 == 0 ? 300000 : 2000);
      if (void* old = published[rng() % fork_slots].exchange(make_published(n))) {
        if (!free_published(old)) {
          intact = false;
        }
      }
    }
    for (auto& slot : published) {
      if (void* p = slot.exchange(nullptr)) {
        free_published(p);
      }
    }
  });
  // Each child must finish within its deadline: a lock the busy thread held at fork() and
  // nobody released in the child hangs it.
  constexpr int forks = 40;
  int good = 0;
  for (int i = 0; i < forks; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    const pid_t pid = fork();
    if (pid == 0) {
      child_after_fork();
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    int status = 0;
    pid_t done = 0;
    while ((done = waitpid(pid, &status, WNOHANG)) == 0 &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (done == 0) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      std::fprintf(stderr, "fork %d: the child hung\n", i);
    }
    good += done == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 1 : 0;
  }
  stop = true;
  busy.join();
  MEMKIT_CHECK(good == forks);
  MEMKIT_CHECK(intact);
}

std::atomic<int> thread_local_frees{0};

/// Frees its block when its thread exits, after the thread's own allocation state may be gone.
struct frees_at_thread_exit {
  void* block = nullptr;
  ~frees_at_thread_exit() {
    if (block != nullptr && check_fill(block, 3000, 11)) {
      std::free(block);
      void* again = escape(std::malloc(100));
      std::free(again);
      ++thread_local_frees;
    }
  }
};

thread_local frees_at_thread_exit at_exit_holder;

MEMKIT_CONTRACT_CASE(ThreadLocalDestructorsMayAllocateAndFree, c_api) {
  thread_local_frees = 0;
  constexpr int threads = 50;
  for (int i = 0; i < threads; ++i) {
    std::thread([] {
      at_exit_holder.block = std::malloc(3000);
      fill(at_exit_holder.block, 3000, 11);
      delete[] escape(new int[100]);
    }).join();
  }
  MEMKIT_CHECK(thread_local_frees == threads);
}

std::atomic<int> key_frees{0};
pthread_key_t rearmed_key;

/// Frees the thread's value; the first time, allocates a new one and sets it again, so glibc runs
/// the destructor a second round (PTHREAD_DESTRUCTOR_ITERATIONS), after memkit's own key's.
void free_key_value(void* value) {
  // The round is in the block: 1 in its first byte for the first value, 2 for the second.
  const unsigned char round = *static_cast<unsigned char*>(value);
  const bool intact = check_fill(static_cast<char*>(value) + 1, round == 1 ? 499 : 699, round);
  std::free(value);
  delete[] escape(new char[64]);
  if (intact && round == 1) {
    auto* again = static_cast<unsigned char*>(std::malloc(700));
    again[0] = 2;
    fill(again + 1, 699, 2);
    pthread_setspecific(rearmed_key, again);
  } else if (intact && round == 2) {
    ++key_frees;
  }
}

MEMKIT_CONTRACT_CASE(PthreadKeyDestructorsMayAllocateAndFree, c_api) {
  key_frees = 0;
  MEMKIT_CHECK(pthread_key_create(&rearmed_key, free_key_value) == 0);
  constexpr int threads = 50;
  for (int i = 0; i < threads; ++i) {
    std::thread([] {
      auto* value = static_cast<unsigned char*>(std::malloc(500));
      value[0] = 1;
      fill(value + 1, 499, 1);
      pthread_setspecific(rearmed_key, value);
    }).join();
  }
  pthread_key_delete(rearmed_key);
  MEMKIT_CHECK(key_frees == threads);
}

MEMKIT_CONTRACT_CASE(BlocksOutliveTheThreadsThatAllocatedThem, c_api) {
  std::vector<std::pair<void*, unsigned>> left;
  std::mutex m;
  for (unsigned round = 0; round < 20; ++round) {
    std::vector<std::thread> batch;
    for (unsigned t = 0; t < 10; ++t) {
      batch.emplace_back([&, seed = round * 10 + t] {
        for (unsigned i = 0; i < 50; ++i) {
          void* p = std::malloc(1000);
          fill(p, 1000, seed + i);
          const std::lock_guard<std::mutex> lock(m);
          left.emplace_back(p, seed + i);
        }
      });
    }
    for (auto& th : batch) {
      th.join();
    }
  }
  bool ok = true;
  for (const auto& [p, seed] : left) {
    ok &= served(p) && check_fill(p, 1000, seed);
    std::free(p);
  }
  MEMKIT_CHECK(ok);
}

} // namespace
