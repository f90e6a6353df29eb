// SPDX-License-Identifier: BSL-1.0
#include "memkit/multipool.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <gtest/gtest.h>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "support/spy_resource.hpp"

namespace {

using memkit::detail::class_count_limit;
using memkit::detail::class_index;
using memkit::detail::class_size;
using memkit::detail::class_size_limit;
using memkit::test::misuse_recorder;
using memkit::test::spy_resource;
using spy_ref = memkit::resource_ref<spy_resource>;
using heap_multipool = memkit::multipool<spy_ref>;

static_assert(memkit::is_resource_v<heap_multipool>);
static_assert(memkit::is_resource_v<memkit::multipool<>>);
static_assert(memkit::has_owns_v<heap_multipool>);
static_assert(!std::is_copy_constructible_v<heap_multipool>);
static_assert(!std::is_move_constructible_v<heap_multipool>);
static_assert(class_index(1) == 0 && class_size(0) == 16);
static_assert(class_index(128) == 7 && class_index(129) == 8 && class_size(8) == 160);
static_assert(class_count_limit == 44);

/// Fails the test if a static-mode multipool ever reaches for an upstream.
struct forbidden_upstream {
  static inline int calls = 0;
  const char* name() const noexcept { return "forbidden_upstream"; }
  std::size_t max_size() const noexcept { return memkit::unbounded_size; }
  std::size_t max_alignment() const noexcept { return memkit::unbounded_alignment; }
  void* allocate(std::size_t bytes, std::size_t alignment = memkit::default_alignment) {
    return memkit::detail::allocate_or_throw(*this, bytes, alignment);
  }
  void* try_allocate(std::size_t, std::size_t = memkit::default_alignment) noexcept {
    ++calls;
    return nullptr;
  }
  void deallocate(void*, std::size_t, std::size_t = memkit::default_alignment) noexcept { ++calls; }
};
using static_multipool = memkit::multipool<forbidden_upstream>;

struct block {
  unsigned char* p;
  std::size_t size;
  std::size_t alignment;
  unsigned char fill;
};

block take(memkit::multipool<spy_ref>& r, std::size_t size, std::size_t alignment,
           unsigned char fill) {
  auto* p = static_cast<unsigned char*>(r.allocate(size, alignment));
  std::memset(p, fill, size);
  return {p, size, alignment, fill};
}

bool intact(const block& b) {
  return std::all_of(b.p, b.p + b.size, [&](unsigned char x) { return x == b.fill; });
}

void expect_clean(const spy_resource& spy) {
  EXPECT_EQ(spy.blocks_in_use(), 0u);
  EXPECT_TRUE(spy.errors().empty()) << (spy.errors().empty() ? "" : spy.errors().front());
}

TEST(SizeClass, WastesLessThan16BytesUpTo128AndLessThanAQuarterAbove) {
  for (std::size_t n = 1; n <= class_size_limit; ++n) {
    const std::size_t c = class_size(class_index(n));
    ASSERT_GE(c, n) << n;
    if (n <= 128) {
      ASSERT_LT(c - n, 16u) << n;
    } else {
      ASSERT_LT(4 * (c - n), n) << n << " rounds up to " << c;
    }
  }
}

TEST(SizeClass, TheTableAgreesWithTheArithmeticUpToItsLimit) {
  EXPECT_EQ(memkit::detail::table_class_index(0), 0u) << "0 bytes: the smallest class";
  for (std::size_t n = 1; n <= memkit::detail::table_class_limit; ++n) {
    ASSERT_EQ(memkit::detail::table_class_index(n), class_index(n)) << n;
  }
}

TEST(SizeClass, IndexIsMonotonicAndPicksTheSmallestClassThatFits) {
  for (std::size_t n = 2; n <= class_size_limit; ++n) {
    const std::size_t i = class_index(n);
    const std::size_t before = class_index(n - 1);
    ASSERT_TRUE(i == before || i == before + 1) << n;
    if (i > 0) {
      ASSERT_LT(class_size(i - 1), n) << n;
    }
  }
  for (std::size_t i = 0; i < class_count_limit; ++i) {
    EXPECT_EQ(class_index(class_size(i)), i);
    EXPECT_EQ(class_size(i) % 16, 0u);
    if (i > 0) {
      EXPECT_GT(class_size(i), class_size(i - 1));
    }
  }
  EXPECT_EQ(class_size(class_count_limit - 1), class_size_limit);
}

TEST(SizeClass, AnAlignedRequestLandsInAClassThatIsAMultipleOfItsAlignment) {
  // multipool serves (n, A > 16) from the class of round_up(max(n, A), A) and relies on that
  // class size being a multiple of A, since blocks are aligned to its lowest set bit.
  for (std::size_t a = 32; a <= memkit::page_size; a *= 2) {
    for (std::size_t m = a; m <= class_size_limit; m += a) {
      ASSERT_EQ(class_size(class_index(m)) % a, 0u) << "size " << m << " alignment " << a;
    }
  }
}

TEST(Multipool, ServesEverySizeUpToBeyondTheLargestClass) {
  spy_resource spy;
  {
    heap_multipool r{spy_ref(spy)};
    ASSERT_EQ(r.max_class_size(), 4096u);
    for (std::size_t n = 0; n <= r.max_class_size() + 300; ++n) {
      auto* p = static_cast<unsigned char*>(r.allocate(n, 8));
      ASSERT_TRUE(memkit::detail::is_aligned(p, 16)) << n;
      std::memset(p, static_cast<int>(n & 0xff), n);
      auto* q = static_cast<unsigned char*>(r.allocate(n, 8));
      ASSERT_NE(p, q) << n;
      std::memset(q, ~static_cast<int>(n & 0xff), n);
      ASSERT_TRUE(std::all_of(p, p + n, [&](unsigned char x) { return x == (n & 0xff); })) << n;
      r.deallocate(q, n, 8);
      r.deallocate(p, n, 8);
    }
    EXPECT_EQ(r.in_use(), 0u);
  }
  expect_clean(spy);
}

TEST(Multipool, HonoursEveryPowerOfTwoAlignmentForManySizes) {
  spy_resource spy;
  alignas(memkit::page_size) static unsigned char buffer[4 << 20];
  heap_multipool heap{spy_ref(spy)};
  heap_multipool wide{spy_ref(spy), {class_size_limit, 64 * 1024}}; // classes above a page too
  static_multipool fixed(buffer + 48, sizeof buffer - 48); // a deliberately misaligned buffer
  // Allocates twice (carved, then recycled: deallocate must find the same class) and checks.
  // \returns the block, free again, or null if the pool could not serve the request.
  auto check = [](auto& r, std::size_t n, std::size_t a, const char* which) -> void* {
    void* p = r.try_allocate(n, a);
    if (p == nullptr) {
      return nullptr;
    }
    EXPECT_TRUE(memkit::detail::is_aligned(p, a)) << which << " size " << n << " alignment " << a;
    std::memset(p, 0xab, n);
    r.deallocate(p, n, a);
    const bool pooled = r.owns(p); // a freed large block is the upstream's again
    void* q = r.allocate(n, a);
    EXPECT_TRUE(q == p || !pooled) << which << " size " << n << " alignment " << a;
    r.deallocate(q, n, a);
    return p;
  };
  const std::size_t sizes[] = {0,    1,    15,   16,   17,   100,   129,   200,  640,
                               1000, 2049, 3000, 4096, 5000, 12345, 40000, 65536};
  // Above a page, alignment passes through to the upstream (the static pool refuses it).
  for (std::size_t a = 1; a <= 4 * memkit::page_size; a *= 2) {
    for (std::size_t n : sizes) {
      EXPECT_NE(check(heap, n, a, "heap"), nullptr);
      // A freed block still lies in a chunk: the wide pool served it from a class.
      EXPECT_EQ(wide.owns(check(wide, n, a, "wide")), a <= memkit::page_size) << n << " " << a;
      EXPECT_EQ(check(fixed, n, a, "static") != nullptr,
                n <= fixed.max_class_size() && a <= memkit::page_size)
          << n << " " << a;
    }
  }
  heap.release();
  wide.release();
  expect_clean(spy);
  EXPECT_EQ(forbidden_upstream::calls, 0);
}

TEST(Multipool, ServesAnOverAlignedRequestFromTheClassOfItsAlignedSize) {
  spy_resource spy;
  heap_multipool r{spy_ref(spy)};
  void* p = r.allocate(1, 64); // class of round_up(max(1, 64), 64) = 64
  r.deallocate(p, 1, 64);
  EXPECT_EQ(r.allocate(64, 8), p);
  r.deallocate(p, 64, 8);
  void* q = r.allocate(130, 256); // class 256, not 160
  r.deallocate(q, 130, 256);
  EXPECT_EQ(r.allocate(256, 16), q);
  EXPECT_EQ(r.bytes_in_use(), 256u);
  r.deallocate(q, 256, 16);
}

TEST(Multipool, MixedRandomSizesNeverOverlap) {
  const unsigned seed = 0x5eed2026u;
  std::printf("Multipool.MixedRandomSizesNeverOverlap seed %u\n", seed);
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937 rng(seed);
  spy_resource spy;
  {
    heap_multipool r{spy_ref(spy), {1024, 16 * 1024}};
    std::uniform_int_distribution<std::size_t> size(0, 1500); // some pass through
    std::uniform_int_distribution<int> align_log(0, 9);
    std::uniform_int_distribution<int> op(0, 9);
    std::vector<block> live;
    for (int i = 0; i < 20000; ++i) {
      if (op(rng) < 6 || live.empty()) {
        const std::size_t a = std::size_t{1} << align_log(rng);
        live.push_back(take(r, size(rng), a, static_cast<unsigned char>(i * 13 + 1)));
        ASSERT_TRUE(memkit::detail::is_aligned(live.back().p, a)) << i;
        ASSERT_TRUE(r.owns(live.back().p)) << i;
      } else {
        const std::size_t k = std::uniform_int_distribution<std::size_t>(0, live.size() - 1)(rng);
        ASSERT_TRUE(intact(live[k]))
            << "op " << i << ": a block of " << live[k].size << " bytes was overwritten";
        r.deallocate(live[k].p, live[k].size, live[k].alignment);
        live[k] = live.back();
        live.pop_back();
      }
    }
    EXPECT_EQ(r.in_use(), live.size());
    for (const block& b : live) {
      ASSERT_TRUE(intact(b));
      r.deallocate(b.p, b.size, b.alignment);
    }
    EXPECT_EQ(r.in_use(), 0u);
    EXPECT_EQ(r.bytes_in_use(), 0u);
  }
  expect_clean(spy);
}

TEST(Multipool, ConstructionAllocatesNothing) {
  spy_resource spy;
  heap_multipool r{spy_ref(spy)};
  EXPECT_EQ(spy.calls(), 0u);
  void* p = r.allocate(24);
  EXPECT_EQ(spy.calls(), 1u);
  r.deallocate(p, 24);
}

TEST(Multipool, RecyclesBlocksAndTakesOneChunkPerClassAtATime) {
  spy_resource spy;
  heap_multipool r{spy_ref(spy)};
  std::vector<void*> blocks;
  // A 64 KiB chunk of the 32-byte class holds 2047 blocks after its 32-byte header.
  for (int i = 0; i < 2047; ++i) {
    blocks.push_back(r.allocate(32));
  }
  EXPECT_EQ(spy.allocations(), 1u);
  EXPECT_EQ(spy.bytes_in_use(), 64u * 1024);
  blocks.push_back(r.allocate(32));
  EXPECT_EQ(spy.allocations(), 2u);
  for (void* p : blocks) {
    r.deallocate(p, 32);
  }
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    (void)r.allocate(32);
  }
  EXPECT_EQ(spy.allocations(), 2u) << "freed blocks must be reused before asking the upstream";
  void* other = r.allocate(200);
  EXPECT_EQ(spy.allocations(), 3u) << "another class takes its own chunk";
  r.deallocate(other, 200);
}

