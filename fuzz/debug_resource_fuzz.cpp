// SPDX-License-Identifier: BSL-1.0
// fuzz/debug_resource_fuzz.cpp: memkit::debug_resource over a pool; correct use reports nothing.
#include <algorithm>

#include "driver.hpp"
#include "memkit/debug_resource.hpp"
#include "memkit/pool.hpp"

namespace {

struct target : memkit::fuzz::target_defaults {
  using resource = memkit::debug_resource<memkit::pool<memkit::fuzz::upstream>>;
  static constexpr bool may_abandon = false; // live blocks at destruction are reported as leaks

  /// max_size() allows for the debug overhead at default alignment; a larger alignment needs more.
  static bool may_exhaust(const resource& r, std::size_t, std::size_t bytes,
                          std::size_t alignment) {
    const std::size_t total =
        memkit::debug_block_size(bytes, std::max(alignment, alignof(memkit::detail::debug_header)));
    return total == 0 || total > r.resource().block_size();
  }

  static auto make(memkit::fuzz::byte_reader& in) {
    memkit::pool_options o;
    o.block_alignment = in.power_of_two(13);
    o.block_size = memkit::debug_block_size(in.below(513), o.block_alignment);
    o.first_chunk_blocks = 1 + in.below(64); // zero is a constructor error (pool_test)
    // Reactions other than abort would let a report go unnoticed.
    return std::make_unique<resource>(memkit::debug_options{}, o);
  }
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return memkit::fuzz::run<target>(data, size);
}
