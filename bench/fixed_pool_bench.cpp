// SPDX-License-Identifier: BSL-1.0
// bench/fixed_pool_bench.cpp: memkit::fixed_pool against the peers in peers_bench.cpp.

#include <memkit/fixed_pool.hpp>

#include <memory>

#include "patterns.hpp"

namespace memkit::bench {
namespace {

// new[] aligns the storage for the blocks, so exactly live_blocks fit.
static_assert(block_alignment <= __STDCPP_DEFAULT_NEW_ALIGNMENT__);

/// The storage comes from the heap, so heap_per_block counts it like the peers' chunks.
class fixed_pool_policy {
  static constexpr std::size_t storage_bytes =
      fixed_pool::block_size_for(block_size, block_alignment) * live_blocks;

public:
  void* allocate() { return pool_.allocate(block_size, block_alignment); }
  void deallocate(void* p) noexcept { pool_.deallocate(p, block_size, block_alignment); }

private:
  std::unique_ptr<std::byte[]> storage_ =
      std::make_unique_for_overwrite<std::byte[]>(storage_bytes);
  fixed_pool pool_{storage_.get(), storage_bytes, block_size, block_alignment};
};

const bool registered = register_alloc_free<fixed_pool_policy>("FixedPool");

} // namespace
} // namespace memkit::bench
