// SPDX-License-Identifier: BSL-1.0
// tests/thread/chunk_test.cpp: chunk headers (memkit/detail/thread/chunk.hpp): where a header
// sits, and how any address in a chunk finds it.
#include "memkit/detail/thread/chunk.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <set>

namespace {

namespace thread = memkit::detail::thread;
using memkit::detail::address;

// Chunk bases are never dereferenced here: header_at, base_of and chunk_of only compute.
void* base(std::size_t k) {
  return reinterpret_cast<void*>(std::uintptr_t{0x7f0000000000} + k * thread::chunk_size);
}

TEST(Chunk, ConsecutiveChunksTakeEveryColourOnceInTheirFirstPage) {
  std::set<std::size_t> offsets;
  for (std::size_t k = 0; k < thread::colors; ++k) {
    const thread::chunk* c = thread::header_at(base(k));
    const std::size_t offset = address(c) - address(base(k));
    EXPECT_LE(offset + sizeof(thread::chunk), thread::header_room) << k;
    EXPECT_EQ(offset % sizeof(thread::chunk), 0u) << k;
    offsets.insert(offset);
    EXPECT_EQ(thread::base_of(c), base(k)) << k;
  }
  EXPECT_EQ(offsets.size(), thread::colors);
  // Colour 0 again: the header at the base.
  EXPECT_EQ(static_cast<void*>(thread::header_at(base(thread::colors))), base(thread::colors));
}

TEST(Chunk, EveryAddressOfAChunkFindsItsHeader) {
  for (std::size_t k = 0; k < 3; ++k) {
    char* const b = static_cast<char*>(base(k));
    for (const std::size_t at :
         {std::size_t{0}, thread::header_room, std::size_t{12345}, thread::chunk_size - 1}) {
      EXPECT_EQ(thread::chunk_of(b + at), thread::header_at(b)) << k << " " << at;
    }
    EXPECT_NE(thread::chunk_of(b + thread::chunk_size), thread::header_at(b));
  }
}

TEST(Chunk, TheEmptyChunkHasNothingToHandOut) {
  EXPECT_TRUE(thread::empty_chunk.free.empty());
  EXPECT_TRUE(thread::empty_chunk.fresh.exhausted());
  EXPECT_EQ(thread::empty_chunk.owner, nullptr);
}

TEST(Chunk, TheLargestClassFillsAChunkAtLeastEightTimes) {
  EXPECT_GE((thread::chunk_size - thread::header_room) / thread::max_class_size, 7u);
  EXPECT_EQ(thread::chunk_size / thread::max_class_size, 8u);
  thread::chunk large;
  large.cls = thread::large_class;
  EXPECT_TRUE(large.is_large());
  EXPECT_FALSE(thread::chunk{}.is_large());
}

} // namespace
