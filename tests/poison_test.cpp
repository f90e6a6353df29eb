// SPDX-License-Identifier: BSL-1.0
#include "memkit/detail/base/poison.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <gtest/gtest.h>
#include <string>
#include <vector>

#include "memkit/arena.hpp"
#include "memkit/array_pool.hpp"
#include "memkit/fixed_pool.hpp"
#include "memkit/multipool.hpp"
#include "memkit/node_pool.hpp"
#include "memkit/pool.hpp"
#include "memkit/stack.hpp"
#include "support/spy_resource.hpp"

namespace {

using memkit::test::spy_resource;
using spy_ref = memkit::resource_ref<spy_resource>;

struct alignas(64) aligned_buffer {
  unsigned char bytes[4096];
};

// Fills each block with its own pattern, then checks them all: the hooks must never disturb the
// bytes of a live block (a link written or a region poisoned in the wrong place would).
template <class Blocks>
void fill_all(const Blocks& blocks, std::size_t n) {
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    std::memset(blocks[i], static_cast<int>(i % 251 + 1), n);
  }
}

template <class Blocks>
bool all_hold(const Blocks& blocks, std::size_t n) {
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    const auto* b = static_cast<const unsigned char*>(blocks[i]);
    for (std::size_t k = 0; k < n; ++k) {
      if (b[k] != i % 251 + 1) {
        return false;
      }
    }
  }
  return true;
}

// Allocates `count` blocks of `n` bytes, frees every other one, allocates them again and checks
// every live block kept its contents through the free-list traffic.
template <class R>
void round_trip(R& r, std::size_t count, std::size_t n, std::size_t alignment) {
  std::vector<void*> blocks;
  for (std::size_t i = 0; i < count; ++i) {
    blocks.push_back(r.allocate(n, alignment));
  }
  fill_all(blocks, n);
  for (std::size_t i = 0; i < count; i += 2) {
    r.deallocate(blocks[i], n, alignment);
  }
  for (std::size_t i = 0; i < count; i += 2) {
    blocks[i] = r.allocate(n, alignment);
    std::memset(blocks[i], static_cast<int>(i % 251 + 1), n);
  }
  EXPECT_TRUE(all_hold(blocks, n));
  for (std::size_t i = count; i-- > 0;) {
    r.deallocate(blocks[i], n, alignment);
  }
}

TEST(Poison, HiddenWordsRoundTripAndLeaveTheRestOfTheBlockAlone) {
  alignas(16) unsigned char block[32];
  std::memset(block, 0x5A, sizeof block);
  void* const link = &block[8];
  memkit::detail::store_hidden(block, link, 16);
  EXPECT_EQ(memkit::detail::load_hidden<void*>(block), link);
  memkit::detail::unpoison_kept(block, 16);
  for (std::size_t k = 8; k < sizeof block; ++k) {
    ASSERT_EQ(block[k], 0x5A) << k;
  }
}

TEST(Poison, FreeListStrategiesKeepLiveBlocksIntactThroughFreesAndReuse) {
  aligned_buffer buf;
  memkit::fixed_pool fixed(buf.bytes, sizeof buf.bytes, 24, 8);
  round_trip(fixed, 100, 24, 8);
  memkit::pool<> pool(24, 8);
  round_trip(pool, 300, 24, 8);
  memkit::array_pool<> array(3, 300, 1);
  round_trip(array, 300, 3, 1);
  memkit::multipool<> multi;
  round_trip(multi, 300, 40, 8);
  memkit::node_pool<> nodes;
  round_trip(nodes, 300, 24, 8);
  memkit::stack<> stack(1 << 16);
  std::vector<void*> blocks;
  for (std::size_t i = 0; i < 100; ++i) {
    blocks.push_back(stack.allocate(5 + i % 7, 1));
  }
  fill_all(blocks, 5);
  EXPECT_TRUE(all_hold(blocks, 5));
  for (std::size_t i = blocks.size(); i-- > 0;) {
    stack.deallocate(blocks[i], 5 + i % 7, 1);
  }
}

