// fuzz/multipool_fuzz.cpp: memkit::multipool in heap mode or static mode, with fuzzed options.
#include "driver.hpp"
#include "memkit/multipool.hpp"

namespace {

struct target : memkit::fuzz::target_defaults {
  using resource = memkit::multipool<memkit::fuzz::upstream>;

  /// Static mode (where max_size() is the largest class) runs out of buffer at a point that
  /// depends on how its classes carved it; heap mode fails only when the upstream refuses.
  static bool may_exhaust(const resource& r, std::size_t, std::size_t, std::size_t) {
    return r.max_size() == r.max_class_size();
  }

  static auto make(memkit::fuzz::byte_reader& in) {
    const bool heap = in.byte() % 2 == 0;
    memkit::multipool_options o;
    o.max_class_size = in.below(65537);
    o.chunk_size = in.below((std::size_t{1} << 17) + 1);
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
