// apps/memkit-bench/variants.hpp: the allocation policies memkit-bench compares, one class each.
#pragma once

#include <memkit/aligned.hpp>
#include <memkit/allocator.hpp>
#include <memkit/arena.hpp>
#include <memkit/array_pool.hpp>
#include <memkit/huge_page.hpp>
#include <memkit/multipool.hpp>
#include <memkit/node_pool.hpp>
#include <memkit/pool.hpp>
#include <memkit/stack.hpp>
#include <memkit/static_allocator.hpp>

#include <boost/pool/pool.hpp>
#include <boost/pool/pool_alloc.hpp>
#include <foonathan/memory/memory_pool.hpp>
#include <foonathan/memory/std_allocator.hpp>

#include <cstddef>
#include <memory>
#include <memory_resource>
#include <new>

namespace memkit::bench {

/// What a workload tells a policy before it is built: the fixed-size peers (memkit::pool,
/// array_pool, stack, boost::pool, foonathan's pool) need the block size and how many blocks live
/// at once; every other policy ignores it.
struct hint {
  std::size_t block_size = 0;
  std::size_t blocks = 0;
};

// A policy is one way of getting memory, with the same face for every workload:
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

/// Any memkit resource behind memkit::allocator; `Reset` rewinds it after every iteration.
template <class Resource, bool Reset = false>
class memkit_policy {
public:
  template <class... Args>
  explicit memkit_policy(Args&&... args) : r_(std::forward<Args>(args)...) {}
  template <class T>
  using allocator_type = memkit::allocator<T, Resource>;
  template <class T>
  allocator_type<T> allocator() noexcept {
    return r_;
  }
  void* allocate(std::size_t bytes, std::size_t alignment) { return r_.allocate(bytes, alignment); }
  void deallocate(void* p, std::size_t bytes, std::size_t alignment) noexcept {
    r_.deallocate(p, bytes, alignment);
  }
  void recycle() noexcept {
    if constexpr (Reset) {
      r_.reset();
    }
  }
  Resource& resource() noexcept { return r_; }

private:
  Resource r_;
};

struct arena_policy : memkit_policy<memkit::arena<>, true> {
  static constexpr const char* name = "memkit-arena";
  explicit arena_policy(const hint&) {}
};
struct multipool_policy : memkit_policy<memkit::multipool<>> {
  static constexpr const char* name = "memkit-multipool";
  explicit multipool_policy(const hint&) {}
};
/// node_pool learns the node size from the first node, so it needs no hint.
struct node_pool_policy : memkit_policy<memkit::node_pool<>> {
  static constexpr const char* name = "memkit-node-pool";
  explicit node_pool_policy(const hint&) {}
};
struct pool_policy : memkit_policy<memkit::pool<>> {
  static constexpr const char* name = "memkit-pool";
  explicit pool_policy(const hint& h) : memkit_policy(h.block_size) {}
};
/// array_pool has a fixed capacity: exactly the blocks the workload keeps alive at once.
struct array_pool_policy : memkit_policy<memkit::array_pool<>> {
  static constexpr const char* name = "memkit-array-pool";
  explicit array_pool_policy(const hint& h) : memkit_policy(h.block_size, h.blocks) {}
};
/// A stack sized for the live blocks plus each one's two-pointer header and alignment padding.
struct stack_policy : memkit_policy<memkit::stack<>, true> {
  static constexpr const char* name = "memkit-stack";
  explicit stack_policy(const hint& h)
      : memkit_policy(h.blocks * (h.block_size + 2 * sizeof(void*) + default_alignment)) {}
};
struct aligned_policy : memkit_policy<memkit::aligned<>> {
  static constexpr const char* name = "memkit-aligned";
  explicit aligned_policy(const hint&) {}
};
struct huge_page_policy : memkit_policy<memkit::huge_page_resource> {
  static constexpr const char* name = "memkit-huge-page";
  explicit huge_page_policy(const hint&) {}
};

/// The arena a thread's memkit-thread-arena containers draw from: the policy being measured on
/// that thread installs its own, so containers need not carry a pointer to it.
struct thread_arena_tag {};
inline thread_local memkit::arena<>* current_thread_arena = nullptr;

} // namespace memkit::bench

template <>
struct memkit::static_resource_traits<memkit::bench::thread_arena_tag> {
  using resource_type = memkit::arena<>;
  static resource_type& get() noexcept { return *memkit::bench::current_thread_arena; }
};

namespace memkit::bench {

/// An arena reached through a stateless allocator (memkit::static_allocator over the thread's
/// current arena): the request-scoped arena of a server thread. Containers stay the size of
/// std::allocator's, and moving or swapping them never compares allocators. The policy installs
/// its arena for the thread that builds it and puts the previous one back when it goes.
class thread_arena_policy : public memkit_policy<memkit::arena<>, true> {
public:
  static constexpr const char* name = "memkit-thread-arena";
  explicit thread_arena_policy(const hint&) noexcept : previous_(current_thread_arena) {
    current_thread_arena = &resource();
  }
  thread_arena_policy(const thread_arena_policy&) = delete;
  thread_arena_policy& operator=(const thread_arena_policy&) = delete;
  ~thread_arena_policy() { current_thread_arena = previous_; }