TEST(Poison, BumpStrategiesKeepLiveBlocksIntactThroughRollbackAndReset) {
  aligned_buffer buf;
  memkit::arena<> arena(buf.bytes, 256);
  std::vector<void*> kept;
  for (int i = 0; i < 10; ++i) {
    kept.push_back(arena.allocate(7, 1));
  }
  fill_all(kept, 7);
  const auto mark = arena.marker();
  for (int i = 0; i < 100; ++i) {
    std::memset(arena.allocate(13, 1), 0xEE, 13);
  }
  arena.rollback(mark);
  EXPECT_TRUE(all_hold(kept, 7));
  arena.reset();
  void* again = arena.allocate(64, 1);
  std::memset(again, 1, 64);
  memkit::stack<> stack(4096);
  void* bottom = stack.allocate(9, 1);
  std::memset(bottom, 0x42, 9);
  const auto top = stack.marker();
  std::memset(stack.allocate(100, 1), 0xEE, 100);
  stack.rollback(top);
  EXPECT_EQ(static_cast<unsigned char*>(bottom)[8], 0x42);
  stack.deallocate(bottom, 9, 1);
}

#if defined(MEMKIT_ASAN)

bool poisoned(const void* p) { return __asan_address_is_poisoned(p) != 0; }

// Every byte of [p, p + n) is addressable.
bool usable(const void* p, std::size_t n) {
  return __asan_region_is_poisoned(const_cast<void*>(p), n) == nullptr;
}

// Every byte of [p, p + n) is poisoned.
bool all_poisoned(const void* p, std::size_t n) {
  for (std::size_t k = 0; k < n; ++k) {
    if (!poisoned(static_cast<const char*>(p) + k)) {
      return false;
    }
  }
  return true;
}

// What a buggy program does; volatile so the access is not optimised away.
void read_byte(const void* p) { (void)*static_cast<const volatile unsigned char*>(p); }
void write_byte(void* p) { *static_cast<volatile unsigned char*>(p) = 0; }

// An upstream that counts chunks given back with any byte still poisoned: a strategy must hand
// its chunks back exactly as it got them (malloc or another strategy would trip over them).
class poison_checking_upstream {
public:
  explicit poison_checking_upstream(spy_resource& spy, int& poisoned_returns) noexcept
      : spy_(&spy), poisoned_returns_(&poisoned_returns) {}
  const char* name() const noexcept { return "poison_checking_upstream"; }
  std::size_t max_size() const noexcept { return spy_->max_size(); }
  std::size_t max_alignment() const noexcept { return spy_->max_alignment(); }
  void* allocate(std::size_t bytes, std::size_t alignment = memkit::default_alignment) {
    return memkit::detail::allocate_or_throw(*this, bytes, alignment);
  }
  void* try_allocate(std::size_t bytes,
                     std::size_t alignment = memkit::default_alignment) noexcept {
    return spy_->try_allocate(bytes, alignment);
  }
  void deallocate(void* p, std::size_t bytes,
                  std::size_t alignment = memkit::default_alignment) noexcept {
    *poisoned_returns_ += usable(p, bytes) ? 0 : 1;
    spy_->deallocate(p, bytes, alignment);
  }

private:
  spy_resource* spy_;
  int* poisoned_returns_;
};

// Runs `body` with an upstream that counts chunks returned poisoned, then checks there were none
// and that every chunk came back.
template <class Body>
void expect_chunks_return_unpoisoned(Body body) {
  spy_resource spy;
  int poisoned_returns = 0;
  body(poison_checking_upstream(spy, poisoned_returns));
  EXPECT_EQ(poisoned_returns, 0);
  EXPECT_EQ(spy.blocks_in_use(), 0u);
  EXPECT_TRUE(spy.errors().empty());
}

// ---- fixed_pool, inline_fixed_pool ----

TEST(PoisonFixedPool, HandsOutExactlyTheRequestedBytesAndPoisonsTheRest) {
  aligned_buffer buf;
  {
    memkit::fixed_pool pool(buf.bytes, 32 * 4, 32, 8);
    EXPECT_TRUE(all_poisoned(buf.bytes, 32 * 4)); // nothing carved yet
    auto* p = static_cast<unsigned char*>(pool.allocate(20, 8));
    EXPECT_TRUE(usable(p, 20));
    EXPECT_TRUE(all_poisoned(p + 20, 12)); // byte-exact: blocks are multiples of 8
    pool.deallocate(p, 20, 8);
    EXPECT_TRUE(all_poisoned(p, 32)); // the link word included
    p = static_cast<unsigned char*>(pool.allocate(32, 8));
    EXPECT_TRUE(usable(p, 32));
    pool.reset();
    EXPECT_TRUE(all_poisoned(buf.bytes, 32 * 4));
  }
  EXPECT_TRUE(usable(buf.bytes, sizeof buf.bytes)); // the caller's storage comes back clean
}

