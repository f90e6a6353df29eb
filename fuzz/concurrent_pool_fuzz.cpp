// SPDX-License-Identifier: BSL-1.0
// fuzz/concurrent_pool_fuzz.cpp: memkit::concurrent_pool with fuzzed block shape and chunk size, on
// one thread: the model checks every result, and MEMKIT_DEBUG=3 the stack's invariants (every
// popped handle within the chunks obtained, the free stack acyclic at release).
#include "driver.hpp"
#include "memkit/concurrent_pool.hpp"

namespace {

struct target : memkit::fuzz::target_defaults {
  using resource = memkit::concurrent_pool<memkit::fuzz::upstream>;

  static std::unique_ptr<resource> make(memkit::fuzz::byte_reader& in) {
    memkit::concurrent_pool_options o;
    o.block_size = in.below(2049);
    o.block_alignment = in.power_of_two(12);
    // 4 KiB to 1 MiB (the fuzzing upstream serves alignments up to 1 MiB, and chunks are
    // aligned to their size), rounded up by the pool to hold 16 blocks.
    o.chunk_size = std::size_t{1} << (12 + in.below(9));
    return std::make_unique<resource>(o);
  }
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return memkit::fuzz::run<target>(data, size);
}
