// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/core/policy.hpp: what a policy is, the hint it is built from, and the
// baseline policy every other is compared with (std).
//
// The words, as docs/BENCHMARKS.md defines them for this app and bench/ alike: a *policy* is a
// class that adapts one allocator to the workloads; a *variant* is the name its rows carry
// ("memkit-arena"; a global replacement is a variant that runs std_policy under LD_PRELOAD); a
// *workload* is a program fragment with its inputs and a result hash every variant must
// reproduce (workloads/); a *pattern* is a sequence of allocator calls, such as the free orders of
// memkit_bench/random.hpp that the pairs workloads and bench/'s AllocFree benchmarks share.
#pragma once

#include <cstddef>
#include <memory>
#include <new>

namespace memkit::bench {

/// What a workload tells a policy before it is built: the fixed-size peers (memkit::pool,
/// array_pool, stack, boost::pool, foonathan's pool) need the block size and how many blocks live
/// at once; every other policy ignores it.
struct hint {
  std::size_t block_size = 0;
  std::size_t blocks = 0;
};

// A policy is one way of getting memory (a memkit strategy or a peer), with the same face for
// every workload; a variant is the name its rows carry (`name`, e.g. "memkit-arena"):
// - `allocator_type<T>` and `allocator<T>()`: a standard allocator for containers;
// - `allocate(bytes, alignment)` / `deallocate(p, bytes, alignment)`: raw blocks, for the workloads
//   that allocate without a container (pairs, false-sharing);
// - `recycle()`: called after every iteration, once its containers are gone (an arena rewinds, a
//   monotonic buffer releases), as each strategy's users do at the end of a request.
// A policy is built once per measurement from a `hint` and outlives every iteration.

/// glibc (or whichever malloc is preloaded): std::allocator and operator new.
class std_policy {
public:
  static constexpr const char* name = "std";
  explicit std_policy(const hint&) noexcept {}
  template <class T>
  using allocator_type = std::allocator<T>;
  template <class T>
  allocator_type<T> allocator() noexcept {
    return {};
  }
  void* allocate(std::size_t bytes, std::size_t) { return ::operator new(bytes); }
  void deallocate(void* p, std::size_t bytes, std::size_t) noexcept {
#if defined(__cpp_sized_deallocation) // clang 14 leaves sized deallocation off by default
    ::operator delete(p, bytes);
#else
    (void)bytes;
    ::operator delete(p);
#endif
  }
  void recycle() noexcept {}
};

} // namespace memkit::bench