TEST(PoisonFixedPool, ReportsAReadAfterFree) {
  aligned_buffer buf;
  memkit::fixed_pool pool(buf.bytes, sizeof buf.bytes, 32, 8);
  void* p = pool.allocate(32, 8);
  pool.deallocate(p, 32, 8);
  EXPECT_DEATH(read_byte(p), "use-after-poison");
}

TEST(PoisonFixedPool, ReportsAWriteOnePastTheRequestedSize) {
  aligned_buffer buf;
  memkit::fixed_pool pool(buf.bytes, sizeof buf.bytes, 32, 8);
  auto* p = static_cast<unsigned char*>(pool.allocate(20, 8));
  write_byte(p + 19);
  EXPECT_DEATH(write_byte(p + 20), "use-after-poison");
  pool.deallocate(p, 20, 8);
}

TEST(PoisonFixedPool, ReportsAReadAfterReset) {
  aligned_buffer buf;
  memkit::fixed_pool pool(buf.bytes, sizeof buf.bytes, 32, 8);
  void* p = pool.allocate(32, 8);
  pool.reset();
  EXPECT_DEATH(read_byte(p), "use-after-poison");
}

TEST(PoisonFixedPool, InlinePoolPoisonsFreeBlocksAndIsCleanAfterDestruction) {
  alignas(
      memkit::inline_fixed_pool<16, 4>) unsigned char raw[sizeof(memkit::inline_fixed_pool<16, 4>)];
  auto* pool = ::new (raw) memkit::inline_fixed_pool<16, 4>;
  void* p = pool->allocate(16, 8);
  void* q = pool->allocate(16, 8);
  EXPECT_TRUE(usable(p, 16));
  pool->deallocate(p, 16, 8);
  EXPECT_TRUE(all_poisoned(p, 16));
  EXPECT_DEATH(read_byte(p), "use-after-poison");
  EXPECT_TRUE(usable(q, 16));
  pool->~inline_fixed_pool();
  EXPECT_TRUE(usable(raw, sizeof raw));
}

// ---- pool ----

TEST(PoisonPool, HandsOutExactlyTheRequestedBytesAndPoisonsTheRest) {
  memkit::pool<> pool(32, 8);
  auto* p = static_cast<unsigned char*>(pool.allocate(13, 8));
  EXPECT_TRUE(usable(p, 13));
  EXPECT_TRUE(all_poisoned(p + 13, 19)); // byte-exact inside the block
  EXPECT_TRUE(all_poisoned(p + 32, 32)); // the next block, not carved yet
  auto* q = static_cast<unsigned char*>(pool.allocate(32, 8));
  pool.deallocate(p, 13, 8);
  EXPECT_TRUE(all_poisoned(p, 32));
  EXPECT_TRUE(usable(q, 32));
  EXPECT_EQ(pool.in_use(), 1u); // walking the free list reads poisoned links safely
  pool.deallocate(q, 32, 8);
}

TEST(PoisonPool, ReportsAReadAfterFree) {
  memkit::pool<> pool(32, 8);
  void* p = pool.allocate(32, 8);
  pool.deallocate(p, 32, 8);
  EXPECT_DEATH(read_byte(p), "use-after-poison");
}

TEST(PoisonPool, ReportsAWriteOnePastTheRequestedSize) {
  memkit::pool<> pool(32, 8);
  auto* p = static_cast<unsigned char*>(pool.allocate(9, 8));
  write_byte(p + 8);
  EXPECT_DEATH(write_byte(p + 9), "use-after-poison");
  pool.deallocate(p, 9, 8);
}

TEST(PoisonPool, ReportsAReadAfterReset) {
  memkit::pool<> pool(32, 8);
  void* p = pool.allocate(32, 8);
  pool.reset();
  EXPECT_DEATH(read_byte(p), "use-after-poison");
}

TEST(PoisonPool, ReturnsEveryChunkUnpoisonedAndServesAgainAfterRelease) {
  expect_chunks_return_unpoisoned([](poison_checking_upstream upstream) {
    memkit::pool<poison_checking_upstream> pool(memkit::pool_options{24, 8, 0, 4, 16}, upstream);
    std::vector<void*> blocks;
    for (int i = 0; i < 40; ++i) {
      blocks.push_back(pool.allocate(24, 8));
    }
    pool.deallocate(blocks[3], 24, 8);
    pool.release();
    void* p = pool.allocate(24, 8);
    EXPECT_TRUE(usable(p, 24));
    pool.deallocate(p, 24, 8);
  });
}

