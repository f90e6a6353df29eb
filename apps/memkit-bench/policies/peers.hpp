// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/policies/peers.hpp: Boost.Pool and foonathan/memory as policies.
#pragma once

#include <boost/pool/pool.hpp>
#include <boost/pool/pool_alloc.hpp>
#include <foonathan/memory/memory_pool.hpp>
#include <foonathan/memory/std_allocator.hpp>

#include <cstddef>
#include <new>

#include "core/policy.hpp"

namespace memkit::bench {

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
