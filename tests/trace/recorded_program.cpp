// SPDX-License-Identifier: BSL-1.0
// tests/trace/recorded_program.cpp: the program recorder_test.cpp records
// (MEMKIT_OPTIONS=trace:PATH) and then checks the trace of. Each mode makes a known set of calls:
//   kinds        every entry point `rounds` times, each call from its own line of main's callees
//   threads      4 threads of 1000 mallocs each; every other block is freed by the next thread
//   fork         a child that allocates 777777 bytes and exits; the parent waits for it and
//                prints the child's pid
//   fork-sampled a child that allocates now and then for 100 ms and exits; the parent prints its
//                pid
//   spawn        runs this program again (`kinds 1`) while recording, and waits for it
//   many-buffers three threads, each 200,000 mallocs of sizes its own, each block freed at the
//                thread's next call: more buffers than the writer keeps up with on two cores
//   short-threads  200 threads one after another, each 100 mallocs and frees (records reused)
//   busy-at-exit   main exits while a detached thread allocates and frees in a loop
//   kill         fills several buffers, waits for the writer, then SIGKILLs itself
//   quick-exit   fills several buffers, waits for the writer, then calls _exit
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <malloc.h>
#include <mutex>
#include <new>
#include <signal.h>
#include <spawn.h>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

extern char** environ;

