// SPDX-License-Identifier: BSL-1.0
// fuzz/array_pool_fuzz.cpp: memkit::array_pool with fuzzed block size, alignment and capacity.
#include "driver.hpp"
#include "memkit/array_pool.hpp"

namespace {

struct target : memkit::fuzz::target_defaults {
  using resource = memkit::array_pool<memkit::fuzz::upstream>;
  static constexpr bool owns_interior = false; // owns(p) answers for block starts
  static constexpr bool forgets_on_reset = true;

  static bool may_exhaust(const resource& r, std::size_t live, std::size_t, std::size_t) {
    return live == r.capacity();
  }

  static auto make(memkit::fuzz::byte_reader& in) {
    const std::size_t block_size = in.below(513);
    const std::size_t capacity = in.below(2049);
    const std::size_t block_alignment = in.power_of_two(12);
    return std::make_unique<resource>(block_size, capacity, block_alignment);
  }
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return memkit::fuzz::run<target>(data, size);
}
