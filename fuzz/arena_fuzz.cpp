// SPDX-License-Identifier: BSL-1.0
// fuzz/arena_fuzz.cpp: memkit::arena over a fuzzed caller buffer, then fuzzed upstream growth.
#include "driver.hpp"
#include "memkit/arena.hpp"

namespace {

struct target : memkit::fuzz::target_defaults {
  using resource = memkit::arena<memkit::fuzz::upstream>;
  static constexpr bool forgets_on_reset = true;
  static constexpr bool poisons_on_deallocate = false; // only the newest block is reclaimed

  static auto make(memkit::fuzz::byte_reader& in) {
    memkit::fuzz::caller_storage buffer(in, 16 * 1024);
    memkit::arena_options o; // zero options are a constructor error, tested in arena_test
    o.first_block_size = 1 + in.below(65536);
    o.max_block_size = 1 + in.below(std::size_t{1} << 20);
    return memkit::fuzz::make_with_storage<resource>(
        std::move(buffer),
        [&](void* p, std::size_t n) { return resource(p, n, memkit::fuzz::upstream(), o); });
  }
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return memkit::fuzz::run<target>(data, size);
}