namespace {

// The compiler may not drop a call whose result it cannot see used.
void* volatile sink;

void keep(void* p) { sink = p; }

void every_kind_once() {
  void* p = std::malloc(100);
  keep(p);
  std::free(p);
  p = std::calloc(3, 40);
  keep(p);
  std::free(p);
  p = std::realloc(nullptr, 50);
  p = std::realloc(p, 5000);
  keep(p);
  p = std::realloc(p, 0); // glibc's contract: frees and returns null
  keep(p);
  p = reallocarray(nullptr, 10, 30);
  keep(p);
  std::free(p);
  p = std::aligned_alloc(64, 128);
  keep(p);
  std::free(p);
  if (posix_memalign(&p, 256, 100) == 0) {
    keep(p);
    std::free(p);
  }
  p = memalign(128, 10);
  keep(p);
  std::free(p);
  p = valloc(10);
  keep(p);
  std::free(p);
  p = pvalloc(10);
  keep(p);
  std::free(p);

  const std::align_val_t a{64};
  p = ::operator new(24);
  keep(p);
  ::operator delete(p);
  p = ::operator new[](24);
  keep(p);
  ::operator delete[](p);
  p = ::operator new(24, std::nothrow);
  keep(p);
  ::operator delete(p, std::nothrow);
  p = ::operator new[](24, std::nothrow);
  keep(p);
  ::operator delete[](p, std::nothrow);
  p = ::operator new(24);
  keep(p);
  ::operator delete(p, 24);
  p = ::operator new[](24);
  keep(p);
  ::operator delete[](p, 24);
  p = ::operator new(24, a);
  keep(p);
  ::operator delete(p, a);
  p = ::operator new[](24, a);
  keep(p);
  ::operator delete[](p, a);
  p = ::operator new(24, a, std::nothrow);
  keep(p);
  ::operator delete(p, a, std::nothrow);
  p = ::operator new[](24, a, std::nothrow);
  keep(p);
  ::operator delete[](p, a, std::nothrow);
  p = ::operator new(24, a);
  keep(p);
  ::operator delete(p, 24, a);
  p = ::operator new[](24, a);
  keep(p);
  ::operator delete[](p, 24, a);
}

// Thread t allocates 1000 blocks of 1 + (t * 1000 + i) % 500 bytes; it frees the even ones and
// hands the odd ones to thread (t + 1) % 4, which frees them.
void threads() {
  constexpr int n = 4;
  std::mutex m;
  std::vector<void*> handed[n];
  std::vector<std::thread> pool;
  for (int t = 0; t < n; ++t) {
    pool.emplace_back([&, t] {
      std::vector<void*> mine;
      mine.reserve(1000);
      for (int i = 0; i < 1000; ++i) {
        void* p = std::malloc(1 + static_cast<std::size_t>(t * 1000 + i) % 500);
        std::memset(p, t, 1);
        mine.push_back(p);
      }
      for (int i = 0; i < 1000; i += 2) {
        std::free(mine[static_cast<std::size_t>(i)]);
      }
      {
        std::lock_guard<std::mutex> g(m);
        for (int i = 1; i < 1000; i += 2) {
          handed[(t + 1) % n].push_back(mine[static_cast<std::size_t>(i)]);
        }
      }
    });
  }
  for (std::thread& t : pool) {
    t.join();
  }
  pool.clear();
  for (int t = 0; t < n; ++t) {
    pool.emplace_back([&, t] {
      for (void* p : handed[t]) {
        std::free(p);
      }
    });
  }
  for (std::thread& t : pool) {
    t.join();
  }
}

// Enough calls for several 64 KiB buffers, then time for the writer (which wakes every 2 ms).
void fill_buffers() {
  for (int i = 0; i < 200000; ++i) {
    void* p = std::malloc(16 + static_cast<std::size_t>(i % 64));
    keep(p);
    std::free(p);
  }
  ::usleep(200 * 1000);
}

void many_buffers() {
  constexpr int n = 3;
  constexpr int calls = 200000;
  std::vector<std::thread> pool;
  for (int t = 0; t < n; ++t) {
    pool.emplace_back([t] {
      void* previous = nullptr;
      for (int i = 0; i < calls; ++i) {
        void* p = std::malloc(static_cast<std::size_t>(16 + t * 8 + i % 64));
        keep(p);
        std::free(previous);
        previous = p;
      }
      std::free(previous);
      keep(nullptr); // so that the free is not a tail call, made from the thread's entry
    });
  }
  for (std::thread& t : pool) {
    t.join();
  }
}

void short_threads() {
  for (int t = 0; t < 200; ++t) {
    std::thread([] {
      for (int i = 0; i < 100; ++i) {
        void* p = std::malloc(48);
        keep(p);
        std::free(p);
      }
    }).join();
  }
}

void busy_at_exit() {
  std::thread([] {
    for (;;) {
      void* p = std::malloc(40);
      keep(p);
      std::free(p);
    }
  }).detach();
  ::usleep(50 * 1000);
  std::exit(0);
}

/// Waits for `child`, prints its pid. \returns 0 if it exited with 0, else 1.
int wait_and_print(pid_t child) {
  int status = 0;
  ::waitpid(child, &status, 0);
  std::printf("%d\n", static_cast<int>(child));
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

} // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "kinds") {
    const int rounds = argc > 2 ? std::atoi(argv[2]) : 10;
    for (int i = 0; i < rounds; ++i) {
      every_kind_once();
    }
  } else if (mode == "threads") {
    threads();
  } else if (mode == "fork") {
    const pid_t child = ::fork();
    if (child == 0) {
      void* p = std::malloc(777777);
      keep(p);
      std::free(p);
      std::exit(0);
    }
    return wait_and_print(child);
  } else if (mode == "fork-sampled") {
    const pid_t child = ::fork();
    if (child == 0) {
      for (int i = 0; i < 20; ++i) {
        void* p = std::malloc(4096);
        keep(p);
        std::free(p);
        ::usleep(5 * 1000);
      }
      std::exit(0);
    }
    return wait_and_print(child);
  } else if (mode == "spawn") {
    char kinds[] = "kinds";
    char one[] = "1";
    char* args[] = {argv[0], kinds, one, nullptr};
    pid_t child = 0;
    if (::posix_spawn(&child, argv[0], nullptr, nullptr, args, environ) != 0) {
      return 1;
    }
    return wait_and_print(child);
  } else if (mode == "many-buffers") {
    many_buffers();
  } else if (mode == "short-threads") {
    short_threads();
  } else if (mode == "busy-at-exit") {
    busy_at_exit();
  } else if (mode == "kill") {
    fill_buffers();
    ::raise(SIGKILL);
  } else if (mode == "quick-exit") {
    fill_buffers();
    ::_exit(0);
  } else {
    std::fprintf(
        stderr,
        "usage: %s kinds [rounds]|threads|fork|spawn|short-threads|busy-at-exit|kill|quick-exit\n",
        argv[0]);
    return 2;
  }
  return 0;
}
