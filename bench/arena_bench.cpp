// SPDX-License-Identifier: BSL-1.0
// bench/arena_bench.cpp: memkit::arena against std::pmr::monotonic_buffer_resource (Alloc pattern).

#include <memkit/arena.hpp>

#include <memory>

#include "patterns.hpp"

namespace memkit::bench {
namespace {

/// Set up exactly as the PmrMonotonic baseline in peers_bench.cpp: an initial heap buffer that
/// holds a whole round, reset() rewinding to it, and an upstream that fails (null_resource) so no
/// round can quietly reach for the heap. Both then do nothing but bump and rewind.
class arena_policy {
public:
  void* allocate() { return arena_.allocate(block_size, block_alignment); }
  void reset(std::span<void*>) noexcept { arena_.reset(); }

private:
  static constexpr std::size_t buffer_size = live_blocks * block_size;
  std::unique_ptr<std::byte[]> buffer_ = std::make_unique_for_overwrite<std::byte[]>(buffer_size);
  arena<null_resource> arena_{buffer_.get(), buffer_size};
};

const bool registered = register_alloc<arena_policy>("Arena");

} // namespace
} // namespace memkit::bench
