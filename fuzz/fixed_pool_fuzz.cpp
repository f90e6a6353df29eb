// SPDX-License-Identifier: BSL-1.0
// fuzz/fixed_pool_fuzz.cpp: memkit::fixed_pool over caller storage of fuzzed size and offset.
#include "driver.hpp"
#include "memkit/fixed_pool.hpp"

namespace {

struct target : memkit::fuzz::target_defaults {
  using resource = memkit::fixed_pool;
  static constexpr bool owns_interior = false; // owns(p) answers for block starts
  static constexpr bool forgets_on_reset = true;

  static bool may_exhaust(const resource& r, std::size_t live, std::size_t, std::size_t) {
    return live == r.capacity();
  }

  static auto make(memkit::fuzz::byte_reader& in) {
    memkit::fuzz::caller_storage storage(in, 16 * 1024);
    const std::size_t block_size = in.below(1025);
    const std::size_t block_alignment = in.power_of_two(12);
    return memkit::fuzz::make_with_storage<resource>(
        std::move(storage),
        [&](void* p, std::size_t n) { return resource(p, n, block_size, block_alignment); });
  }
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return memkit::fuzz::run<target>(data, size);
}
