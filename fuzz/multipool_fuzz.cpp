// SPDX-License-Identifier: BSL-1.0
// fuzz/multipool_fuzz.cpp: memkit::multipool in heap mode or static mode, with fuzzed options.
#include "driver.hpp"
#include "memkit/multipool.hpp"

#include <algorithm>

namespace {

struct target : memkit::fuzz::target_defaults {
  using resource = memkit::multipool<memkit::fuzz::upstream>;

  /// Heap mode fails a valid request only when the upstream refuses. Static mode (where max_size()
  /// is the largest class) is exhausted for a request only when its class has no free block and
  /// the rest of the buffer cannot hold one more block of the class at the class's chunk alignment:
  /// any other failure of a valid request (one the pool cannot serve at that alignment, say) is a
  /// defect, not exhaustion.
  static bool may_exhaust(const resource& r, std::size_t, std::size_t bytes,
                          std::size_t alignment) {
    namespace d = memkit::detail;
    if (r.max_size() != r.max_class_size()) {
      return false;
    }
    std::size_t n = bytes == 0 ? 1 : bytes;
    if (alignment > d::class_granularity) {
      n = d::round_up(n, alignment);
    }
    const std::size_t size = d::class_size(d::class_index(n));
    return r.remaining() < size + std::min(d::lowest_bit(size), memkit::page_size);
  }

  static auto make(memkit::fuzz::byte_reader& in) {
    const bool heap = in.byte() % 2 == 0;
    memkit::multipool_options o; // zero options are a constructor error, tested in multipool_test
    o.max_class_size = 1 + in.below(65536);
    o.chunk_size = 1 + in.below(std::size_t{1} << 17);
    if (heap) {
      return memkit::fuzz::make_with_storage<resource>(
          memkit::fuzz::caller_storage(),
          [&](void*, std::size_t) { return resource(memkit::fuzz::upstream(), o); });
    }
    return memkit::fuzz::make_with_storage<resource>(
        memkit::fuzz::caller_storage(in, 256 * 1024),
        [&](void* p, std::size_t n) { return resource(p, n, o); });
  }
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return memkit::fuzz::run<target>(data, size);
}
