// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/workloads/cache_lines.cpp: allocator-induced false sharing, the cache-scratch
// and cache-thrash tests of the Hoard paper (Berger et al., "Hoard: A Scalable Memory Allocator
// for Multithreaded Applications", ASPLOS 2000; docs/background.md#false-sharing). Each thread
// repeatedly allocates a small object, increments it and frees it: an allocator that hands two
// threads objects on one cache line makes the increments fight for the line.

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <memkit/config.hpp>

#include "policies/lists.hpp"
#include "policies/threaded.hpp"
#include "workloads/threaded.hpp"
#include "workloads/workloads.hpp"

namespace memkit::bench {
namespace {

using counter = std::atomic<std::uint64_t>;

/// Hoard's tests use 8-byte objects: eight fit on one line.
constexpr std::size_t object_size = sizeof(counter);

/// \returns the note's verdict by address: how many of the objects lay on a cache line that held
/// another thread's object at some point of the run (not necessarily at the same time: a line
/// two threads take turns on costs a transfer per turn).
std::string shared_lines(const std::vector<std::vector<std::uintptr_t>>& lines_of) {
  std::map<std::uintptr_t, std::uint64_t> users; // line -> bit per thread (at most 4 here)
  std::size_t objects = 0;
  for (std::size_t t = 0; t < lines_of.size(); ++t) {
    for (const std::uintptr_t line : lines_of[t]) {
      users[line] |= std::uint64_t{1} << (t % 64);
      ++objects;
    }
  }
  std::size_t shared_objects = 0;
  std::size_t shared = 0;
  for (std::size_t t = 0; t < lines_of.size(); ++t) {
    for (const std::uintptr_t line : lines_of[t]) {
      shared_objects += (users[line] & ~(std::uint64_t{1} << (t % 64))) != 0 ? 1 : 0;
    }
  }
  for (const auto& [line, mask] : users) {
    shared += (mask & (mask - 1)) != 0 ? 1 : 0;
  }
  if (shared == 0) {
    return "no cache line held objects of two threads";
  }
  return std::to_string(shared) +
         " cache line(s) held objects of two threads: " + std::to_string(shared_objects) + " of " +
         std::to_string(objects) + " objects on them";
}

/// `threads` threads each allocate, increment `increments` times (relaxed atomic adds, which
/// a shared line slows about 9x here where plain stores hardly notice) and free an object,
/// `rounds` times. With `scratch`, this thread first allocates one object per thread one after
/// another and each thread frees its own before starting, as Hoard's cache-scratch does: an
/// allocator that reuses a freed block for the thread that freed it inherits the neighbours.
auto objects(unsigned threads, std::size_t rounds, std::size_t increments, bool scratch) {
  return [=](auto& policy, std::string& note) {
    std::vector<void*> handed(threads, nullptr);
    if (scratch) {
      for (void*& p : handed) {
        p = policy.allocate(object_size, object_size);
      }
    }
    std::vector<std::vector<std::uintptr_t>> lines_of(threads);
    const std::uint64_t h = on_threads(threads, [&](unsigned t) -> std::uint64_t {
      if (handed[t] != nullptr) {
        policy.deallocate(handed[t], object_size, object_size);
      }
      std::vector<std::uintptr_t>& lines = lines_of[t];
      lines.reserve(rounds);
      std::uint64_t sum = 0;
      for (std::size_t r = 0; r < rounds; ++r) {
        auto* c = new (policy.allocate(object_size, object_size)) counter(0);
        lines.push_back(reinterpret_cast<std::uintptr_t>(c) / cache_line_size);
        for (std::size_t i = 0; i < increments; ++i) {
          c->fetch_add(1, std::memory_order_relaxed);
        }
        sum += c->load(std::memory_order_relaxed);
        c->~counter();
        policy.deallocate(c, object_size, object_size);
      }
      return sum;
    });
    note = shared_lines(lines_of);
    return h;
  };
}

} // namespace

void add_cache_lines(registry& r, const params& p) {
  const std::size_t rounds = p.scaled(100);
  constexpr std::size_t increments = 20'000;
  const hint h{object_size, 0};
  for (const bool scratch : {true, false}) {
    for (const unsigned n : thread_counts) {
      const workload& w = r.add_workload(
          {threaded_name(scratch ? "cache-scratch" : "cache-thrash", n), "increments",
           static_cast<double>(n * rounds * increments), 10,
           std::to_string(n) + " thread(s) each allocating an " + std::to_string(object_size) +
               "-byte object " + std::to_string(rounds) + " times, " + std::to_string(increments) +
               " atomic increments on each, then freeing it" +
               (scratch ? "; each first frees one of the objects this thread allocated together"
                        : "")});
      auto iteration = objects(n, rounds, increments, scratch);
      // memkit-aligned, whose blocks own whole cache lines, is the padded ideal.
      r.add<std_policy, aligned_policy, synchronized_pool_policy, synchronized_multipool_policy,
            concurrent_pool_policy, thread_cached_policy, thread_cached_pool_policy,
            pmr_sync_pool_policy, foonathan_thread_safe_pool_policy>(w, h, iteration);
      r.add(tbb_policies{}, w, h, iteration);
    }
  }
}

} // namespace memkit::bench