TEST(Multipool, ReturnsEveryChunkToTheUpstreamOnReleaseAndDestruction) {
  spy_resource spy;
  {
    heap_multipool r{spy_ref(spy)};
    for (std::size_t n = 1; n <= 4096; n += 7) {
      (void)r.allocate(n, n % 2 == 0 ? 64 : 8);
    }
    (void)r.allocate(10000, 8);
    (void)r.allocate(20, 8192);
    EXPECT_GT(spy.blocks_in_use(), 20u);
    r.release();
    expect_clean(spy);
    EXPECT_EQ(r.in_use(), 0u);
    EXPECT_FALSE(r.owns(nullptr));
    for (std::size_t n = 1; n <= 9000; n += 97) {
      (void)r.allocate(n, 32);
    }
  }
  expect_clean(spy);
  EXPECT_EQ(spy.allocations(), spy.deallocations());
}

TEST(Multipool, ResetKeepsTheChunksAndServesTheSameMixWithoutUpstreamCalls) {
  spy_resource spy;
  heap_multipool r{spy_ref(spy), {4096, 4096}};
  // Blocks of the large classes need a chunk each, so reusing the chunks is exercised; every block
  // handed out in one cycle must be distinct.
  auto cycle = [&] {
    std::vector<void*> blocks;
    for (std::size_t n = 1; n <= 4096; n += 5) {
      blocks.push_back(r.allocate(n, 16));
      blocks.push_back(r.allocate(n, 16));
    }
    std::sort(blocks.begin(), blocks.end());
    EXPECT_EQ(std::adjacent_find(blocks.begin(), blocks.end()), blocks.end());
  };
  cycle();
  const std::size_t chunks = spy.blocks_in_use();
  const std::size_t calls = spy.calls();
  for (int i = 0; i < 3; ++i) {
    r.reset();
    EXPECT_EQ(r.in_use(), 0u);
    cycle();
  }
  EXPECT_EQ(spy.calls(), calls);
  EXPECT_EQ(spy.blocks_in_use(), chunks);
  void* large = r.allocate(5000);
  r.reset();
  EXPECT_FALSE(r.owns(large)) << "reset returns large blocks to the upstream";
  EXPECT_EQ(spy.blocks_in_use(), chunks + 1) << "only the large-block table is left beside chunks";
}

