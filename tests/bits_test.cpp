// SPDX-License-Identifier: BSL-1.0
// tests/bits_test.cpp: the bit scans of memkit/detail/base/bits.hpp, builtin and portable forms
// alike.
#include "memkit/detail/base/bits.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>

namespace {

using memkit::detail::floor_log2;
using memkit::detail::portable_floor_log2;
using memkit::detail::portable_trailing_zeros;
using memkit::detail::trailing_zeros;

TEST(Bits, FloorLog2IsTheHighestSetBitOnEveryPosition) {
  for (unsigned k = 0; k < 64; ++k) {
    const std::uint64_t p = std::uint64_t{1} << k;
    for (const std::uint64_t n : {p, p | (p - 1), p | 1}) {
      EXPECT_EQ(floor_log2(n), k) << n;
      EXPECT_EQ(portable_floor_log2(n), k) << n;
    }
  }
}

TEST(Bits, TrailingZerosIsTheLowestSetBitOnEveryPosition) {
  for (unsigned k = 0; k < 64; ++k) {
    const std::uint64_t p = std::uint64_t{1} << k;
    for (const std::uint64_t n : {p, p | (std::uint64_t{1} << 63), ~(p - 1)}) {
      EXPECT_EQ(trailing_zeros(n), k) << n;
      EXPECT_EQ(portable_trailing_zeros(n), k) << n;
    }
  }
}

TEST(Bits, PortableFormsAgreeWithTheBuiltinsOnRandomWords) {
  const std::uint32_t seed = 20261126;
  std::mt19937_64 random(seed);
  for (int i = 0; i < 100000; ++i) {
    const std::uint64_t n = random() >> (random() % 64) | 1;
    ASSERT_EQ(portable_floor_log2(n), floor_log2(n)) << n << " seed " << seed;
    const std::uint64_t m = n << (random() % 64);
    ASSERT_EQ(portable_trailing_zeros(m), trailing_zeros(m)) << m << " seed " << seed;
  }
}

static_assert(floor_log2(1) == 0 && floor_log2(~std::uint64_t{0}) == 63);
static_assert(portable_floor_log2(1) == 0 && portable_trailing_zeros(std::uint64_t{1} << 63) == 63);

} // namespace
