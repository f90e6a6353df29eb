// apps/memkit-bench/policies/threaded.hpp: the thread-safe policies the threaded workloads
// (workloads/threads.cpp, workloads/cache_lines.cpp) share between their threads: memkit's
// synchronized and lock-free strategies and the peers built for threads.
#pragma once

#include <memkit/concurrent_pool.hpp>
#include <memkit/multipool.hpp>
#include <memkit/pool.hpp>
#include <memkit/synchronized.hpp>
#include <memkit/thread_cached.hpp>

#include <boost/pool/singleton_pool.hpp>
#include <foonathan/memory/memory_pool.hpp>
#include <foonathan/memory/std_allocator.hpp>
#include <foonathan/memory/threading.hpp>

#include <cstddef>
#include <mutex>
#include <new>

#if defined(MEMKIT_BENCH_TBB)
#include <tbb/scalable_allocator.h>
#endif

#include "core/registry.hpp"
#include "policies/memkit.hpp"
#include "policies/policy.hpp"

namespace memkit::bench {

/// The block size of the fixed-size threaded workloads (mt-local-fixed, mt-producer-consumer):
/// Boost's singleton_pool takes its size as a template argument.
inline constexpr std::size_t threaded_block_size = 64;

struct synchronized_pool_policy : memkit_policy<memkit::synchronized<memkit::pool<>>> {
  static constexpr const char* name = "memkit-sync-pool";
  explicit synchronized_pool_policy(const hint& h) : memkit_policy(h.block_size) {}
};
struct synchronized_multipool_policy : memkit_policy<memkit::synchronized<memkit::multipool<>>> {
  static constexpr const char* name = "memkit-sync-multipool";
  explicit synchronized_multipool_policy(const hint&) {}
};
struct concurrent_pool_policy : memkit_policy<memkit::concurrent_pool<>> {
  static constexpr const char* name = "memkit-concurrent-pool";
  explicit concurrent_pool_policy(const hint& h) : memkit_policy(h.block_size) {}
};
/// Per-thread caches over size classes: the any-size form.
struct thread_cached_policy : memkit_policy<memkit::thread_cached<>> {
  static constexpr const char* name = "memkit-thread-cached";
  explicit thread_cached_policy(const hint&) {}
};
/// Per-thread caches of one block size: the fixed-size form.
struct thread_cached_pool_policy : memkit_policy<memkit::thread_cached_pool<>> {
  static constexpr const char* name = "memkit-thread-cached-pool";
  explicit thread_cached_pool_policy(const hint& h) : memkit_policy(h.block_size) {}
};

/// Boost's process-wide pool of threaded_block_size blocks behind its default mutex; the
/// workloads that register it allocate nothing larger.
class boost_singleton_pool_policy {
  struct tag {};
  using pool = boost::singleton_pool<tag, threaded_block_size>;

public:
  static constexpr const char* name = "boost-singleton-pool";
  explicit boost_singleton_pool_policy(const hint&) noexcept {}
  void* allocate(std::size_t, std::size_t) {
    void* p = pool::malloc();
    if (p == nullptr) {
      throw std::bad_alloc();
    }
    return p;
  }
  void deallocate(void* p, std::size_t, std::size_t) noexcept { pool::free(p); }
  void recycle() noexcept {}
};

/// foonathan's node pool wrapped in its thread_safe_allocator (a std::mutex around every call).
class foonathan_thread_safe_pool_policy {
  using pool_type = foonathan::memory::memory_pool<foonathan::memory::node_pool>;
  using safe_type = foonathan::memory::thread_safe_allocator<pool_type, std::mutex>;

public:
  static constexpr const char* name = "foonathan-thread-safe-pool";
  explicit foonathan_thread_safe_pool_policy(const hint& h)
      : pool_(pool_type(h.block_size, pool_type::min_block_size(h.block_size, 4096))) {}
  void* allocate(std::size_t bytes, std::size_t alignment) {
    return pool_.allocate_node(bytes, alignment);
  }
  void deallocate(void* p, std::size_t bytes, std::size_t alignment) noexcept {
    pool_.deallocate_node(p, bytes, alignment);
  }
  void recycle() noexcept {}

private:
  safe_type pool_;
};

#if defined(MEMKIT_BENCH_TBB)
/// oneTBB's scalable allocator called directly (per-thread heaps, no global replacement).
class tbb_scalable_policy {
public:
  static constexpr const char* name = "tbb-scalable";
  explicit tbb_scalable_policy(const hint&) noexcept {}
  template <class T>
  using allocator_type = tbb::scalable_allocator<T>;
  template <class T>
  allocator_type<T> allocator() noexcept {
    return {};
  }
  void* allocate(std::size_t bytes, std::size_t alignment) {
    void* p = scalable_aligned_malloc(bytes, alignment);
    if (p == nullptr) {
      throw std::bad_alloc();
    }
    return p;
  }
  void deallocate(void* p, std::size_t, std::size_t) noexcept { scalable_aligned_free(p); }
  void recycle() noexcept {}
};
/// The oneTBB policies, none where libtbb-dev was not found when memkit-bench was built.
using tbb_policies = policy_list<tbb_scalable_policy>;
#else
using tbb_policies = policy_list<>;
#endif

} // namespace memkit::bench