TEST(Multipool, PassesLargeRequestsToTheUpstreamWithTheirExactSizeAndAlignment) {
  spy_resource spy;
  {
    heap_multipool r{spy_ref(spy)};
    void* a = r.allocate(4097, 8);
    const std::size_t table = spy.bytes_in_use() - 4097; // the large-block table came with it
    void* b = r.allocate(100, 8192); // aligned beyond a page: no chunk guarantees that
    EXPECT_TRUE(memkit::detail::is_aligned(b, 8192));
    EXPECT_EQ(spy.bytes_in_use(), table + 4097 + 100);
    EXPECT_TRUE(spy.owns(a));
    EXPECT_TRUE(r.owns(a));
    EXPECT_TRUE(r.owns(static_cast<char*>(a) + 4096));
    EXPECT_EQ(r.in_use(), 2u);
    EXPECT_EQ(r.bytes_in_use(), 4197u);
    r.deallocate(a, 4097, 8);
    r.deallocate(b, 100, 8192);
    EXPECT_EQ(spy.bytes_in_use(), table);
    EXPECT_TRUE(spy.errors().empty()) << spy.errors().front();
    (void)r.allocate(70000, 64); // left for the destructor to return
  }
  expect_clean(spy);
}

TEST(Multipool, TracksThousandsOfLargeBlocksFreedInAnyOrder) {
  const unsigned seed = 4242;
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937 rng(seed);
  spy_resource spy;
  {
    heap_multipool r{spy_ref(spy), {128, 4096}};
    std::vector<block> live;
    for (int round = 0; round < 3; ++round) {
      for (int i = 0; i < 1500; ++i) {
        live.push_back(
            take(r, 129 + static_cast<std::size_t>(i % 50), 16, static_cast<unsigned char>(i)));
      }
      std::shuffle(live.begin(), live.end(), rng);
      for (std::size_t i = 0; i < live.size() / 2; ++i) {
        ASSERT_TRUE(intact(live.back()));
        r.deallocate(live.back().p, live.back().size, 16);
        live.pop_back();
      }
      for (const block& b : live) {
        ASSERT_TRUE(r.owns(b.p)) << "round " << round;
      }
    }
    EXPECT_EQ(r.in_use(), live.size());
  }
  expect_clean(spy);
}

