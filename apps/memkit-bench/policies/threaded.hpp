// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/policies/threaded.hpp: the thread-safe policies the threaded workloads
// (workloads/threads.cpp, workloads/cache_lines.cpp) share between their threads: memkit's
// synchronized and lock-free strategies and the peers built for threads.
#pragma once

#include <memkit/concurrent_pool.hpp>
#include <memkit/multipool.hpp>
#include <memkit/pool.hpp>
#include <memkit/spin_mutex.hpp>
#include <memkit/synchronized.hpp>
#include <memkit/thread_cached.hpp>

#include <boost/pool/singleton_pool.hpp>
#include <foonathan/memory/memory_pool.hpp>
#include <foonathan/memory/std_allocator.hpp>
#include <foonathan/memory/threading.hpp>

#include <cstddef>
#include <mutex>
#include <new>

#if defined(__GLIBC__)
#include <pthread.h>
#endif

#if defined(MEMKIT_BENCH_TBB)
#include <tbb/scalable_allocator.h>
#endif

#include "core/policy.hpp"
#include "core/registry.hpp"
#include "policies/memkit.hpp"

namespace memkit::bench {

/// The block size of the fixed-size threaded workloads (mt-local-fixed, mt-producer-consumer):
/// Boost's singleton_pool takes its size as a template argument.
inline constexpr std::size_t threaded_block_size = 64;

struct synchronized_pool_policy : memkit_policy<memkit::synchronized<memkit::pool<>>> {
  static constexpr const char* name = "memkit-sync-pool";
  explicit synchronized_pool_policy(const hint& h) : memkit_policy(h.block_size) {}
};
/// The same pool behind memkit's spin lock instead of std::mutex (docs/threads.md, "Which mutex").
struct synchronized_pool_spin_policy
    : memkit_policy<memkit::synchronized<memkit::pool<>, memkit::spin_mutex>> {
  static constexpr const char* name = "memkit-sync-pool-spin";
  explicit synchronized_pool_spin_policy(const hint& h) : memkit_policy(h.block_size) {}
};
struct synchronized_multipool_policy : memkit_policy<memkit::synchronized<memkit::multipool<>>> {
  static constexpr const char* name = "memkit-sync-multipool";
  explicit synchronized_multipool_policy(const hint&) {}
};
struct synchronized_multipool_spin_policy
    : memkit_policy<memkit::synchronized<memkit::multipool<>, memkit::spin_mutex>> {
  static constexpr const char* name = "memkit-sync-multipool-spin";
  explicit synchronized_multipool_spin_policy(const hint&) {}
};

#if defined(__GLIBC__)
/// glibc's adaptive mutex (PTHREAD_MUTEX_ADAPTIVE_NP): spins a bounded, self-tuning number of
/// times in user space before it sleeps in the kernel, as std::mutex (a plain pthread mutex)
/// does at once. A third choice for `synchronized`, measured beside the other two.
class pthread_adaptive_mutex {
public:
  pthread_adaptive_mutex() noexcept {
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ADAPTIVE_NP);
    pthread_mutex_init(&m_, &a);
    pthread_mutexattr_destroy(&a);
  }
  pthread_adaptive_mutex(const pthread_adaptive_mutex&) = delete;
  pthread_adaptive_mutex& operator=(const pthread_adaptive_mutex&) = delete;
  ~pthread_adaptive_mutex() { pthread_mutex_destroy(&m_); }
  void lock() noexcept { pthread_mutex_lock(&m_); }
  void unlock() noexcept { pthread_mutex_unlock(&m_); }

private:
  pthread_mutex_t m_;
};
struct synchronized_pool_adaptive_policy
    : memkit_policy<memkit::synchronized<memkit::pool<>, pthread_adaptive_mutex>> {
  static constexpr const char* name = "memkit-sync-pool-adaptive";
  explicit synchronized_pool_adaptive_policy(const hint& h) : memkit_policy(h.block_size) {}
};
/// The mutex variants beyond std::mutex's: none where the C library is not glibc.
using adaptive_mutex_policies = policy_list<synchronized_pool_adaptive_policy>;
#else
using adaptive_mutex_policies = policy_list<>;
#endif
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
