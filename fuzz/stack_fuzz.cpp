// SPDX-License-Identifier: BSL-1.0
// fuzz/stack_fuzz.cpp: memkit::stack over an upstream region or a caller buffer; LIFO frees only.
#include "driver.hpp"
#include "memkit/stack.hpp"

namespace {

struct target : memkit::fuzz::target_defaults {
  using resource = memkit::stack<memkit::fuzz::upstream>;
  static constexpr bool lifo = true;
  static constexpr bool forgets_on_reset = true;

  /// A request fails only when the space above the top cannot hold its header (two pointers, the
  /// class comment says), the block and the worst-case padding.
  static bool may_exhaust(const resource& r, std::size_t, std::size_t bytes,
                          std::size_t alignment) {
    const std::size_t need = 2 * sizeof(void*) + (bytes == 0 ? 1 : bytes);
    return r.remaining() < need || r.remaining() - need < alignment - 1;
  }

  static auto make(memkit::fuzz::byte_reader& in) {
    if (in.byte() % 2 == 0) {
      const std::size_t capacity = in.below((std::size_t{1} << 20) + 1);
      return memkit::fuzz::make_with_storage<resource>(
          memkit::fuzz::caller_storage(),
          [&](void*, std::size_t) { return resource(capacity, memkit::fuzz::upstream()); });
    }
    return memkit::fuzz::make_with_storage<resource>(
        memkit::fuzz::caller_storage(in, 64 * 1024),
        [](void* p, std::size_t n) { return resource(p, n); });
  }
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return memkit::fuzz::run<target>(data, size);
}