TEST(Multipool, OwnsExactlyItsChunksAndLargeBlocks) {
  spy_resource spy;
  heap_multipool r{spy_ref(spy)};
  int local = 0;
  EXPECT_FALSE(r.owns(&local));
  void* p = r.allocate(48);
  void* large = r.allocate(9000);
  EXPECT_TRUE(r.owns(p));
  EXPECT_TRUE(r.owns(large));
  auto other = std::make_unique<char[]>(64);
  EXPECT_FALSE(r.owns(other.get()));
  r.deallocate(large, 9000);
  EXPECT_FALSE(r.owns(large));
  r.deallocate(p, 48);
  EXPECT_TRUE(r.owns(p)) << "a free block still lies in a chunk the pool manages";
  r.release();
  EXPECT_FALSE(r.owns(p));
}

TEST(Multipool, RejectsImpossibleRequests) {
  spy_resource spy;
  heap_multipool r{spy_ref(spy)};
  EXPECT_GE(r.max_alignment(), memkit::page_size);
  for (std::size_t a : {std::size_t{0}, std::size_t{3}, std::size_t{24}, std::size_t{4095}}) {
    EXPECT_EQ(r.try_allocate(8, a), nullptr) << a;
    EXPECT_THROW((void)r.allocate(8, a), memkit::bad_alignment) << a;
  }
  EXPECT_EQ(r.try_allocate(SIZE_MAX, 8), nullptr);
  EXPECT_THROW((void)r.allocate(SIZE_MAX, 8), memkit::bad_size);
  EXPECT_THROW((void)r.allocate(SIZE_MAX - 100, 4096), memkit::bad_size);
  void* z1 = r.allocate(0);
  void* z2 = r.allocate(0);
  EXPECT_NE(z1, z2);
  r.deallocate(z1, 0);
  r.deallocate(z2, 0);
  r.deallocate(nullptr, 8);
  r.deallocate(nullptr, 10000);
  EXPECT_EQ(r.in_use(), 0u);
}

