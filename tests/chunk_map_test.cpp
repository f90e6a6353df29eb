// SPDX-License-Identifier: BSL-1.0
// tests/chunk_map_test.cpp: the address-to-chunk radix map of memkit/detail/chunk_map.hpp.
#include "memkit/detail/chunk_map.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include <sys/mman.h>

#include "support/spy_resource.hpp"

namespace {

constexpr unsigned shift = 16;
constexpr std::size_t window = std::size_t{1} << shift;

void* at(std::uintptr_t a) { return reinterpret_cast<void*>(a); }

TEST(ChunkMap, FindsTheBaseOfEveryWindowOfARangeAndNothingElse) {
  memkit::test::spy_resource spy;
  {
    memkit::detail::chunk_map<shift> map;
    EXPECT_EQ(map.find(at(0x12340000)), nullptr);
    const std::uintptr_t base = 0x7f1200000000;
    ASSERT_TRUE(map.insert(spy, at(base), 3 * window));
    EXPECT_EQ(map.find(at(base)), at(base));
    EXPECT_EQ(map.find(at(base + window + 5)), at(base));
    EXPECT_EQ(map.find(at(base + 3 * window - 1)), at(base));
    EXPECT_EQ(map.find(at(base + 3 * window)), nullptr);
    EXPECT_EQ(map.find(at(base - 1)), nullptr);
    EXPECT_EQ(map.find(at(std::uintptr_t{1} << 50)), nullptr) << "above 48 bits";
    EXPECT_FALSE(map.insert(spy, at(std::uintptr_t{1} << 50), window));
    map.erase(at(base), 3 * window);
    EXPECT_EQ(map.find(at(base + window)), nullptr);
    map.release(spy);
  }
  EXPECT_EQ(spy.blocks_in_use(), 0u);
  EXPECT_TRUE(spy.errors().empty());
}

TEST(ChunkMap, ARangeAcrossLeavesIsRecordedAndForgottenWindowByWindow) {
  memkit::test::spy_resource spy;
  {
    memkit::detail::chunk_map<shift> map;
    // 2,100 windows from 10 below a 2^26 boundary: the ends of three leaves (1,024 windows each
    // at this shift), and a neighbour on either side.
    const std::uintptr_t base = 0x7f1200000000 + (std::uintptr_t{1} << 26) - 10 * window;
    constexpr std::size_t windows = 2100;
    ASSERT_TRUE(map.insert(spy, at(base - window), window));
    ASSERT_TRUE(map.insert(spy, at(base), windows * window));
    ASSERT_TRUE(map.insert(spy, at(base + windows * window), window));
    for (std::size_t i = 0; i < windows; ++i) {
      ASSERT_EQ(map.find(at(base + i * window + i % window)), at(base)) << i;
    }
    map.erase(at(base), windows * window);
    for (std::size_t i = 0; i < windows; ++i) {
      ASSERT_EQ(map.find(at(base + i * window)), nullptr) << i;
    }
    EXPECT_EQ(map.find(at(base - 1)), at(base - window)) << "the neighbours stay";
    EXPECT_EQ(map.find(at(base + windows * window)), at(base + windows * window));
    // A range over leaves never made is forgotten without making them.
    const std::size_t nodes = spy.blocks_in_use();
    map.erase(at(std::uintptr_t{1} << 40), windows * window);
    EXPECT_EQ(spy.blocks_in_use(), nodes);
    map.release(spy);
  }
  EXPECT_EQ(spy.blocks_in_use(), 0u);
  EXPECT_TRUE(spy.errors().empty());
}

TEST(ChunkMap, AGrownRangeRecordsItsNewWindowsForItsBaseAndLeavesItsNeighbours) {
  memkit::test::spy_resource spy;
  {
    memkit::detail::chunk_map<shift> map;
    // A range of 2.5 windows grown to 1,500 windows, across a leaf boundary (1,024 windows a
    // leaf at this shift), with a neighbour right after it.
    const std::uintptr_t base = 0x7f1200000000 + (std::uintptr_t{1} << 26) - 3 * window;
    const std::size_t bytes = 2 * window + window / 2;
    const std::size_t grown = 1500 * window;
    ASSERT_TRUE(map.insert(spy, at(base), bytes));
    ASSERT_TRUE(map.insert(spy, at(base + grown), window));
    EXPECT_TRUE(map.extend(spy, at(base), bytes, bytes + 16)) << "within its last window";
    // reserve makes the nodes (a leaf here) and records nothing; extend then needs no node.
    const std::size_t nodes = spy.blocks_in_use();
    ASSERT_TRUE(map.reserve(spy, at(base), bytes, grown));
    EXPECT_EQ(spy.blocks_in_use(), nodes + 1);
    EXPECT_EQ(map.find(at(base + 3 * window)), nullptr);
    ASSERT_TRUE(map.extend(spy, at(base), bytes, grown));
    EXPECT_EQ(spy.blocks_in_use(), nodes + 1);
    for (std::size_t i = 0; i < 1500; ++i) {
      ASSERT_EQ(map.find(at(base + i * window + 7)), at(base)) << i;
    }
    EXPECT_EQ(map.find(at(base + grown)), at(base + grown)) << "the neighbour is its own";
    EXPECT_EQ(map.find(at(base - 1)), nullptr);
    map.erase(at(base), grown);
    EXPECT_EQ(map.find(at(base + grown - 1)), nullptr);
    EXPECT_EQ(map.find(at(base + grown)), at(base + grown));
    map.release(spy);
  }
  EXPECT_EQ(spy.blocks_in_use(), 0u);
  EXPECT_TRUE(spy.errors().empty());
}

TEST(ChunkMap, FailsCleanlyWhenNoNodeCanBeObtained) {
  memkit::test::spy_resource spy(1024);
  memkit::detail::chunk_map<shift> map;
  EXPECT_FALSE(map.insert(spy, at(0x10000), window));
  EXPECT_EQ(map.find(at(0x10000)), nullptr);
  map.release(spy);
  EXPECT_EQ(spy.blocks_in_use(), 0u);
}

/// An upstream whose blocks come each from a mapping of its own: fresh pages, zeros to read and
/// resident only once written. `Zeroed` says so (hands_out_zeroed); without it, the upstream
/// fills every block with 0xff first, as reused memory may hold anything.
template <bool Zeroed>
struct mapping_upstream {
  static constexpr bool hands_out_zeroed = Zeroed;
  std::vector<std::pair<void*, std::size_t>> blocks;
  void* try_allocate(std::size_t bytes, std::size_t) {
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      return nullptr;
    }
    if (!Zeroed) {
      std::memset(p, 0xff, bytes);
    }
    blocks.emplace_back(p, bytes);
    return p;
  }
  void deallocate(void* p, std::size_t bytes, std::size_t) {
    ::munmap(p, bytes);
    blocks.erase(std::find(blocks.begin(), blocks.end(), std::make_pair(p, bytes)));
  }
  /// \returns the resident pages of the block at `i`.
  std::size_t resident(std::size_t i) const {
    const auto [p, bytes] = blocks[i];
    std::vector<unsigned char> vec((bytes + 4095) / 4096);
    EXPECT_EQ(::mincore(p, bytes, vec.data()), 0);
    return static_cast<std::size_t>(
        std::count_if(vec.begin(), vec.end(), [](unsigned char v) { return (v & 1u) != 0; }));
  }
};

