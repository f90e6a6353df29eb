// SPDX-License-Identifier: BSL-1.0
// fuzz/aligned_fuzz.cpp: memkit::aligned (cache-line decorator) over the fuzz upstream.
#include "driver.hpp"
#include "memkit/aligned.hpp"

namespace {

struct target : memkit::fuzz::target_defaults {
  using resource = memkit::aligned<memkit::fuzz::upstream>;
  static constexpr bool may_abandon = false; // stateless: live blocks stay with the upstream

  static auto make(memkit::fuzz::byte_reader&) { return std::make_unique<resource>(); }
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return memkit::fuzz::run<target>(data, size);
}