TEST(Multipool, ThrowsOutOfMemoryNamingItselfWhenTheUpstreamIsExhausted) {
  spy_resource spy(0);
  heap_multipool r{spy_ref(spy)};
  EXPECT_EQ(r.try_allocate(16), nullptr);
  EXPECT_EQ(r.try_allocate(50000), nullptr);
  try {
    (void)r.allocate(40, 8);
    FAIL() << "allocate must throw";
  } catch (const memkit::out_of_memory& e) {
    EXPECT_STREQ(e.resource(), "memkit::multipool");
    EXPECT_EQ(e.size(), 40u);
    EXPECT_NE(std::string(e.what()).find("memkit::multipool"), std::string::npos);
  }
  spy.set_budget(5100); // enough for a large block, not for its table as well
  EXPECT_EQ(r.try_allocate(5000), nullptr);
  expect_clean(spy);
}

TEST(Multipool, RoundsItsOptionsAndSizesItsClassesFromThem) {
  spy_resource spy;
  heap_multipool small{spy_ref(spy), {1000, 8}};
  EXPECT_EQ(small.max_class_size(), 1024u);
  EXPECT_EQ(small.class_count(), class_index(1024) + 1);
  void* p = small.allocate(1024); // a chunk holds at least one block, whatever chunk_size says
  EXPECT_EQ(spy.bytes_in_use(), 1024u + sizeof(memkit::detail::chunk));
  small.deallocate(p, 1024);
  heap_multipool huge{spy_ref(spy), {SIZE_MAX, 1 << 20}};
  EXPECT_EQ(huge.max_class_size(), class_size_limit);
  EXPECT_EQ(huge.class_count(), class_count_limit);
  heap_multipool tiny{spy_ref(spy), {1, 64}};
  EXPECT_EQ(tiny.max_class_size(), 16u);
  EXPECT_EQ(tiny.class_count(), 1u);
}

TEST(Multipool, ConstructorRejectsZeroOptions) {
  alignas(16) static unsigned char buffer[1024];
  EXPECT_THROW(memkit::multipool<>(memkit::malloc_resource{}, {0, 4096}), memkit::bad_size);
  EXPECT_THROW(memkit::multipool<>(memkit::malloc_resource{}, {4096, 0}), memkit::bad_size);
  EXPECT_THROW(memkit::multipool<>(buffer, sizeof buffer, {0, 4096}), memkit::bad_size);
  EXPECT_THROW(memkit::multipool<>(buffer, sizeof buffer, {4096, 0}), memkit::bad_size);
}

