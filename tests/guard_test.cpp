// SPDX-License-Identifier: BSL-1.0
// tests/guard_test.cpp: the shared guard layout of memkit/detail/guard.hpp: every guard byte
// around a block, damaged in turn, is found at its offset from the caller's first byte, and the
// header's bytes are left to the header's own check.
#include "memkit/detail/guard.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <vector>

namespace {

namespace guard = memkit::detail::guard;

TEST(Guard, SizeIsRoundedToWholeWordsAndAtLeastOne) {
  EXPECT_EQ(guard::size_for(0, 8), 8u);
  EXPECT_EQ(guard::size_for(1, 8), 8u);
  EXPECT_EQ(guard::size_for(16, 8), 16u);
  EXPECT_EQ(guard::size_for(17, 8), 24u);
  EXPECT_EQ(guard::size_for(64, 16), 64u);
}

TEST(Guard, FirstBadByteNamesTheFirstByteThatIsNoGuardByte) {
  std::vector<char> bytes(40, static_cast<char>(guard::guard_byte));
  EXPECT_EQ(guard::first_bad_byte(bytes.data(), bytes.size()), 40u);
  bytes[17] = 0;
  bytes[30] = 0;
  EXPECT_EQ(guard::first_bad_byte(bytes.data(), bytes.size()), 17u);
  EXPECT_EQ(guard::first_bad_byte(bytes.data(), 17), 17u);
}

TEST(Guard, EveryDamagedGuardByteIsFoundAtItsOffsetAndTheHeaderIsNot) {
  // [guard 16][header 24][guard 24][caller's 5][guard 11]: the replacement's debug:1 shape.
  const guard::layout g{16, 24, 64, 11};
  constexpr std::size_t size = 5;
  std::vector<char> block(g.front + size + g.back, 'h');
  char* const base = block.data();
  g.paint_front(base);
  g.paint_back(base, size);
  EXPECT_EQ(g.first_bad_before(base), 0);
  EXPECT_EQ(g.first_bad_after(base, size), 0);
  for (std::size_t i = 0; i < block.size(); ++i) {
    const bool header = i >= g.header_at && i < g.header_at + g.header_size;
    const bool caller = i >= g.front && i < g.front + size;
    if (!header && !caller) {
      EXPECT_EQ(static_cast<unsigned char>(block[i]), guard::guard_byte) << i;
    }
    block[i] = static_cast<char>(~block[i]);
    const auto offset = static_cast<std::ptrdiff_t>(i) - static_cast<std::ptrdiff_t>(g.front);
    const bool in_front = !header && i < g.front;
    const bool in_back = i >= g.front + size;
    EXPECT_EQ(g.first_bad_before(base), in_front ? offset : 0) << i;
    EXPECT_EQ(g.first_bad_after(base, size), in_back ? offset : 0) << i;
    block[i] = static_cast<char>(~block[i]);
  }
}

TEST(Guard, TheFirstOfSeveralDamagedBytesIsNamed) {
  const guard::layout g{0, 32, 48, 16};
  std::vector<char> block(g.front + 1 + g.back, 'h');
  char* const base = block.data();
  g.paint_front(base);
  g.paint_back(base, 1);
  block[40] = 0;
  block[45] = 0;
  block[55] = 0;
  block[50] = 0;
  EXPECT_EQ(g.first_bad_before(base), -8);
  EXPECT_EQ(g.first_bad_after(base, 1), 2);
}

} // namespace