// ---- array_pool ----

TEST(PoisonArrayPool, HandsOutExactlyTheRequestedBytesOfBlocksOfEightBytesOrMore) {
  memkit::array_pool<> pool(16, 8, 8);
  auto* p = static_cast<unsigned char*>(pool.allocate(11, 8));
  auto* q = static_cast<unsigned char*>(pool.allocate(16, 8));
  EXPECT_TRUE(usable(p, 11));
  EXPECT_TRUE(all_poisoned(p + 11, 5));
  EXPECT_TRUE(usable(q, 16));
  EXPECT_TRUE(all_poisoned(q + 16, 16 * 6)); // never carved
  pool.deallocate(p, 11, 8);
  EXPECT_TRUE(all_poisoned(p, 16));
  pool.deallocate(q, 16, 8);
}

TEST(PoisonArrayPool, ReportsAReadAfterFree) {
  memkit::array_pool<> pool(16, 8, 8);
  void* p = pool.allocate(16, 8);
  pool.deallocate(p, 16, 8);
  EXPECT_DEATH(read_byte(p), "use-after-poison");
}

TEST(PoisonArrayPool, ReportsAWriteOnePastTheRequestedSize) {
  memkit::array_pool<> pool(16, 8, 8);
  auto* p = static_cast<unsigned char*>(pool.allocate(10, 8));
  write_byte(p + 9);
  EXPECT_DEATH(write_byte(p + 10), "use-after-poison");
  pool.deallocate(p, 10, 8);
}

TEST(PoisonArrayPool, ReportsAReadAfterReset) {
  memkit::array_pool<> pool(16, 8, 8);
  void* p = pool.allocate(16, 8);
  pool.reset();
  EXPECT_DEATH(read_byte(p), "use-after-poison");
}

TEST(PoisonArrayPool, BlocksSmallerThanEightBytesArePoisonedOnceTheirGranuleIsFree) {
  memkit::array_pool<> pool(2, 8, 2); // four blocks to an 8-byte ASan granule
  std::vector<unsigned char*> blocks;
  for (int i = 0; i < 4; ++i) {
    blocks.push_back(static_cast<unsigned char*>(pool.allocate(2, 2)));
  }
  pool.deallocate(blocks[3], 2, 2);
  EXPECT_TRUE(all_poisoned(blocks[3], 2)); // the end of the granule's addressable part
  pool.deallocate(blocks[1], 2, 2);
  EXPECT_FALSE(poisoned(blocks[1])); // between live blocks: ASan cannot mark it
  EXPECT_TRUE(usable(blocks[2], 2));
  pool.deallocate(blocks[2], 2, 2);
  EXPECT_TRUE(all_poisoned(blocks[2], 2));
  pool.deallocate(blocks[0], 2, 2);
}

TEST(PoisonArrayPool, ReturnsItsArraysUnpoisonedOnRelease) {
  expect_chunks_return_unpoisoned([](poison_checking_upstream upstream) {
    memkit::array_pool<poison_checking_upstream> pool(8, 16, 8, upstream);
    void* p = pool.allocate(8, 8);
    (void)pool.allocate(3, 8);
    pool.deallocate(p, 8, 8);
    pool.release();
    p = pool.allocate(8, 8);
    EXPECT_TRUE(usable(p, 8));
  });
}

// ---- arena ----

TEST(PoisonArena, HandsOutExactlyTheRequestedBytesAndPoisonsWhatIsNotHandedOut) {
  aligned_buffer buf;
  {
    memkit::arena<> arena(buf.bytes, 256);
    EXPECT_TRUE(all_poisoned(buf.bytes, 256));
    auto* p = static_cast<unsigned char*>(arena.allocate(5, 8));
    EXPECT_TRUE(usable(p, 5));
    EXPECT_TRUE(all_poisoned(p + 5, 3)); // byte-exact at the top
    auto* q = static_cast<unsigned char*>(arena.allocate(3, 1));
    EXPECT_EQ(q, p + 5);
    EXPECT_TRUE(usable(q, 3));
    arena.deallocate(q, 3, 1); // the most recent block is reclaimed
    EXPECT_TRUE(all_poisoned(q, 3));
    EXPECT_TRUE(usable(p, 5));
  }
  EXPECT_TRUE(usable(buf.bytes, sizeof buf.bytes)); // the caller's buffer comes back clean
}