// A static-mode pool cannot pass an over-aligned request to an upstream, so it honours an alignment
// only if every size up to its class limit has a class that keeps it: exactly the powers of two
// dividing the limit. Every alignment is tried against every class limit, at the smallest and the
// largest size, on a fresh buffer: what max_alignment() promises is served, the rest is
// bad_alignment, never out_of_memory.
TEST(Multipool, StaticModeServesExactlyTheAlignmentsItReportsForEveryClassLimit) {
  alignas(memkit::page_size) static unsigned char buffer[256 * 1024];
  for (std::size_t c = 0; c < class_count_limit; ++c) {
    const std::size_t limit = class_size(c);
    static_multipool r(buffer, sizeof buffer, {limit, 4096});
    ASSERT_EQ(r.max_class_size(), limit);
    const std::size_t promised = std::min(memkit::detail::lowest_bit(limit), memkit::page_size);
    EXPECT_EQ(r.max_alignment(), promised) << "class limit " << limit;
    for (std::size_t a = 1; a <= 2 * memkit::page_size; a *= 2) {
      SCOPED_TRACE("class limit " + std::to_string(limit) + ", alignment " + std::to_string(a));
      for (const std::size_t bytes : {std::size_t{1}, limit}) {
        if (a <= promised) {
          void* p = r.allocate(bytes, a);
          EXPECT_TRUE(memkit::detail::is_aligned(p, a));
          EXPECT_TRUE(r.owns(p));
          r.deallocate(p, bytes, a);
        } else {
          EXPECT_EQ(r.try_allocate(bytes, a), nullptr);
          EXPECT_THROW((void)r.allocate(bytes, a), memkit::bad_alignment);
        }
      }
    }
    EXPECT_EQ(r.in_use(), 0u);
  }
}

TEST(Multipool, HeapModeServesEveryAlignmentForEveryClassLimit) {
  spy_resource spy;
  for (std::size_t c = 0; c < class_count_limit; ++c) {
    const std::size_t limit = class_size(c);
    heap_multipool r{spy_ref(spy), {limit, 4096}};
    EXPECT_GE(r.max_alignment(), memkit::page_size);
    for (std::size_t a = 1; a <= 2 * memkit::page_size; a *= 2) {
      for (const std::size_t bytes : {std::size_t{1}, limit}) {
        void* p = r.allocate(bytes, a);
        EXPECT_TRUE(memkit::detail::is_aligned(p, a)) << limit << " " << a;
        r.deallocate(p, bytes, a);
      }
    }
  }
  expect_clean(spy);
}

TEST(Multipool, StaticModeReportsAFreeWithAnAlignmentItNeverServesAsAMismatch) {
  alignas(64) static unsigned char buffer[64 * 1024];
  static_multipool r(buffer, sizeof buffer, {1024, 4096});
  misuse_recorder recorder;
  void* p = r.allocate(8, 1024);
  r.deallocate(p, 8, 2048);
  ASSERT_EQ(recorder.reports().size(), 1u);
  EXPECT_EQ(recorder.reports()[0].kind, memkit::misuse::alignment_mismatch);
  r.deallocate(p, 8, 1024);
  EXPECT_EQ(r.in_use(), 0u);
}

TEST(Multipool, StaticModeNeverTouchesAnUpstreamAndExhaustsCleanly) {
  alignas(64) static unsigned char buffer[256 * 1024];
  forbidden_upstream::calls = 0;
  {
    static_multipool r(buffer, sizeof buffer, {4096, 16 * 1024});
    EXPECT_EQ(r.max_size(), 4096u);
    EXPECT_EQ(r.max_alignment(), memkit::page_size);
    EXPECT_EQ(r.try_allocate(4097), nullptr);
    EXPECT_THROW((void)r.allocate(4097), memkit::bad_size);
    EXPECT_THROW((void)r.allocate(16, 8192), memkit::bad_alignment);
    std::size_t count = 0;
    try {
      for (;;) {
        void* p = r.allocate(100);
        ASSERT_TRUE(memkit::detail::in_range(p, buffer, sizeof buffer));
        ++count;
      }
    } catch (const memkit::out_of_memory& e) {
      EXPECT_STREQ(e.resource(), "memkit::multipool");
    }
    // Every chunk went to the 112-byte class: at most one block per 16 KiB chunk is lost.
    EXPECT_GE(count, (sizeof buffer / 112) * 145 / 146);
    EXPECT_EQ(r.in_use(), count);
    EXPECT_EQ(r.try_allocate(16), nullptr) << "every chunk is taken";
    r.reset();
    EXPECT_EQ(r.in_use(), 0u);
    std::size_t again = 0;
    while (r.try_allocate(100) != nullptr) {
      ++again;
    }
    EXPECT_EQ(again, count);
    r.release();
  }
  EXPECT_EQ(forbidden_upstream::calls, 0);
}

