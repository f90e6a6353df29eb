// SPDX-License-Identifier: BSL-1.0
// fuzz/fallback_fuzz.cpp: memkit::fallback of a fixed_pool over caller storage and a multipool.
#include <tuple>

#include "driver.hpp"
#include "memkit/fallback.hpp"
#include "memkit/fixed_pool.hpp"
#include "memkit/multipool.hpp"

namespace {

struct target : memkit::fuzz::target_defaults {
  using resource = memkit::fallback<memkit::fixed_pool, memkit::multipool<memkit::fuzz::upstream>>;
  static constexpr bool owns_interior = false; // the fixed_pool's owns(p) answers for block starts

  static auto make(memkit::fuzz::byte_reader& in) {
    memkit::fuzz::caller_storage storage(in, 8 * 1024);
    const std::size_t block_size = in.below(513);
    const std::size_t block_alignment = in.power_of_two(12);
    return memkit::fuzz::make_with_storage<resource>(
        std::move(storage), [&](void* p, std::size_t n) {
          return resource(std::piecewise_construct,
                          std::forward_as_tuple(p, n, block_size, block_alignment),
                          std::forward_as_tuple());
        });
  }
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return memkit::fuzz::run<target>(data, size);
}
