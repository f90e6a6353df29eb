// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/workloads/realloc_growth.cpp: buffers grown by realloc, a few bytes at a
// time, as a string builder or a log line that reallocates to the exact new length on every
// append does. What it costs depends on whether the allocator can grow a block where it lies
// (size-class slack, a free neighbour, mremap for mapped blocks) or must move it, copying
// everything so far: quadratic in the final size at worst. realloc is the C library's, so the
// workload runs as std (glibc) and under each preloaded replacement only; memkit's strategies
// have no realloc to compare. docs/workloads.md#realloc-growth.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "core/hash.hpp"
#include "memkit_bench/random.hpp"
#include "workloads/workloads.hpp"

namespace memkit::bench {
namespace {

/// Buffers growing at once, interleaved, so a block's neighbour is usually another live buffer.
constexpr std::size_t buffers = 32;
/// Appends of 8-64 bytes; final lengths log-uniform from 64 bytes to 64 KiB.
constexpr int min_append_words = 1;
constexpr int max_append_words = 8;
constexpr int min_log2_length = 6;
constexpr int max_log2_length = 16;

struct buffer {
  void* p = nullptr;
  std::size_t length = 0;
  std::size_t final_length = 0;
};

std::size_t draw_final_length(rng& g) {
  const double log2 = min_log2_length + (max_log2_length - min_log2_length) *
                                            static_cast<double>(g.next() >> 11) * 0x1p-53;
  return static_cast<std::size_t>(std::exp2(log2));
}

/// `appends` times: a random buffer grows by 8-64 bytes through realloc to exactly its new
/// length, and the new bytes are written with the append's number. A buffer that reached its
/// final length has its whole contents hashed (realloc must have kept every byte), is freed, and
/// starts again empty with a new final length.
auto growth(std::size_t appends) {
  return [appends](std_policy&, std::string&) {
    std::vector<buffer> live(buffers);
    rng g(0x4ea110c);
    for (buffer& b : live) {
      b.final_length = draw_final_length(g);
    }
    word_hash h;
    auto finish = [&h](buffer& b) {
      h.add(b.p, b.length);
      std::free(b.p);
      b.p = nullptr;
      b.length = 0;
    };
    for (std::size_t i = 0; i < appends; ++i) {
      buffer& b = live[g.next() % buffers];
      const auto words = static_cast<std::size_t>(g.between(min_append_words, max_append_words));
      const std::size_t grown = b.length + words * sizeof(std::uint64_t);
      void* p = std::realloc(b.p, grown);
      if (p == nullptr) {
        throw std::bad_alloc();
      }
      b.p = p;
      auto* end = static_cast<unsigned char*>(p) + b.length;
      for (std::size_t k = 0; k < words; ++k) {
        const std::uint64_t v = i * 8 + k;
        std::memcpy(end + k * sizeof v, &v, sizeof v);
      }
      b.length = grown;
      if (b.length >= b.final_length) {
        finish(b);
        b.final_length = draw_final_length(g);
      }
    }
    for (buffer& b : live) {
      if (b.p != nullptr) {
        finish(b);
      }
    }
    return h.value();
  };
}

} // namespace

void add_realloc_growth(registry& r, const params& p) {
  const std::size_t appends = p.scaled(100'000);
  const workload& w = r.add_workload(
      {"realloc-growth", "appends", static_cast<double>(appends), 10,
       std::to_string(buffers) + " buffers growing at once by " + std::to_string(appends) +
           " appends of 8-64 bytes, each a realloc to the exact new length, to final lengths "
           "of 64 B-64 KiB (log-uniform); then freed and started again"});
  r.add<std_policy>(w, {}, growth(appends));
}

} // namespace memkit::bench