TEST(Multipool, StaticModeCarvesOneChunkAtATimeWhenAClassFirstNeedsIt) {
  alignas(memkit::page_size) static unsigned char buffer[64 * 1024];
  static_multipool r(buffer, sizeof buffer, {4096, 1024});
  EXPECT_FALSE(r.owns(buffer)) << "nothing is carved before it is needed";
  void* a = r.allocate(16);
  EXPECT_EQ(a, buffer);
  EXPECT_TRUE(r.owns(buffer + 1023));
  EXPECT_FALSE(r.owns(buffer + 1024));
  void* b = r.allocate(256, 256); // a class of 256 starts its chunk on a 256-byte boundary
  EXPECT_EQ(b, buffer + 1024);
  EXPECT_FALSE(r.owns(buffer + 2048));
  void* c = r.allocate(16);
  EXPECT_EQ(c, buffer + 16) << "the 16-byte class keeps carving its own chunk";
  r.deallocate(a, 16);
  r.deallocate(b, 256, 256);
  r.deallocate(c, 16);
}

TEST(Multipool, StaticModeGivesTheTailOfASmallBufferToTheLastChunk) {
  alignas(64) static unsigned char buffer[3000];
  static_multipool r(buffer, sizeof buffer); // smaller than one 64 KiB chunk
  std::vector<void*> blocks;
  while (void* p = r.try_allocate(64)) {
    blocks.push_back(p);
  }
  EXPECT_EQ(blocks.size(), sizeof buffer / 64);
  EXPECT_EQ(r.try_allocate(16), nullptr);
  EXPECT_THROW((void)r.allocate(16), memkit::out_of_memory);
}

TEST(Multipool, ReportsDoubleFreeAndForeignPointersAndKeepsItsState) {
  misuse_recorder rec;
  alignas(64) static unsigned char buffer[64 * 1024];
  static_multipool r(buffer, sizeof buffer, {4096, 4096});
  void* a = r.allocate(40);
  void* b = r.allocate(40);
  r.deallocate(a, 40);
  r.deallocate(a, 40);
  EXPECT_EQ(rec.count(memkit::misuse::double_free), 1u);
  alignas(16) unsigned char local[64] = {};
  r.deallocate(local, 40);
  r.deallocate(local, 5000); // no large block exists in static mode
  EXPECT_EQ(rec.count(memkit::misuse::foreign_pointer), 2u);
  r.deallocate(b, 5000);
  EXPECT_EQ(rec.count(memkit::misuse::size_mismatch), 1u);
  r.deallocate(b, 40, 3);
  EXPECT_EQ(rec.count(memkit::misuse::alignment_mismatch), 1u);
  ASSERT_EQ(rec.reports().size(), 5u);
  EXPECT_STREQ(rec.reports()[0].resource, "memkit::multipool");
  EXPECT_EQ(rec.reports()[0].pointer, a);
  EXPECT_EQ(r.in_use(), 1u);
  EXPECT_EQ(r.allocate(40), a) << "the ignored double free left a once on the free list";
  EXPECT_NE(r.allocate(40), a);
  r.deallocate(b, 40);
}

TEST(Multipool, ReportsMisusedLargeBlocksAndKeepsThem) {
  misuse_recorder rec;
  spy_resource spy;
  {
    heap_multipool r{spy_ref(spy)};
    void* large = r.allocate(6000, 64);
    void* small = r.allocate(100);
    r.deallocate(large, 6001, 64);
    r.deallocate(large, 6000, 128);
    r.deallocate(small, 6000, 64);
    int local = 0;
    r.deallocate(&local, 6000, 64);
    EXPECT_EQ(rec.count(memkit::misuse::size_mismatch), 2u);
    EXPECT_EQ(rec.count(memkit::misuse::alignment_mismatch), 1u);
    EXPECT_EQ(rec.count(memkit::misuse::foreign_pointer), 1u);
    EXPECT_TRUE(r.owns(large));
    EXPECT_EQ(r.in_use(), 2u);
    r.deallocate(large, 6000, 64);
    r.deallocate(large, 6000, 64); // a second free of a large block is unknown to the pool
    EXPECT_EQ(rec.count(memkit::misuse::foreign_pointer), 2u);
    r.deallocate(small, 100);
  }
  expect_clean(spy);
}

TEST(Multipool, DefaultMisuseHandlerAbortsNamingThePoolAndTheMistake) {
  EXPECT_DEATH(
      {
        memkit::multipool<> r;
        void* p = r.allocate(24);
        r.deallocate(p, 24);
        r.deallocate(p, 24);
      },
      "memkit::multipool: double free");
}

} // namespace
