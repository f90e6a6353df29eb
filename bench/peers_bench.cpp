// SPDX-License-Identifier: BSL-1.0
// bench/peers_bench.cpp: the allocators memkit is measured against, under the same pattern names.

#include <boost/pool/pool.hpp>
#include <foonathan/memory/memory_pool.hpp>

#include <cstdlib>
#include <memory>
#include <memory_resource>
#include <new>

#include "patterns.hpp"

namespace memkit::bench {
namespace {

class malloc_policy {
public:
  void* allocate() { return std::malloc(block_size); }
  void deallocate(void* p) noexcept { std::free(p); }
  // Without a bulk release, the heap frees block by block: the cost a bump allocator saves.
  void reset(std::span<void*> blocks) noexcept {
    for (void* p : blocks) {
      std::free(p);
    }
  }
};

/// new and delete expressions, so the compiler picks the operator overloads as for any object.
class new_delete_policy {
  struct alignas(block_alignment) block {
    unsigned char bytes[block_size];
  };

public:
  void* allocate() { return new block; }
  void deallocate(void* p) noexcept { delete static_cast<block*>(p); }
};

/// A std::pmr resource called on its concrete type, as a user holding it would; its virtual
/// do_allocate is then a candidate for devirtualisation, which only helps the peer.
template <class Resource>
class pmr_policy {
public:
  void* allocate() { return r_.allocate(block_size, block_alignment); }
  void deallocate(void* p) noexcept { r_.deallocate(p, block_size, block_alignment); }

private:
  Resource r_;
};

/// The Alloc baseline. Its initial buffer holds a whole round and release() rewinds to it, so after
/// the first round it makes no upstream calls, as memkit::arena does after its first round with
/// reset(); the null upstream turns any upstream call into an exception instead of a quiet malloc.
class pmr_monotonic_policy {
public:
  void* allocate() { return r_.allocate(block_size, block_alignment); }
  void reset(std::span<void*>) noexcept { r_.release(); }

private:
  static constexpr std::size_t buffer_size = live_blocks * block_size;
  std::unique_ptr<std::byte[]> buffer_ = std::make_unique_for_overwrite<std::byte[]>(buffer_size);
  std::pmr::monotonic_buffer_resource r_{buffer_.get(), buffer_size,
                                         std::pmr::null_memory_resource()};
};

/// boost::pool's unordered malloc/free, its fast path (ordered_free keeps the free list sorted,
/// which costs a list walk per free).
class boost_pool_policy {
public:
  void* allocate() { return pool_.malloc(); }
  void deallocate(void* p) noexcept { pool_.free(p); }

private:
  boost::pool<> pool_{block_size};
};

/// foonathan's node pool, with a first block that holds a whole round so block growth never shows.
class foonathan_pool_policy {
  using pool_type = foonathan::memory::memory_pool<foonathan::memory::node_pool>;

public:
  void* allocate() { return pool_.allocate_node(); }
  void deallocate(void* p) noexcept { pool_.deallocate_node(p); }

private:
  pool_type pool_{block_size, pool_type::min_block_size(block_size, live_blocks)};
};

const bool registered = [] {
  register_alloc_free<malloc_policy>("Malloc");
  register_alloc_free<new_delete_policy>("NewDelete");
  register_alloc_free<pmr_policy<std::pmr::unsynchronized_pool_resource>>("PmrUnsyncPool");
  register_alloc_free<pmr_policy<std::pmr::synchronized_pool_resource>>("PmrSyncPool");
  register_alloc_free<boost_pool_policy>("BoostPool");
  register_alloc_free<foonathan_pool_policy>("FoonathanPool");
  register_alloc<malloc_policy>("Malloc");
  register_alloc<pmr_monotonic_policy>("PmrMonotonic");
  return true;
}();

} // namespace
} // namespace memkit::bench