  template <class T>
  using allocator_type = memkit::static_allocator<T, thread_arena_tag>;
  template <class T>
  allocator_type<T> allocator() noexcept {
    return {};
  }

private:
  memkit::arena<>* previous_;
};

/// Any std::pmr resource behind polymorphic_allocator; the derived class owns the resource.
class pmr_policy {
public:
  template <class T>
  using allocator_type = std::pmr::polymorphic_allocator<T>;
  template <class T>
  allocator_type<T> allocator() noexcept {
    return allocator_type<T>(r_);
  }
  void* allocate(std::size_t bytes, std::size_t alignment) {
    return r_->allocate(bytes, alignment);
  }
  void deallocate(void* p, std::size_t bytes, std::size_t alignment) noexcept {
    r_->deallocate(p, bytes, alignment);
  }

protected:
  explicit pmr_policy(std::pmr::memory_resource* r) noexcept : r_(r) {}

private:
  std::pmr::memory_resource* r_;
};

/// A monotonic buffer over new/delete, released after every iteration.
class pmr_monotonic_policy : public pmr_policy {
public:
  static constexpr const char* name = "pmr-monotonic";
  explicit pmr_monotonic_policy(const hint&) : pmr_policy(&r_) {}
  void recycle() noexcept { r_.release(); }

private:
  std::pmr::monotonic_buffer_resource r_;
};

/// Seed 003's configuration: a monotonic buffer over a 1 MiB buffer (the seed's thread_local
/// arena) that overflows into a synchronized pool, released after every request.
class pmr_monotonic_sync_pool_policy : public pmr_policy {
public:
  static constexpr const char* name = "pmr-monotonic-sync-pool";
  static constexpr std::size_t buffer_size = std::size_t{1} << 20;
  explicit pmr_monotonic_sync_pool_policy(const hint&)
      : pmr_policy(&r_), buffer_(new std::byte[buffer_size]),
        r_(buffer_.get(), buffer_size, &pool_) {}
  void recycle() noexcept { r_.release(); }

private:
  std::pmr::synchronized_pool_resource pool_;
  std::unique_ptr<std::byte[]> buffer_;
  std::pmr::monotonic_buffer_resource r_;
};

template <class Pool>
class pmr_pool_policy : public pmr_policy {
public:
  explicit pmr_pool_policy(const hint&) : pmr_policy(&r_) {}
  void recycle() noexcept {}

private:
  Pool r_;
};
struct pmr_unsync_pool_policy : pmr_pool_policy<std::pmr::unsynchronized_pool_resource> {
  static constexpr const char* name = "pmr-unsync-pool";
  using pmr_pool_policy::pmr_pool_policy;
};
struct pmr_sync_pool_policy : pmr_pool_policy<std::pmr::synchronized_pool_resource> {
  static constexpr const char* name = "pmr-sync-pool";
  using pmr_pool_policy::pmr_pool_policy;
};

/// Boost's container allocators draw from process-wide singleton pools (one per element size)
/// that keep their memory until exit. Raw blocks come from a boost::pool of the hinted size.
template <template <class> class Allocator>
class boost_policy {
public:
  explicit boost_policy(const hint& h) : raw_(h.block_size == 0 ? 1 : h.block_size) {}
  template <class T>
  using allocator_type = Allocator<T>;
  template <class T>
  allocator_type<T> allocator() noexcept {
    return {};
  }
  void* allocate(std::size_t, std::size_t) {
    void* p = raw_.malloc();
    if (p == nullptr) {
      throw std::bad_alloc();
    }
    return p;
  }
  void deallocate(void* p, std::size_t, std::size_t) noexcept { raw_.free(p); }
  void recycle() noexcept {}

private:
  boost::pool<> raw_;
};
template <class T>
using boost_pool_allocator = boost::pool_allocator<T>;
template <class T>
using boost_fast_pool_allocator = boost::fast_pool_allocator<T>;
struct boost_pool_policy : boost_policy<boost_pool_allocator> {
  static constexpr const char* name = "boost-pool";
  using boost_policy::boost_policy;
};
struct boost_fast_pool_policy : boost_policy<boost_fast_pool_allocator> {
  static constexpr const char* name = "boost-fast-pool";
  using boost_policy::boost_policy;
};

/// foonathan's node pool must be told the node size (Debian's package lacks the build-time node
/// size table); its first block holds every block an iteration keeps alive.
class foonathan_pool_policy {
  using pool_type = foonathan::memory::memory_pool<foonathan::memory::node_pool>;

public:
  static constexpr const char* name = "foonathan-memory-pool";
  explicit foonathan_pool_policy(const hint& h)
      : pool_(h.block_size, pool_type::min_block_size(h.block_size, h.blocks == 0 ? 1 : h.blocks)) {
  }
  template <class T>
  using allocator_type = foonathan::memory::std_allocator<T, pool_type>;
  template <class T>
  allocator_type<T> allocator() noexcept {
    return allocator_type<T>(pool_);
  }
  void* allocate(std::size_t, std::size_t) { return pool_.allocate_node(); }
  void deallocate(void* p, std::size_t, std::size_t) noexcept { pool_.deallocate_node(p); }
  void recycle() noexcept {}

private:
  pool_type pool_;
};

} // namespace memkit::bench