TEST(PoisonArena, ReportsAWriteOnePastTheTopBlock) {
  memkit::arena<> arena;
  auto* p = static_cast<unsigned char*>(arena.allocate(5, 8));
  write_byte(p + 4);
  EXPECT_DEATH(write_byte(p + 5), "use-after-poison");
}

TEST(PoisonArena, ReportsAReadAfterTheMostRecentBlockIsFreed) {
  memkit::arena<> arena;
  void* p = arena.allocate(16, 8);
  arena.deallocate(p, 16, 8);
  EXPECT_DEATH(read_byte(p), "use-after-poison");
}

TEST(PoisonArena, ReportsAReadBehindARollback) {
  memkit::arena<> arena(nullptr, 0, {}, memkit::arena_options{256, 256});
  void* kept = arena.allocate(8, 8);
  const auto mark = arena.marker();
  void* same_block = arena.allocate(24, 8);
  void* next_block = arena.allocate(200, 8); // does not fit: a second upstream block
  arena.rollback(mark);
  EXPECT_TRUE(usable(kept, 8));
  EXPECT_TRUE(all_poisoned(same_block, 24));
  EXPECT_TRUE(all_poisoned(next_block, 200));
  EXPECT_DEATH(read_byte(same_block), "use-after-poison");
  EXPECT_DEATH(read_byte(next_block), "use-after-poison");
}

TEST(PoisonArena, ReportsAReadAfterReset) {
  aligned_buffer buf;
  memkit::arena<> arena(buf.bytes, 64);
  void* in_buffer = arena.allocate(32, 8);
  void* upstream = arena.allocate(64, 8);
  arena.reset();
  EXPECT_TRUE(all_poisoned(in_buffer, 32));
  EXPECT_TRUE(all_poisoned(upstream, 64));
  EXPECT_DEATH(read_byte(in_buffer), "use-after-poison");
  EXPECT_DEATH(read_byte(upstream), "use-after-poison");
}

TEST(PoisonArena, ReturnsEveryBlockUnpoisonedAndServesAgainAfterRelease) {
  expect_chunks_return_unpoisoned([](poison_checking_upstream upstream) {
    memkit::arena<poison_checking_upstream> arena(upstream);
    for (int i = 0; i < 100; ++i) {
      (void)arena.allocate(100, 8);
    }
    const auto mark = arena.marker();
    (void)arena.allocate(5000, 8);
    arena.rollback(mark); // a block goes to the cache, poisoned
    arena.release();
    void* p = arena.allocate(64, 8);
    EXPECT_TRUE(usable(p, 64));
  });
}

// ---- stack ----

TEST(PoisonStack, HandsOutExactlyTheRequestedBytesAndKeepsHeadersPoisoned) {
  aligned_buffer buf;
  {
    memkit::stack<> stack(buf.bytes, 512);
    auto* p = static_cast<unsigned char*>(stack.allocate(12, 16));
    EXPECT_TRUE(usable(p, 12));
    EXPECT_TRUE(all_poisoned(p + 12, 4));
    EXPECT_TRUE(all_poisoned(p - 16, 16)); // the header: an underrun is reported too
    stack.deallocate(p, 12, 16);
    EXPECT_TRUE(all_poisoned(buf.bytes, 512));
  }
  EXPECT_TRUE(usable(buf.bytes, sizeof buf.bytes));
}

TEST(PoisonStack, ReportsAReadAfterFree) {
  memkit::stack<> stack(1024);
  void* p = stack.allocate(16, 8);
  stack.deallocate(p, 16, 8);
  EXPECT_DEATH(read_byte(p), "use-after-poison");
}

TEST(PoisonStack, ReportsAWriteOnePastTheTopBlockAndAnUnderrunIntoItsHeader) {
  memkit::stack<> stack(1024);
  auto* p = static_cast<unsigned char*>(stack.allocate(7, 8));
  write_byte(p + 6);
  EXPECT_DEATH(write_byte(p + 7), "use-after-poison");
  EXPECT_DEATH(write_byte(p - 1), "use-after-poison");
  stack.deallocate(p, 7, 8);
}

TEST(PoisonStack, ReportsAReadBehindARollbackOrAReset) {
  memkit::stack<> stack(1024);
  void* kept = stack.allocate(8, 8);
  const auto mark = stack.marker();
  void* dropped = stack.allocate(64, 8);
  stack.rollback(mark);
  EXPECT_TRUE(usable(kept, 8));
  EXPECT_TRUE(all_poisoned(dropped, 64));
  EXPECT_DEATH(read_byte(dropped), "use-after-poison");
  stack.reset();
  EXPECT_DEATH(read_byte(kept), "use-after-poison");
}

