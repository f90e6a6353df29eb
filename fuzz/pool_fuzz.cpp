// SPDX-License-Identifier: BSL-1.0
// fuzz/pool_fuzz.cpp: memkit::pool with fuzzed block shape, reservation and growth steps.
#include "driver.hpp"
#include "memkit/pool.hpp"

namespace {

struct target : memkit::fuzz::target_defaults {
  using resource = memkit::pool<memkit::fuzz::upstream>;

  static auto make(memkit::fuzz::byte_reader& in) {
    memkit::pool_options o;
    o.block_size = in.below(2049);
    o.block_alignment = in.power_of_two(13); // above page_size too: the pool's slow path
    o.reserved_blocks = in.below(65);
    o.first_chunk_blocks = 1 + in.below(64); // zero is a constructor error (pool_test)
    o.max_chunk_blocks = 1 + in.below(256);
    return std::make_unique<resource>(o);
  }
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return memkit::fuzz::run<target>(data, size);
}
