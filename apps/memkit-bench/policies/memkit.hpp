// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/policies/memkit.hpp: the memkit strategies as policies.
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

#include <cstddef>
#include <utility>

#include "core/policy.hpp"

namespace memkit::bench {

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
/// The regions of a growing vector are kept between its growth steps and iterations, as the
/// general-purpose allocators keep their memory mapped (huge_page.hpp, huge_page_cache).
struct huge_page_policy : memkit_policy<memkit::huge_page_cache> {
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

} // namespace memkit::bench