TEST(PoisonStack, ReturnsTheRegionUnpoisonedOnRelease) {
  expect_chunks_return_unpoisoned([](poison_checking_upstream upstream) {
    memkit::stack<poison_checking_upstream> stack(1024, upstream);
    (void)stack.allocate(100, 8);
    stack.release();
    void* p = stack.allocate(100, 8);
    EXPECT_TRUE(usable(p, 100));
  });
}

// ---- multipool ----

TEST(PoisonMultipool, HandsOutExactlyTheRequestedBytesAndPoisonsTheRest) {
  memkit::multipool<> pool;
  auto* p = static_cast<unsigned char*>(pool.allocate(20, 8)); // a 32-byte class
  EXPECT_TRUE(usable(p, 20));
  EXPECT_TRUE(all_poisoned(p + 20, 12));
  pool.deallocate(p, 20, 8);
  EXPECT_TRUE(all_poisoned(p, 32));
}

TEST(PoisonMultipool, ReportsAReadAfterFree) {
  memkit::multipool<> pool;
  void* p = pool.allocate(48, 8);
  pool.deallocate(p, 48, 8);
  EXPECT_DEATH(read_byte(p), "use-after-poison");
}

TEST(PoisonMultipool, ReportsAWriteOnePastTheRequestedSize) {
  memkit::multipool<> pool;
  auto* p = static_cast<unsigned char*>(pool.allocate(20, 8));
  write_byte(p + 19);
  EXPECT_DEATH(write_byte(p + 20), "use-after-poison");
  pool.deallocate(p, 20, 8);
}

TEST(PoisonMultipool, ReportsAReadAfterResetInHeapAndStaticMode) {
  memkit::multipool<> heap;
  void* p = heap.allocate(64, 8);
  heap.reset();
  EXPECT_DEATH(read_byte(p), "use-after-poison");
  aligned_buffer buf;
  {
    memkit::multipool<> fixed(buf.bytes, sizeof buf.bytes, memkit::multipool_options{256, 1024});
    void* q = fixed.allocate(64, 8);
    EXPECT_TRUE(usable(q, 64));
    fixed.reset();
    EXPECT_TRUE(all_poisoned(q, 64));
    EXPECT_DEATH(read_byte(q), "use-after-poison");
  }
  EXPECT_TRUE(usable(buf.bytes, sizeof buf.bytes));
}

TEST(PoisonMultipool, ReturnsEveryChunkUnpoisonedOnRelease) {
  expect_chunks_return_unpoisoned([](poison_checking_upstream upstream) {
    memkit::multipool<poison_checking_upstream> pool(upstream);
    for (std::size_t n = 1; n <= 4096; n *= 2) {
      void* p = pool.allocate(n, 8);
      if (n % 3 == 1) {
        pool.deallocate(p, n, 8);
      }
    }
    (void)pool.allocate(100000, 8); // a large block, passed to the upstream
    pool.release();
    void* p = pool.allocate(24, 8);
    EXPECT_TRUE(usable(p, 24));
  });
}

// ---- node_pool ----

TEST(PoisonNodePool, ReportsAReadAfterFreeAndAWriteOnePastTheNode) {
  memkit::node_pool<> pool;
  auto* p = static_cast<unsigned char*>(pool.allocate(12, 4)); // adopts 12 bytes: 16-byte blocks
  write_byte(p + 11);
  EXPECT_DEATH(write_byte(p + 12), "use-after-poison");
  void* q = pool.allocate(12, 4);
  pool.deallocate(q, 12, 4);
  EXPECT_TRUE(all_poisoned(q, 12));
  EXPECT_DEATH(read_byte(q), "use-after-poison");
  pool.deallocate(p, 12, 4);
}

TEST(PoisonNodePool, ReportsAReadAfterResetAndIsCleanAfterRelease) {
  expect_chunks_return_unpoisoned([](poison_checking_upstream upstream) {
    memkit::node_pool<poison_checking_upstream> pool(upstream);
    void* p = pool.allocate(40, 8);
    pool.reset();
    EXPECT_DEATH(read_byte(p), "use-after-poison");
    pool.release();
  });
}

#endif // MEMKIT_ASAN

} // namespace
