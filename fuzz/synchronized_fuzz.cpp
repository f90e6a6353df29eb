// SPDX-License-Identifier: BSL-1.0
// fuzz/synchronized_fuzz.cpp: memkit::synchronized over a pool (owns, in_use) or an arena
// (markers, reset, release), chosen by the first byte: every forwarded member against the model.
#include <mutex>

#include "driver.hpp"
#include "memkit/arena.hpp"
#include "memkit/pool.hpp"
#include "memkit/synchronized.hpp"

namespace {

struct over_pool : memkit::fuzz::target_defaults {
  using resource = memkit::synchronized<memkit::pool<memkit::fuzz::upstream>>;

  static auto make(memkit::fuzz::byte_reader& in) {
    memkit::pool_options o;
    o.block_size = in.below(1025);
    o.block_alignment = in.power_of_two(12);
    o.first_chunk_blocks = 1 + in.below(64); // zero is a constructor error (pool_test)
    return std::make_unique<resource>(o);
  }
};

struct over_arena : memkit::fuzz::target_defaults {
  using resource =
      memkit::synchronized<memkit::arena<memkit::fuzz::upstream>, std::recursive_mutex>;
  static constexpr bool forgets_on_reset = true;
  static constexpr bool poisons_on_deallocate = false; // only the newest block is reclaimed

  static auto make(memkit::fuzz::byte_reader& in) {
    memkit::arena_options o;
    o.first_block_size = 1 + in.below(65536); // zero is a constructor error
    o.max_block_size = 1 + in.below(std::size_t{1} << 20);
    return std::make_unique<resource>(memkit::fuzz::upstream(), o);
  }
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) {
    return 0;
  }
  return data[0] % 2 == 0 ? memkit::fuzz::run<over_pool>(data + 1, size - 1)
                          : memkit::fuzz::run<over_arena>(data + 1, size - 1);
}