constexpr std::uintptr_t recorded = 0x7f1200000000;

/// Checks that of the windows near `recorded`, in `map`, it alone is found: not the other
/// windows of its leaf, nor those of another leaf of its mid node, nor of another mid node.
void expect_alone(const memkit::detail::chunk_map<shift>& map) {
  EXPECT_EQ(map.find(at(recorded)), at(recorded));
  for (const std::uintptr_t other : {recorded + window, recorded - window,
                                     recorded + (window << 12), recorded + (window << 24)}) {
    EXPECT_EQ(map.find(at(other)), nullptr);
  }
}

TEST(ChunkMap, NodesOfAnUpstreamThatDoesNotZeroAreZeroedBeforeTheyAreLinked) {
  mapping_upstream<false> up;
  memkit::detail::chunk_map<shift> map;
  ASSERT_TRUE(map.insert(up, at(recorded), window));
  expect_alone(map);
  map.release(up);
  EXPECT_TRUE(up.blocks.empty());
}

TEST(ChunkMap, NodesOfAnUpstreamThatHandsOutZeroedBecomeResidentOnlyWhereRecorded) {
  mapping_upstream<true> up;
  memkit::detail::chunk_map<shift> map;
  ASSERT_TRUE(map.insert(up, at(recorded), window));
  ASSERT_EQ(up.blocks.size(), 3u) << "a root, a mid node and a leaf";
  std::size_t pages = 0;
  for (std::size_t i = 0; i < up.blocks.size(); ++i) {
    EXPECT_EQ(up.resident(i), 1u) << "node " << i << ": the page of its one entry";
    pages += (up.blocks[i].second + 4095) / 4096;
  }
  EXPECT_GE(pages, 6u) << "the nodes span more pages than they touch";
  expect_alone(map); // (reading other pages maps the zero page, which mincore counts)
  map.release(up);
  EXPECT_TRUE(up.blocks.empty());
}

TEST(ChunkMap, ReadersSeeEntriesAppearWhileTheWriterAddsThem) {
  memkit::test::spy_resource spy;
  memkit::detail::chunk_map<shift> map;
  constexpr std::uintptr_t first = 0x500000000000;
  constexpr std::size_t count = 4096; // spans several leaves and mid nodes
  std::atomic<std::size_t> published{0};
  std::atomic<bool> wrong{false};
  std::thread reader([&] {
    while (published.load(std::memory_order_acquire) < count) {
      const std::size_t n = published.load(std::memory_order_acquire);
      for (std::size_t i = 0; i < n; i += 61) {
        const std::uintptr_t a = first + i * window * 1031;
        if (map.find(at(a + 100)) != at(a)) {
          wrong = true;
        }
      }
    }
  });
  for (std::size_t i = 0; i < count; ++i) {
    ASSERT_TRUE(map.insert(spy, at(first + i * window * 1031), window));
    published.store(i + 1, std::memory_order_release);
  }
  reader.join();
  EXPECT_FALSE(wrong.load());
  map.release(spy);
  EXPECT_EQ(spy.blocks_in_use(), 0u);
}

} // namespace
