// SPDX-License-Identifier: BSL-1.0
// bench/pair_loop.cpp: one noinline loop of allocate/deallocate pairs per strategy, for counting
// instructions with callgrind (docs/statistics.md, "Instructions per pair"). Not a Google
// Benchmark: callgrind counts are exact and repeatable where wall time on a shared machine is not,
// and a plain loop has nothing around it to count.
//
//   valgrind --tool=callgrind --callgrind-out-file=/dev/null --toggle-collect='loop_pool()'
//     memkit_pair_loop pool   (one command line)
//
// Each loop runs `rounds` rounds of `live` allocations of 32 bytes aligned to 16, then `live`
// frees in LIFO order (arena: `live` allocations, then reset()): 200 000 pairs. `memkit_pair_loop`
// with no argument lists the loop names.
#include <memkit/aligned.hpp>
#include <memkit/arena.hpp>
#include <memkit/array_pool.hpp>
#include <memkit/concurrent_pool.hpp>
#include <memkit/fallback.hpp>
#include <memkit/fixed_pool.hpp>
#include <memkit/multipool.hpp>
#include <memkit/node_pool.hpp>
#include <memkit/pool.hpp>
#include <memkit/spin_mutex.hpp>
#include <memkit/stack.hpp>
#include <memkit/synchronized.hpp>
#include <memkit/thread_cached.hpp>

#include <cstdio>
#include <cstring>
#include <tuple>
#include <utility>

namespace {

constexpr int live = 1000;
constexpr int rounds = 200;
void* blocks[live];
std::size_t sink;

template <class R>
void lifo(R& r, std::size_t bytes, std::size_t alignment) {
  for (int k = 0; k < rounds; ++k) {
    for (int i = 0; i < live; ++i) {
      blocks[i] = r.allocate(bytes, alignment);
    }
    sink += reinterpret_cast<std::size_t>(blocks[live / 2]);
    for (int i = live - 1; i >= 0; --i) {
      r.deallocate(blocks[i], bytes, alignment);
    }
  }
}

// Room for `live` blocks of 64 bytes: the fixed pools and the static multipool work in it.
alignas(64) unsigned char storage[std::size_t{live} * 64];

} // namespace

// Outside the anonymous namespace so that callgrind's --toggle-collect names them plainly.
__attribute__((noinline)) void loop_fixed_pool() {
  memkit::fixed_pool r(storage, sizeof storage, 32, 16);
  lifo(r, 32, 16);
}
__attribute__((noinline)) void loop_inline_fixed_pool() {
  static memkit::inline_fixed_pool<32, live, 16> r;
  lifo(r, 32, 16);
}
__attribute__((noinline)) void loop_pool() {
  memkit::pool<> r(32, 16);
  lifo(r, 32, 16);
}
__attribute__((noinline)) void loop_node_pool() {
  memkit::node_pool<> r;
  lifo(r, 32, 16);
}
__attribute__((noinline)) void loop_array_pool() {
  memkit::array_pool<> r(32, live, 16);
  lifo(r, 32, 16);
}
__attribute__((noinline)) void loop_multipool() {
  memkit::multipool<> r;
  lifo(r, 32, 16);
}
__attribute__((noinline)) void loop_multipool_static() {
  memkit::multipool<> r(storage, sizeof storage);
  lifo(r, 32, 16);
}
__attribute__((noinline)) void loop_arena() {
  memkit::arena<> r;
  for (int k = 0; k < rounds; ++k) {
    for (int i = 0; i < live; ++i) {
      blocks[i] = r.allocate(32, 16);
    }
    sink += reinterpret_cast<std::size_t>(blocks[live / 2]);
    r.reset();
  }
}
__attribute__((noinline)) void loop_stack() {
  memkit::stack<> r(std::size_t{1} << 16);
  lifo(r, 32, 16);
}
// Half the blocks from each member: the fixed pool holds 500, the pool takes the rest.
__attribute__((noinline)) void loop_fallback() {
  memkit::fallback<memkit::fixed_pool, memkit::pool<>> r(
      std::piecewise_construct, std::forward_as_tuple(storage, live / 2 * 32, 32, 16),
      std::forward_as_tuple(32, 16));
  lifo(r, 32, 16);
}
__attribute__((noinline)) void loop_aligned() {
  memkit::pool<> p(64, 64);
  memkit::aligned<memkit::resource_ref<memkit::pool<>>> r(memkit::resource_ref<memkit::pool<>>{p});
  lifo(r, 32, 16);
}

// The thread-safe ones, called by one thread: the uncontended cost of each way to share a pool
// (docs/threads.md, "Which mutex").
__attribute__((noinline)) void loop_synchronized_pool() {
  memkit::synchronized<memkit::pool<>> r(32, 16);
  lifo(r, 32, 16);
}
__attribute__((noinline)) void loop_synchronized_pool_spin() {
  memkit::synchronized<memkit::pool<>, memkit::spin_mutex> r(32, 16);
  lifo(r, 32, 16);
}
__attribute__((noinline)) void loop_concurrent_pool() {
  memkit::concurrent_pool<> r(32, 16);
  lifo(r, 32, 16);
}
__attribute__((noinline)) void loop_synchronized_multipool() {
  memkit::synchronized<memkit::multipool<>> r;
  lifo(r, 32, 16);
}
__attribute__((noinline)) void loop_synchronized_multipool_spin() {
  memkit::synchronized<memkit::multipool<>, memkit::spin_mutex> r;
  lifo(r, 32, 16);
}
__attribute__((noinline)) void loop_thread_cached() {
  memkit::thread_cached<> r;
  lifo(r, 32, 16);
}
__attribute__((noinline)) void loop_thread_cached_pool() {
  memkit::thread_cached_pool<> r(32, 16);
  lifo(r, 32, 16);
}

int main(int argc, char** argv) {
  const struct {
    const char* name;
    void (*run)();
  } loops[] = {{"fixed_pool", loop_fixed_pool},
               {"inline_fixed_pool", loop_inline_fixed_pool},
               {"pool", loop_pool},
               {"node_pool", loop_node_pool},
               {"array_pool", loop_array_pool},
               {"multipool", loop_multipool},
               {"multipool_static", loop_multipool_static},
               {"arena", loop_arena},
               {"stack", loop_stack},
               {"fallback", loop_fallback},
               {"aligned", loop_aligned},
               {"synchronized_pool", loop_synchronized_pool},
               {"synchronized_pool_spin", loop_synchronized_pool_spin},
               {"concurrent_pool", loop_concurrent_pool},
               {"synchronized_multipool", loop_synchronized_multipool},
               {"synchronized_multipool_spin", loop_synchronized_multipool_spin},
               {"thread_cached", loop_thread_cached},
               {"thread_cached_pool", loop_thread_cached_pool}};
  const char* which = argc > 1 ? argv[1] : "";
  bool ran = false;
  for (const auto& l : loops) {
    if (std::strcmp(which, l.name) == 0) {
      l.run();
      ran = true;
    }
  }
  if (!ran) {
    std::fputs("usage: memkit_pair_loop <loop>; loops:", stderr);
    for (const auto& l : loops) {
      std::fprintf(stderr, " %s", l.name);
    }
    std::fputs("\n", stderr);
    return 2;
  }
  std::printf("%zu\n", sink & 1);
  return 0;
}
