// SPDX-License-Identifier: BSL-1.0
// The global replacement's engine (src/'s memkit_engine_checked: every file but the entry points)
// linked into a plain test program, so the sanitizer builds check it too: a sanitizer runtime owns
// malloc, so there the replacement cannot be preloaded (tests/replacement runs the preloaded
// library in the optimized build). The same program runs twice: as is, and with
// MEMKIT_OPTIONS=debug:1 for the Debug tests.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "heap.hpp"
#include "internal.hpp"
#include "memkit/detail/base/os.hpp"
#include "memkit/detail/guard.hpp"
#include "memkit/error.hpp"
#include "memkit/replacement.h"
#include "memkit/version.hpp"

namespace mr = memkit::replacement;

namespace {

// The run under a ulimit -v too small for the chunk arena (tests/CMakeLists.txt).
bool no_arena_run() { return std::getenv("MEMKIT_TEST_NO_ARENA") != nullptr; }

bool debug_run() {
  const char* o = std::getenv("MEMKIT_OPTIONS");
  return o != nullptr && std::strstr(o, "debug:1") != nullptr;
}

std::size_t stats_field(const char* name) {
  char line[512];
  memkit_stats_json(line, sizeof line);
  const std::string text = line;
  const std::string key = std::string("\"") + name + "\":";
  const std::size_t at = text.find(key);
  EXPECT_NE(at, std::string::npos) << text;
  return at == std::string::npos ? 0 : std::stoull(text.substr(at + key.size()));
}

void stamp(void* p, std::size_t n, unsigned char v) { std::memset(p, v, n); }

bool stamped(const void* p, std::size_t n, unsigned char v) {
  const auto* b = static_cast<const unsigned char*>(p);
  for (std::size_t i = 0; i < n; ++i) {
    if (b[i] != v) {
      return false;
    }
  }
  return true;
}

TEST(ReplacementEngine, EverySizeAndAlignmentIsAlignedUsableAndOwned) {
  std::vector<std::pair<void*, std::size_t>> live;
  for (std::size_t alignment = 16; alignment <= (std::size_t{1} << 20); alignment <<= 2) {
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{15}, std::size_t{16},
                          std::size_t{100}, std::size_t{4096}, std::size_t{8192}, std::size_t{8193},
                          std::size_t{70000}, std::size_t{1} << 20, std::size_t{20} << 20}) {
      void* p = mr::allocate(n, alignment);
      ASSERT_NE(p, nullptr) << n << " " << alignment;
      EXPECT_TRUE(memkit::detail::is_aligned(p, alignment)) << n << " " << alignment;
      const std::size_t usable = mr::usable_size_of(p);
      EXPECT_GE(usable, n == 0 ? 1 : n);
      EXPECT_EQ(memkit_owns(p), 1);
      stamp(p, usable, static_cast<unsigned char>(live.size()));
      live.emplace_back(p, usable);
    }
  }
  for (std::size_t i = 0; i < live.size(); ++i) {
    EXPECT_TRUE(stamped(live[i].first, live[i].second, static_cast<unsigned char>(i))) << i;
    EXPECT_EQ(mr::usable_size_of(live[i].first), live[i].second) << "stable for the block's life";
    mr::free(live[i].first);
  }
}

TEST(ReplacementEngine, ImpossibleRequestsAreNull) {
  EXPECT_EQ(mr::allocate(static_cast<std::size_t>(-1), 16), nullptr);
  EXPECT_EQ(mr::allocate(static_cast<std::size_t>(-1) - 4096, 16), nullptr);
  EXPECT_EQ(mr::allocate(std::size_t{1} << 62, 16), nullptr);
  mr::free(nullptr);
}

// The program's malloc here is glibc's, or a sanitizer runtime's: memkit::new_delete hands a
// block it did not hand out to the program's free, whichever that is.
TEST(ReplacementEngine, TheProgramsMallocBlocksAreRecognisedAndFreedByItsFree) {
  void* p = std::malloc(64);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(memkit_owns(p), 0);
  const std::size_t before = stats_field("foreign_frees");
  mr::free(p);
  EXPECT_EQ(stats_field("foreign_frees"), before + 1);
  int on_stack = 0;
  EXPECT_EQ(memkit_owns(&on_stack), 0);
}

TEST(ReplacementEngine, BlocksFreedOnOtherThreadsKeepTheirContents) {
  constexpr int threads = 4;
  constexpr int rounds = 3000;
  struct inbox {
    std::mutex m;
    std::vector<std::pair<void*, std::size_t>> blocks;
  };
  std::vector<inbox> boxes(threads);
  std::atomic<int> bad{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      std::uint32_t x = 12345u + static_cast<std::uint32_t>(t);
      for (int r = 0; r < rounds; ++r) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        const std::size_t n = 16 + x % 2000;
        void* p = mr::allocate(n, 16);
        stamp(p, n, static_cast<unsigned char>(t + 1));
        {
          const std::lock_guard<std::mutex> lock(boxes[(t + 1) % threads].m);
          boxes[(t + 1) % threads].blocks.emplace_back(p, n);
        }
        std::vector<std::pair<void*, std::size_t>> mine;
        {
          const std::lock_guard<std::mutex> lock(boxes[t].m);
          mine.swap(boxes[t].blocks);
        }
        const auto from = static_cast<unsigned char>((t + threads - 1) % threads + 1);
        for (auto [q, m] : mine) {
          bad += stamped(q, m, from) ? 0 : 1;
          mr::free(q);
        }
      }
    });
  }
  for (std::thread& t : ts) {
    t.join();
  }
  for (inbox& b : boxes) {
    for (auto [q, m] : b.blocks) {
      mr::free(q);
    }
  }
  EXPECT_EQ(bad.load(), 0);
}

namespace dt = memkit::detail::thread;

/// Allocates as many blocks of `size` bytes as are on the free list of `c`, the calling thread's
/// current chunk of their class (counted from the chunk's invariant, where `used` counts one more
/// for the current chunk's pin), which must come from it, then as many as `kept` holds, which must
/// be exactly those (a heap hands out the foreign blocks it keeps before it carves more of its
/// current chunk), and frees them all.
void expect_kept_after_the_free_list(const dt::chunk* c, std::size_t size,
                                     const std::set<void*>& kept) {
  const std::size_t listed = c->capacity + 1 - c->used - c->fresh.remaining() / c->block_size;
  std::vector<void*> got(listed + kept.size());
  for (void*& p : got) {
    p = mr::allocate(size, 16);
  }
  EXPECT_EQ(std::count_if(got.begin(), got.begin() + static_cast<std::ptrdiff_t>(listed),
                          [&](void* p) { return dt::chunk_of(p) == c; }),
            static_cast<std::ptrdiff_t>(listed))
      << size << ": the current chunk's free blocks first";
  EXPECT_EQ(std::set<void*>(got.begin() + static_cast<std::ptrdiff_t>(listed), got.end()), kept)
      << size << ": then the kept ones";
  for (void* p : got) {
    mr::free(p);
  }
}

// A thread that frees blocks another thread allocated, of a class it allocates itself, keeps them
// and hands them out again once its current chunk's free list runs dry, before it carves more:
// up to 1 KiB from the fast path (process_heap::pop_small), above it from allocate_slow.
TEST(ReplacementEngine, BlocksOfOtherThreadsFreedHereAreHandedOutAgain) {
  if (debug_run()) {
    GTEST_SKIP() << "debug mode keeps freed blocks in quarantine";
  }
  // The thread may adopt an exited thread's heap, whose current chunk's free list holds any
  // number of blocks: the test counts them (an assumed bound of a page's worth failed on another
  // machine, 3 of 32 back). trim first sends home what exited threads' heaps keep, so the heap
  // keeps no block of the class yet.
  mr::trim();
  std::thread([] {
    for (const std::size_t size : {64, 2000}) {
      void* const first = mr::allocate(size, 16);
      mr::free(first); // this thread's heap has a current chunk of the class: `first`'s
      const dt::chunk* const current = dt::chunk_of(first);
      std::vector<void*> theirs(32);
      std::thread([&] {
        for (void*& p : theirs) {
          p = mr::allocate(size, 16);
        }
      }).join();
      for (void* p : theirs) {
        mr::free(p);
      }
      expect_kept_after_the_free_list(current, size, std::set<void*>(theirs.begin(), theirs.end()));
    }
  }).join();
}

/// A thread that allocates 32 blocks of `size` bytes (`theirs`), then waits until `come_back()`
/// is called, then allocates two chunks' worth and more, so that its current chunk runs dry and
/// it takes what was sent home, and counts how many of its 32 it got back (`back()`). Before it,
/// trim sends home what exited threads' heaps keep: the heap the thread adopts keeps no block of
/// the class, so its 32 are its own.
class owner_thread {
public:
  explicit owner_thread(std::size_t size) : size_(size) {
    mr::trim();
    t_ = std::thread([this] {
      for (void*& p : theirs) {
        p = mr::allocate(size_, 16);
      }
      step_ = 1;
      while (step_.load() != 2) {
        std::this_thread::yield();
      }
      const std::set<void*> sent(theirs.begin(), theirs.end());
      std::vector<void*> mine(2 * memkit::detail::thread::chunk_size / size_ + theirs.size());
      for (void*& p : mine) {
        p = mr::allocate(size_, 16);
        back_ += sent.count(p);
      }
      for (void* p : mine) {
        mr::free(p);
      }
    });
    while (step_.load() != 1) {
      std::this_thread::yield();
    }
  }
  owner_thread(const owner_thread&) = delete;
  owner_thread& operator=(const owner_thread&) = delete;
  ~owner_thread() {
    if (t_.joinable()) {
      come_back();
    }
  }

  /// \effects lets the thread allocate again and waits for it.
  void come_back() {
    step_ = 2;
    t_.join();
  }
  std::size_t back() const { return back_; }

  std::vector<void*> theirs = std::vector<void*>(32);

private:
  std::size_t size_;
  std::atomic<int> step_{0};
  std::size_t back_ = 0;
  std::thread t_;
};

// Kept blocks of a class this thread then does not allocate go home at its next tick (every
// frees_per_tick frees) instead of waiting in its heap until it exits: their owner, still
// running, gets them back once its current chunk runs dry.
TEST(ReplacementEngine, KeptBlocksOfAClassNotAllocatedHereGoHomeAtTheNextTick) {
  if (debug_run()) {
    GTEST_SKIP() << "debug mode keeps freed blocks in quarantine";
  }
  for (const std::size_t size : {64, 2000}) {
    owner_thread owner(size);
    mr::free(mr::allocate(size, 16)); // this thread's heap has a current chunk of the class
    for (void* p : owner.theirs) {
      mr::free(p); // kept here
    }
    // Two ticks' worth of frees of another class: the first may follow a hand-out of the class,
    // the second cannot.
    for (unsigned i = 0; i < 2 * mr::frees_per_tick + 1; ++i) {
      mr::free(mr::allocate(200, 16));
    }
    owner.come_back();
    EXPECT_EQ(owner.back(), owner.theirs.size()) << size;
  }
}

// What a thread kept of other threads' blocks stays with its heap when it exits: the next thread
// that adopts that heap (here by freeing a block of it first, depot::adopt_or_make) hands those
// blocks out once its current chunk's free list runs dry, before it carves new memory, where sent
// home they would wait for an owner that may never allocate again. trim (malloc_trim) sends what
// exited threads' heaps keep home; the owner, still running, gets it back once its current chunk
// runs dry.
TEST(ReplacementEngine, WhatAnExitedThreadKeptGoesToItsHeapsNextThreadOrHomeOnTrim) {
  if (debug_run()) {
    GTEST_SKIP() << "debug mode keeps freed blocks in quarantine";
  }
  for (const std::size_t size : {64, 2000}) {
    owner_thread owner(size);
    const std::set<void*> kept(owner.theirs.begin(), owner.theirs.end());
    void* left = nullptr; // live when the keeping thread exits, in its current chunk of the class
    std::thread([&] {
      mr::free(mr::allocate(size, 16)); // a current chunk of the class: the thread keeps blocks
      left = mr::allocate(size, 16);
      for (void* p : owner.theirs) {
        mr::free(p);
      }
    }).join();
    std::thread([&] {
      const dt::chunk* const current = dt::chunk_of(left);
      mr::free(left); // this thread's first call: it adopts the heap that owns `left`
      // Freed again at the end: kept again, and left with the heap at the exit.
      expect_kept_after_the_free_list(current, size, kept);
    }).join();
    mr::trim();
    owner.come_back();
    EXPECT_EQ(owner.back(), kept.size()) << size;
  }
}

TEST(ReplacementEngine, ShortLivedThreadsReuseHeapsAndTheirBlocksFreeLater) {
  std::vector<void*> left;
  std::mutex m;
  for (int wave = 0; wave < 250; ++wave) {
    std::vector<std::thread> ts;
    for (int t = 0; t < 4; ++t) {
      ts.emplace_back([&] {
        void* kept[8];
        for (void*& p : kept) {
          p = mr::allocate(48, 16);
          stamp(p, 48, 0x5a);
        }
        for (int i = 0; i < 8; ++i) {
          mr::free(mr::allocate(200, 16));
        }
        const std::lock_guard<std::mutex> lock(m);
        left.insert(left.end(), std::begin(kept), std::end(kept));
      });
    }
    for (std::thread& t : ts) {
      t.join();
    }
  }
  for (void* p : left) {
    EXPECT_TRUE(stamped(p, 48, 0x5a));
    mr::free(p);
  }
  // 1000 threads, at most 4 at once (plus this one and the earlier tests' threads): exited
  // threads' heaps are adopted, not multiplied.
  EXPECT_LE(stats_field("heaps"), 12u);
}

TEST(ReplacementEngine, AThreadThatOnlyFreesBindsOneHeap) {
  std::vector<void*> blocks;
  for (int i = 0; i < 20000; ++i) {
    blocks.push_back(mr::allocate(64, 16));
  }
  const std::size_t heaps = stats_field("heaps");
  std::thread consumer([&] {
    for (void* p : blocks) {
      mr::free(p); // every free remote, and this thread never allocates
    }
  });
  consumer.join();
  EXPECT_LE(stats_field("heaps"), heaps + 1);
}

// A thread without a heap allocates and frees through no_heap, the heap me.heap holds until the
// engine binds one: its fast paths must miss on it and never write it, whichever call comes first.
TEST(ReplacementEngine, NoHeapStaysEmptyWhateverAThreadWithoutAHeapCallsFirst) {
  std::vector<void*> blocks;
  for (int i = 0; i < 64; ++i) {
    blocks.push_back(mr::allocate(16 + 16 * static_cast<std::size_t>(i), 16));
    stamp(blocks.back(), 16, static_cast<unsigned char>(i));
  }
  for (int first = 0; first < 4; ++first) {
    std::thread([&] {
      EXPECT_FALSE(mr::has_heap());
      void* own = nullptr;
      if (first == 0) {
        own = mr::allocate(24, 16); // a class of the direct table
      } else if (first == 1) {
        own = mr::allocate(3000, 16); // a class above it
      } else if (first == 2) {
        own = mr::allocate(1 << 20, 16); // a large block
      } else {
        for (int i = 0; i < 16; ++i) { // another thread's blocks, freed first
          EXPECT_TRUE(
              stamped(blocks[static_cast<std::size_t>(i)], 16, static_cast<unsigned char>(i)));
          mr::free(blocks[static_cast<std::size_t>(i)]);
        }
        own = mr::allocate(24, 16);
      }
      ASSERT_NE(own, nullptr);
      stamp(own, 24, 3);
      // A large block needs no heap: the engine binds one for the others, in fast mode.
      EXPECT_EQ(mr::has_heap(), first != 2 && !debug_run()) << "first call " << first;
      mr::free(own);
    }).join();
  }
  for (std::size_t i = 16; i < blocks.size(); ++i) {
    mr::free(blocks[i]);
  }
  const mr::thread_heap& none = mr::no_heap;
  for (const auto& b : none.bins) {
    EXPECT_EQ(b.current, &dt::empty_chunk);
    EXPECT_TRUE(b.partial.empty());
  }
  for (const dt::chunk* d : none.direct) {
    EXPECT_EQ(d, &dt::empty_chunk);
  }
  for (std::size_t cls = 0; cls < std::size(none.foreign); ++cls) {
    EXPECT_TRUE(none.foreign[cls].list.empty());
    EXPECT_EQ(none.foreign_count[cls], 0u);
    EXPECT_FALSE(none.foreign_taken[cls]);
  }
  EXPECT_EQ(none.spare, nullptr);
}

TEST(ReplacementEngine, AClassesFirstChunkHoldsOnlyThePagesItCarvesNotThoseOfItsLastClass) {
  if (debug_run()) {
    GTEST_SKIP() << "debug mode keeps freed blocks in quarantine";
  }
  const auto resident_pages = [](const char* base) {
    unsigned char vec[dt::chunk_size / memkit::page_size] = {};
    EXPECT_EQ(::mincore(const_cast<char*>(base), dt::chunk_size, vec), 0);
    std::size_t resident = 0;
    for (const unsigned char v : vec) {
      resident += v & 1u;
    }
    return resident;
  };
  // On one thread, so that the chunks it takes next are the ones it filled: its spares, then the
  // depot's newest. (A second thread took chunks earlier tests had left in the depot or in the
  // heap it adopted when the tests ran in another order, --gtest_shuffle.)
  std::thread([&] {
    // 40 chunks and more of 512-byte blocks, every page written, then freed: filling them took
    // the heap's spares first, so its spares and the depot's newest are those chunks now.
    std::set<const char*> filled;
    std::vector<void*> blocks;
    for (int i = 0; i < 5000; ++i) {
      blocks.push_back(mr::allocate(512, 16));
      stamp(blocks.back(), 512, 7);
      filled.insert(dt::base_of(dt::chunk_of(blocks.back())));
    }
    for (void* p : blocks) {
      mr::free(p);
    }
    ASSERT_GE(filled.size(), 40u);
    // A class this thread's heap (an exited thread's, adopted, may be) holds no chunk or kept
    // block of, of over a page.
    const mr::thread_heap* const mine = mr::the_process_heap.load()->current_heap();
    ASSERT_NE(mine, nullptr);
    std::size_t size = 7000;
    const auto served = [&](std::size_t n) {
      const std::size_t cls = memkit::detail::class_index(n);
      const auto& b = mine->bins[cls];
      return b.current != &dt::empty_chunk || !b.partial.empty() || mine->foreign_count[cls] != 0;
    };
    while (size > memkit::page_size && served(size)) {
      size -= 128;
    }
    ASSERT_GT(size, memkit::page_size) << "the heap serves every class above a page";
    // Its first block takes one of the filled chunks, and with it only the pages it carves: the
    // header's and its block's first.
    blocks = {mr::allocate(size, 16)};
    const char* const first = dt::base_of(dt::chunk_of(blocks[0]));
    EXPECT_EQ(filled.count(first), 1u) << "a chunk this thread filled";
    EXPECT_LE(resident_pages(first), 2u);
    // The class fills that chunk; the next one it takes keeps its pages, which it will carve.
    while (dt::base_of(dt::chunk_of(blocks.back())) == first) {
      blocks.push_back(mr::allocate(size, 16));
    }
    const char* const second = dt::base_of(dt::chunk_of(blocks.back()));
    EXPECT_EQ(filled.count(second), 1u);
    EXPECT_EQ(resident_pages(second), dt::chunk_size / memkit::page_size);
    for (void* p : blocks) {
      stamp(p, size, 9);
    }
    for (void* p : blocks) {
      EXPECT_TRUE(stamped(p, size, 9));
      mr::free(p);
    }
  }).join();
}

TEST(ReplacementEngine, TrimGivesFreedChunksBackToTheOs) {
  if (debug_run()) {
    GTEST_SKIP() << "debug mode keeps freed blocks in quarantine";
  }
  std::vector<void*> blocks;
  for (int i = 0; i < 100000; ++i) {
    blocks.push_back(mr::allocate(300, 16));
    stamp(blocks.back(), 300, 1);
  }
  for (void* p : blocks) {
    mr::free(p);
  }
  // 30 MB of blocks: all but the heap's few spare chunks are in the depot now.
  EXPECT_GE(mr::trim(), std::size_t{20} << 20);
  EXPECT_EQ(mr::trim(), 0u) << "nothing left to give";
}

TEST(ReplacementEngine, FreedRegionsAreKeptResidentServeLaterRequestsAndTrimGivesThemBack) {
  if (debug_run()) {
    GTEST_SKIP() << "debug mode keeps freed blocks in quarantine";
  }
  constexpr std::size_t mib = std::size_t{1} << 20;
  mr::trim(); // no region kept from the tests before
  const std::size_t before = stats_field("mapped_bytes");
  void* blocks[3];
  for (int i = 0; i < 3; ++i) {
    blocks[i] = mr::allocate(30 * mib, 16);
    ASSERT_NE(blocks[i], nullptr);
    stamp(blocks[i], 30 * mib, static_cast<unsigned char>(0x31 + i));
  }
  const std::size_t with_blocks = stats_field("mapped_bytes");
  EXPECT_GE(with_blocks, before + 90 * mib);
  for (void* p : blocks) {
    mr::free(p);
  }
  if (no_arena_run()) { // no address space for the region heap: each region was unmapped
    EXPECT_LE(stats_field("mapped_bytes"), before + mib);
    return;
  }
  // 90 MiB is above the 64 MiB floor but what the regions held at their peak: all kept (and
  // more, if a free span the tests before left decommitted joined one and was recommitted).
  const std::size_t kept = stats_field("mapped_bytes");
  EXPECT_GE(kept, with_blocks) << "a freed region was decommitted";
  void* again = mr::allocate(20 * mib, 16);
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(stats_field("mapped_bytes"), kept) << "no new memory for a kept region";
  stamp(again, 20 * mib, 0x41);
  mr::free(again);
  // What the 100 ms delay has not given back yet (under a sanitizer the writes above can outlast
  // it), trim does.
  mr::trim();
  EXPECT_LE(stats_field("mapped_bytes"), before + mib) << "more than the chunk map's new nodes";
}

// The region heap of an upstream of its own (its address space stays reserved when the test ends;
// purge gives its memory back).
class RegionHeap : public ::testing::Test {
protected:
  static constexpr std::size_t mib = std::size_t{1} << 20;
  static constexpr std::size_t chunk = memkit::detail::thread::chunk_size;

  void SetUp() override {
    if (no_arena_run()) {
      GTEST_SKIP() << "16 GiB of address space cannot hold the region heap";
    }
  }
  void TearDown() override { u->purge(true); }

  unsigned char* take(std::size_t bytes, unsigned char fill) {
    auto* p = static_cast<unsigned char*>(u->try_allocate(bytes, chunk));
    if (p != nullptr) {
      stamp(p, bytes, fill);
    }
    return p;
  }
  void give(void* p, std::size_t bytes) { u->deallocate(p, bytes, chunk); }
  static std::size_t carved(std::size_t bytes) {
    return mr::os_upstream::heap_size(mr::os_upstream::region_size(bytes));
  }

  std::unique_ptr<mr::os_upstream> u = std::make_unique<mr::os_upstream>();
};

TEST_F(RegionHeap, RegionsAreCarvedOneAfterAnotherAndFreedNeighboursServeALargerRequest) {
  const std::size_t r = carved(30 * mib);
  unsigned char* a = take(30 * mib, 1);
  unsigned char* b = take(30 * mib, 2);
  unsigned char* c = take(30 * mib, 3);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(b, a + r);
  EXPECT_EQ(c, b + r);
  EXPECT_TRUE(memkit::detail::is_aligned(a, chunk));
  const std::size_t mapped = u->mapped();
  give(a, 30 * mib);
  give(b, 30 * mib);
  // Neither freed region holds 50 MiB; joined, they do, where they lie, with their pages.
  unsigned char* d = take(50 * mib, 4);
  EXPECT_EQ(d, a);
  EXPECT_EQ(u->mapped(), mapped) << "no new memory for the joined span";
  EXPECT_TRUE(stamped(c, 30 * mib, 3)) << "a live neighbour was overwritten";
  EXPECT_TRUE(stamped(d, 50 * mib, 4));
  give(d, 50 * mib);
  give(c, 30 * mib);
  EXPECT_EQ(take(90 * mib, 5), a) << "all three joined";
  give(a, 90 * mib);
}

TEST_F(RegionHeap, ARequestLargerThanEveryFreeSpanGrowsTheOneAtTheTop) {
  unsigned char* a = take(20 * mib, 1);
  unsigned char* b = take(20 * mib, 2);
  ASSERT_NE(b, nullptr);
  const std::size_t mapped = u->mapped();
  give(b, 20 * mib);
  unsigned char* c = take(30 * mib, 3);
  EXPECT_EQ(c, b) << "the free span at the top is the new region's first part";
  EXPECT_EQ(u->mapped(), mapped + carved(30 * mib) - carved(20 * mib)) << "only the rest is new";
  EXPECT_TRUE(stamped(a, 20 * mib, 1));
  give(a, 20 * mib);
  give(c, 30 * mib);
}

TEST_F(RegionHeap, ARegionGrowsWhereItLiesIntoTheFreeSpanAfterItOrAtTheTopAndNotOverALiveOne) {
  unsigned char* a = take(8 * mib, 1);
  unsigned char* b = take(8 * mib, 2);
  unsigned char* c = take(8 * mib, 3);
  ASSERT_NE(c, nullptr);
  // b's neighbour c is live: b cannot grow past its own region, and nothing changes.
  const std::size_t mapped = u->mapped();
  EXPECT_FALSE(u->grow_region(b, 8 * mib, 9 * mib));
  EXPECT_TRUE(u->grow_region(b, 8 * mib, 8 * mib)) << "no growth needed";
  EXPECT_EQ(u->mapped(), mapped);
  // c is at the top: it grows there, its new pages usable.
  ASSERT_TRUE(u->grow_region(c, 8 * mib, 20 * mib));
  EXPECT_EQ(u->mapped(), mapped + carved(20 * mib) - carved(8 * mib));
  stamp(c, 20 * mib, 3);
  // b freed: a grows into the span it left, whose rest stays free for a later request.
  give(b, 8 * mib);
  ASSERT_TRUE(u->grow_region(a, 8 * mib, 12 * mib));
  stamp(a, 12 * mib, 1);
  unsigned char* d = take(carved(16 * mib) - carved(12 * mib), 4);
  EXPECT_EQ(d, a + carved(12 * mib)) << "the rest of b's span";
  EXPECT_TRUE(stamped(a, 12 * mib, 1));
  EXPECT_TRUE(stamped(c, 20 * mib, 3));
  give(d, carved(16 * mib) - carved(12 * mib));
  // a grown over the whole span and decommitted ones alike: purge first.
  u->purge(true);
  ASSERT_TRUE(u->grow_region(a, 12 * mib, carved(16 * mib)));
  stamp(a, carved(16 * mib), 5);
  EXPECT_TRUE(stamped(c, 20 * mib, 3));
  give(a, carved(16 * mib));
  give(c, 20 * mib);
  unsigned char* e = take(30 * mib, 6);
  EXPECT_EQ(e, a) << "every byte of both came back as one span";
  give(e, 30 * mib);
}

TEST_F(RegionHeap, FreeSpansAreDecommittedByPurgeAndADecommittedNeighbourJoinsAFreedRegion) {
  const std::size_t start = u->mapped();
  unsigned char* a = take(8 * mib, 1);
  unsigned char* b = take(8 * mib, 2);
  unsigned char* c = take(8 * mib, 3);
  ASSERT_NE(c, nullptr);
  const std::size_t r = carved(8 * mib);
  give(a, 8 * mib);
  EXPECT_EQ(u->purge(false), 0u) << "freed just now: kept for the delay";
  EXPECT_EQ(u->purge(true), r);
  EXPECT_EQ(u->mapped(), start + 2 * r);
  give(b, 8 * mib); // joins a, recommitted
  EXPECT_EQ(u->mapped(), start + 3 * r);
  unsigned char* d = take(16 * mib, 4);
  EXPECT_EQ(d, a);
  EXPECT_TRUE(stamped(d, 16 * mib, 4));
  EXPECT_TRUE(stamped(c, 8 * mib, 3));
  give(d, 16 * mib);
  give(c, 8 * mib);
  EXPECT_EQ(u->purge(true), 3 * r);
  EXPECT_EQ(u->mapped(), start) << "every span given back";
  EXPECT_EQ(take(8 * mib, 5), a) << "the heap shrank to its base";
  give(a, 8 * mib);
}

TEST_F(RegionHeap, FreeSpansStayCommittedUpToTheRegionsPeak) {
  const std::size_t start = u->mapped();
  const std::size_t r40 = carved(40 * mib);
  const std::size_t r60 = carved(60 * mib);
  unsigned char* a = take(40 * mib, 1);
  unsigned char* b = take(40 * mib, 2);
  ASSERT_NE(b, nullptr);
  give(a, 40 * mib);
  EXPECT_EQ(u->purge(true), r40);
  unsigned char* c = take(60 * mib, 3);
  EXPECT_EQ(c, b + r40) << "no free span holds it: the heap grows above b";
  // The regions' peak is b and c, 100 MiB: 1.25 times that is above the 64 MiB floor, so it is
  // the bound.
  const std::size_t bound = (r40 + r60) + (r40 + r60) / 4;
  give(b, 40 * mib);
  EXPECT_EQ(u->mapped(), start + 2 * r40 + r60) << "b joined a, recommitted: 80 MiB, kept";
  give(c, 60 * mib);
  EXPECT_EQ(u->mapped(), start + bound) << "140 MiB free: the top 15 MiB decommitted";
  EXPECT_EQ(take(100 * mib, 4), a) << "the rest kept, where it was";
  EXPECT_EQ(u->mapped(), start + bound);
  give(a, 100 * mib);
}

TEST_F(RegionHeap, AlignmentsAboveAChunkAndRegionsBeyondTheTableAreMappedOnTheirOwn) {
  const std::size_t mapped = u->mapped();
  void* aligned = u->try_allocate(4 * mib, 4 * mib);
  ASSERT_NE(aligned, nullptr);
  EXPECT_TRUE(memkit::detail::is_aligned(aligned, 4 * mib));
  stamp(aligned, 4 * mib, 7);
  u->deallocate(aligned, 4 * mib, 4 * mib);
  EXPECT_EQ(u->mapped(), mapped) << "unmapped when freed";

  // The table holds the free spans between live regions: max_spans - 1 regions live in the heap
  // at most, the next one is mapped elsewhere.
  std::vector<unsigned char*> live;
  for (std::size_t i = 0; i + 1 < mr::os_upstream::max_spans; ++i) {
    live.push_back(static_cast<unsigned char*>(u->try_allocate(2 * chunk, chunk)));
    ASSERT_NE(live.back(), nullptr);
    EXPECT_EQ(live.back(), live.front() + i * 2 * chunk);
  }
  auto* outside = static_cast<unsigned char*>(u->try_allocate(2 * chunk, chunk));
  ASSERT_NE(outside, nullptr);
  EXPECT_GE(memkit::detail::address(outside) - memkit::detail::address(live.front()),
            mr::os_upstream::region_heap_size);
  stamp(outside, 2 * chunk, 9);
  u->deallocate(outside, 2 * chunk, chunk);
  // Every other one freed: as many free spans as live regions, and all usable again. The heap
  // takes the most recently freed of equal spans first, by a clock that ticks every few
  // milliseconds, so the upper half, freed more than a tick after the lower, comes back first.
  const std::uintptr_t base = memkit::detail::address(live.front());
  const std::size_t half = live.size() / 4 * 2; // even, as the indices of the regions freed
  for (std::size_t i = 0; i < live.size(); i += 2) {
    if (i == half) {
      std::this_thread::sleep_for(std::chrono::milliseconds(12));
    }
    u->deallocate(live[i], 2 * chunk, chunk);
  }
  for (std::size_t i = 0; i < live.size(); i += 2) {
    errno = 0; // a failed mprotect, if the heap could not recommit a span, leaves its errno
    void* p = u->try_allocate(2 * chunk, chunk);
    const int error = errno;
    EXPECT_LT(memkit::detail::address(p) - base, mr::os_upstream::max_spans * 2 * chunk)
        << "a freed span reused (re-allocation " << i / 2 << ", errno " << error << ", "
        << u->mapped() << " bytes mapped)";
    if (i == 0) {
      EXPECT_GE(memkit::detail::address(p) - base, half * 2 * chunk)
          << "the first re-allocation takes a span of the upper half, the most recently freed";
    }
    live[i] = static_cast<unsigned char*>(p);
  }
  for (unsigned char* p : live) {
    u->deallocate(p, 2 * chunk, chunk);
  }
}

// Making an upstream, or moving one that reserved nothing (the process heap's engine takes its
// upstream so), leaves its 32 KiB table of free spans unwritten: the process heap's stays out of
// resident memory until the region heap needs it. Both are made, value-initialized (which would
// zero a defaulted constructor's object first), in fresh pages, which only a write makes resident.
TEST(RegionHeapLifetime, MakingOrMovingAnUpstreamLeavesItsSpanTableUnwritten) {
  const std::size_t bytes = memkit::detail::round_up(sizeof(mr::os_upstream), memkit::page_size);
  const auto fresh = [&] {
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    EXPECT_NE(p, MAP_FAILED);
    return p;
  };
  const auto resident_pages = [&](void* p) {
    std::vector<unsigned char> vec(bytes / memkit::page_size);
    EXPECT_EQ(::mincore(p, bytes, vec.data()), 0);
    return static_cast<std::size_t>(
        std::count_if(vec.begin(), vec.end(), [](unsigned char v) { return (v & 1u) != 0; }));
  };
  // The table's whole pages (32 KiB, at least 7 of them) must stay out.
  const std::size_t table_pages =
      mr::os_upstream::max_spans * 4 * sizeof(void*) / memkit::page_size; // 4 words a span
  void* const first = fresh();
  void* const second = fresh();
  auto* const a = ::new (first) mr::os_upstream();
  EXPECT_LE(resident_pages(first), bytes / memkit::page_size - (table_pages - 1));
  auto* const b = ::new (second) mr::os_upstream(std::move(*a));
  EXPECT_LE(resident_pages(second), bytes / memkit::page_size - (table_pages - 1));
  void* const p =
      b->try_allocate(2 * memkit::detail::thread::chunk_size, memkit::detail::thread::chunk_size);
  ASSERT_NE(p, nullptr) << "the moved upstream works";
  b->deallocate(p, 2 * memkit::detail::thread::chunk_size, memkit::detail::thread::chunk_size);
  b->~os_upstream();
  a->~os_upstream();
  ::munmap(first, bytes);
  ::munmap(second, bytes);
}

// An upstream gives back the address space it reserved when it is destroyed: 5,000 of them, one
// after another, reserve 160 TiB of region heaps in all, more than a process's 128 TiB (and far
// more than a sanitizer leaves it), yet each carves its regions from its own heap, one after
// another. Kept reserved, the heaps run out after about 4,000 (under TSan after a few).
TEST(RegionHeapLifetime, AnUpstreamGivesItsAddressSpaceBackWhenDestroyed) {
  if (no_arena_run()) {
    GTEST_SKIP() << "16 GiB of address space cannot hold the region heap";
  }
  constexpr std::size_t chunk = memkit::detail::thread::chunk_size;
  for (int i = 0; i < 5000; ++i) {
    const auto u = std::make_unique<mr::os_upstream>();
    auto* const a = static_cast<char*>(u->try_allocate(2 * chunk, chunk));
    auto* const b = static_cast<char*>(u->try_allocate(2 * chunk, chunk));
    ASSERT_NE(a, nullptr);
    ASSERT_NE(b, nullptr);
    ASSERT_EQ(b, a + 2 * chunk) << "upstream " << i << " could not reserve its region heap";
    u->deallocate(a, 2 * chunk, chunk);
    u->deallocate(b, 2 * chunk, chunk);
  }
}

TEST(ReplacementEngine, ARegionsBlockStartsOnAPageOfItsOwn) {
  if (debug_run()) {
    GTEST_SKIP() << "debug mode's guard sits before the block";
  }
  for (const std::size_t alignment : {std::size_t{16}, std::size_t{64}, std::size_t{8192}}) {
    auto* p = static_cast<unsigned char*>(mr::allocate(100000, alignment));
    ASSERT_NE(p, nullptr);
    EXPECT_TRUE(memkit::detail::is_aligned(p, alignment < 4096 ? 4096 : alignment)) << alignment;
    const memkit::detail::thread::chunk* c = mr::the_process_heap.load()->find(p);
    ASSERT_NE(c, nullptr);
    EXPECT_LT(reinterpret_cast<const unsigned char*>(c + 1), p) << "the header before the block";
    EXPECT_GE(mr::usable_size_of(p), 100000u);
    stamp(p, 100000, 5);
    EXPECT_TRUE(stamped(p, 100000, 5));
    mr::free(p);
  }
}

TEST(ReplacementEngine, ALargeBlockGrowsInPlaceIntoFreeAddressSpaceAndMovesOtherwise) {
  if (no_arena_run() || debug_run()) {
    GTEST_SKIP() << "no region heap in 16 GiB of address space; debug mode's guards move blocks";
  }
  auto& h = mr::made_process_heap();
  constexpr std::size_t mib = std::size_t{1} << 20;
  void* const p = mr::allocate(12 * mib, 16);
  ASSERT_NE(p, nullptr);
  stamp(p, 12 * mib, 0x21);
  memkit::detail::thread::chunk* const c = h.find(p);
  ASSERT_NE(c, nullptr);
  // A block whose region the next one follows (the region heap's own tests place them; here
  // earlier tests' free spans may) moves rather than grow over it.
  void* const q = mr::allocate(12 * mib, 16);
  const auto end = memkit::detail::address(memkit::detail::thread::base_of(c)) +
                   mr::os_upstream::heap_size(mr::os_upstream::region_size(c->bytes));
  if (memkit::detail::address(memkit::detail::thread::base_of(h.find(q))) == end) {
    EXPECT_FALSE(h.resize_in_place(p, c, 40 * mib)) << "a live neighbour: the block moves";
  }
  mr::free(q);
  // With the address space after it free, it grows where it lies, 16 MiB at a time.
  for (std::size_t n = 16 * mib; n <= 64 * mib; n += 16 * mib) {
    ASSERT_TRUE(h.resize_in_place(p, c, n)) << n;
    EXPECT_EQ(mr::usable_size_of(p), n);
    EXPECT_EQ(h.find(static_cast<char*>(p) + n - 1), c) << "its new bytes are found as its own";
    stamp(static_cast<char*>(p) + n - 16 * mib, 16 * mib, 0x21);
  }
  EXPECT_TRUE(stamped(p, 64 * mib, 0x21));
  EXPECT_TRUE(h.owns(static_cast<char*>(p) + 64 * mib - 1));
  mr::free(p);
  EXPECT_EQ(h.find(static_cast<char*>(p) + 40 * mib), nullptr) << "every window forgotten";
}

TEST(ReplacementEngine, FreeingALargeBlockForgetsOnlyItsOwnRegion) {
  if (debug_run()) {
    GTEST_SKIP() << "debug mode's guards move the blocks off the regions' window bounds";
  }
  // Blocks whose regions are two windows of the chunk map exactly (the block follows a page that
  // holds the header), side by side in the region heap: freeing one must leave its neighbours
  // found.
  // A header sits up to header_room bytes into its region, so erasing the map from the header
  // rather than the base forgot the next region's first window. The block starts a page in.
  constexpr std::size_t n = 2 * memkit::detail::thread::chunk_size - memkit::page_size;
  std::vector<unsigned char*> blocks;
  for (int i = 0; i < 64; ++i) {
    blocks.push_back(static_cast<unsigned char*>(mr::allocate(n, 16)));
    ASSERT_NE(blocks.back(), nullptr);
    stamp(blocks.back(), n, static_cast<unsigned char>(i));
  }
  std::size_t neighbours = 0; // live blocks right above a freed one's region
  for (std::size_t i = 0; i < blocks.size(); i += 2) {
    const std::uintptr_t end = memkit::detail::address(blocks[i]) + n;
    for (std::size_t j = 1; j < blocks.size(); j += 2) {
      neighbours += memkit::detail::address(blocks[j]) - end < 2 * memkit::page_size ? 1 : 0;
    }
    mr::free(blocks[i]);
  }
  for (std::size_t i = 1; i < blocks.size(); i += 2) {
    EXPECT_EQ(memkit_owns(blocks[i]), 1) << i;
    EXPECT_EQ(memkit_owns(blocks[i] + n - 1), 1) << i;
    EXPECT_TRUE(stamped(blocks[i], n, static_cast<unsigned char>(i))) << i;
    EXPECT_GE(mr::usable_size_of(blocks[i]), n) << i;
    mr::free(blocks[i]);
  }
  EXPECT_GT(neighbours, 0u) << "no region lay right above another: nothing was checked";
}

TEST(ReplacementEngine, AChunkSizedRegionGivenBackIsReused) {
  if (no_arena_run()) {
    GTEST_SKIP() << "without the arena a chunk-sized region is unmapped like any chunk outside it";
  }
  if (debug_run()) {
    GTEST_SKIP() << "debug mode keeps freed blocks in quarantine";
  }
  // Its region is one chunk of the arena: given back, it must serve the next such request rather
  // than be lost to the arena, which never unmaps.
  constexpr std::size_t n =
      memkit::detail::thread::chunk_size - memkit::detail::thread::header_room;
  void* p = mr::allocate(n, 16);
  ASSERT_NE(p, nullptr);
  EXPECT_LT(memkit::detail::address(p) - mr::fast_arena.load(), mr::os_upstream::arena_size);
  mr::free(p);
  void* q = mr::allocate(n, 16);
  EXPECT_EQ(q, p);
  stamp(static_cast<unsigned char*>(q), n, 3);
  EXPECT_TRUE(stamped(static_cast<unsigned char*>(q), n, 3));
  mr::free(q);
}

TEST(ReplacementEngine, SmallBlocksComeFromTheArenaAndHeadersTakeEveryColour) {
  if (debug_run()) {
    GTEST_SKIP() << "debug mode takes no fast path";
  }
  ASSERT_NE(mr::make_process_heap(), nullptr); // which reserves the arena, if this test runs first
  const std::uintptr_t arena = mr::fast_arena.load();
  if (no_arena_run()) {
    EXPECT_EQ(arena, mr::no_arena) << "16 GiB of address space cannot hold the arena";
  } else {
    ASSERT_NE(arena, mr::no_arena) << "the arena could be reserved here";
  }
  // 8 KiB blocks, 7 a chunk, until the chunks' headers took every colour: chunks the depot holds
  // come first, in whatever order earlier tests freed them (64 chunks' worth did not always do
  // under --gtest_shuffle), then fresh consecutive ones, which take consecutive colours. Each
  // header is found by masking and by the map alike.
  std::vector<void*> blocks;
  std::vector<bool> colour(memkit::detail::thread::colors);
  while (std::count(colour.begin(), colour.end(), false) != 0 && blocks.size() < 1024 * 7) {
    void* p = mr::allocate(8192, 16);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(memkit::detail::address(p) - arena < mr::os_upstream::arena_size, !no_arena_run());
    memkit::detail::thread::chunk* c = memkit::detail::thread::chunk_of(p);
    EXPECT_EQ(mr::the_process_heap.load()->find(p), c);
    EXPECT_GE(static_cast<char*>(p), reinterpret_cast<char*>(c + 1)) << "blocks after the header";
    colour[(memkit::detail::address(c) % memkit::detail::thread::header_room) /
           sizeof(memkit::detail::thread::chunk)] = true;
    blocks.push_back(p);
  }
  for (std::size_t k = 0; k < colour.size(); ++k) {
    EXPECT_TRUE(colour[k]) << "no header of colour " << k;
  }
  for (void* p : blocks) {
    mr::free(p);
  }
}

TEST(ReplacementEngine, BlocksResizeInPlaceWithinTheirClassOrRegion) {
  if (debug_run()) {
    GTEST_SKIP() << "debug blocks always move (realloc): the engine's block sits behind a guard";
  }
  mr::process_heap* h = mr::make_process_heap(); // made here if this test runs first
  ASSERT_NE(h, nullptr);
  void* small = mr::allocate(100, 16);
  void* second = mr::allocate(100, 16); // not its chunk's first block
  memkit::detail::thread::chunk* c = h->find(small);
  ASSERT_EQ(h->find(second), c);
  const std::size_t header_size = c->size;
  EXPECT_TRUE(h->resize_in_place(small, c, mr::usable_size_of(small)));
  EXPECT_TRUE(h->resize_in_place(second, c, 65));
  EXPECT_FALSE(h->resize_in_place(small, c, mr::usable_size_of(small) + 1));
  EXPECT_FALSE(h->resize_in_place(small, c, 10)) << "shrunk below half: moves";
  EXPECT_EQ(c->size, header_size) << "a small chunk's header is not written";
  mr::free(second);
  mr::free(small);
  auto* big = static_cast<unsigned char*>(mr::allocate(100000, 16));
  stamp(big, 100000, 7);
  c = h->find(big);
  ASSERT_TRUE(h->resize_in_place(big, c, 101000)) << "the region's page and grid slack";
  EXPECT_EQ(mr::usable_size_of(big), 101000u);
  stamp(big + 100000, 1000, 7);
  EXPECT_TRUE(stamped(big, 101000, 7));
  // Beyond the region it grows where it lies if the address space after it is free, else it
  // moves (both: ALargeBlockGrowsInPlaceIntoFreeAddressSpaceAndMovesOtherwise).
  const bool grew = h->resize_in_place(big, c, 200000);
  EXPECT_EQ(mr::usable_size_of(big), grew ? 200000u : 101000u);
  EXPECT_TRUE(stamped(big, 101000, 7));
  EXPECT_FALSE(h->resize_in_place(big, c, 20000)) << "below half of it";
  EXPECT_FALSE(h->resize_in_place(big + 16, c, 101000)) << "not the block's start";
  mr::free(big);
}

TEST(ReplacementEngine, ALargeBlockAloneInAChunkGrowsInPlaceToTheChunksEndAndMovesToAClass) {
  if (debug_run()) {
    GTEST_SKIP() << "debug blocks always move (realloc): the engine's block sits behind a guard";
  }
  namespace thread = memkit::detail::thread;
  mr::process_heap* h = mr::make_process_heap(); // made here if this test runs first
  ASSERT_NE(h, nullptr);
  auto* p = static_cast<unsigned char*>(mr::allocate(thread::max_class_size + 1, 16));
  ASSERT_NE(p, nullptr);
  thread::chunk* c = h->find(p);
  ASSERT_TRUE(c->is_large());
  ASSERT_TRUE(thread::large_regions::in_chunk(c)) << "a chunk, not a region mapped for it";
  EXPECT_EQ(thread::chunk_of(p), c);
  const auto room = static_cast<std::size_t>(thread::base_of(c) + thread::chunk_size -
                                             reinterpret_cast<char*>(p));
  stamp(p, thread::max_class_size + 1, 3);
  ASSERT_TRUE(h->resize_in_place(p, c, room)) << "up to the chunk's end";
  EXPECT_EQ(mr::usable_size_of(p), room);
  stamp(p + thread::max_class_size + 1, room - thread::max_class_size - 1, 3);
  EXPECT_TRUE(stamped(p, room, 3));
  EXPECT_FALSE(h->resize_in_place(p, c, room + 1)) << "beyond the chunk";
  EXPECT_FALSE(h->resize_in_place(p + 16, c, room - 16)) << "not the block's start";
  EXPECT_TRUE(h->resize_in_place(p, c, thread::max_class_size + 1))
      << "still too large for a class";
  EXPECT_FALSE(h->resize_in_place(p, c, thread::max_class_size)) << "a class serves it: moves";
  mr::free(p);
}

TEST(ReplacementEngine, RegionSizesStayWithinAnEighthOfTheRequest) {
  for (std::size_t n = 1; n < (std::size_t{1} << 34); n = n * 3 + 7) {
    const std::size_t r = mr::os_upstream::region_size(n);
    EXPECT_GE(r, n);
    EXPECT_EQ(r % memkit::page_size, 0u);
    EXPECT_LE(r, n < 8 * memkit::page_size ? n + memkit::page_size : n + n / 8 + 1) << n;
    EXPECT_EQ(mr::os_upstream::region_size(r), r) << "a region's size maps to itself";
  }
  EXPECT_EQ(mr::os_upstream::region_size(static_cast<std::size_t>(-1)), 0u);
}

TEST(ReplacementEngine, AChildForkedWhileAnotherThreadAllocatesCanAllocate) {
  std::atomic<bool> stop{false};
  std::thread busy([&] {
    while (!stop.load(std::memory_order_relaxed)) {
      mr::free(mr::allocate(20000, 16)); // the depot's lock, taken and released
      mr::free(mr::allocate(64, 16));
    }
  });
  for (int i = 0; i < 20; ++i) {
    const pid_t pid = ::fork();
    ASSERT_NE(pid, -1);
    if (pid == 0) {
      for (int k = 0; k < 1000; ++k) {
        void* p = mr::allocate(static_cast<std::size_t>(16 + k * 37), 16);
        mr::free(mr::allocate(200000, 16));
        mr::free(p);
      }
      ::_exit(0);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  }
  stop = true;
  busy.join();
}

TEST(ReplacementEngine, OptionsAreParsedAndUnknownOnesReported) {
  EXPECT_EQ(mr::parse_options(nullptr).mode, mr::mode_fast);
  EXPECT_EQ(mr::parse_options("").mode, mr::mode_fast);
  EXPECT_EQ(mr::parse_options("stats:1").mode, mr::mode_stats);
  EXPECT_EQ(mr::parse_options("stats:1,debug:1").mode, mr::mode_stats | mr::mode_debug);
  EXPECT_EQ(mr::parse_options("debug:1,debug:0,").mode, mr::mode_fast);
  EXPECT_EQ(mr::parse_options("debug:1").quarantine_bytes, mr::default_quarantine_bytes);
  EXPECT_EQ(mr::parse_options("quarantine:0").quarantine_bytes, 0u);
  EXPECT_EQ(mr::parse_options("quarantine:1000").quarantine_bytes, 1000u);
  EXPECT_EQ(mr::parse_options("quarantine:8k").quarantine_bytes, 8u << 10);
  EXPECT_EQ(mr::parse_options("quarantine:16M").quarantine_bytes, 16u << 20);
  EXPECT_EQ(mr::parse_options("quarantine:2g").quarantine_bytes, std::size_t{2} << 30);
  const mr::runtime_options to_file = mr::parse_options("stats:/tmp/memkit.json,debug:1");
  EXPECT_EQ(to_file.mode, mr::mode_stats | mr::mode_debug);
  EXPECT_STREQ(to_file.stats_path, "/tmp/memkit.json");
  EXPECT_STREQ(mr::parse_options("stats:./s.json,stats:1").stats_path, "") << "the last says";
  EXPECT_EQ(mr::parse_options("stats:./s.json,stats:0").mode, mr::mode_fast);
  testing::internal::CaptureStderr();
  const mr::runtime_options bad = mr::parse_options(
      "bogus:1,stats:2,debug:1,quarantine:12q,quarantine:99999999999999999999,quarantine:");
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(bad.mode, mr::mode_debug);
  EXPECT_EQ(bad.quarantine_bytes, mr::default_quarantine_bytes);
  EXPECT_NE(err.find("unknown option \"bogus:1\""), std::string::npos) << err;
  EXPECT_NE(err.find("bad value (0 or 1; stats: or a path with a '/') in \"stats:2\""),
            std::string::npos)
      << err;
  for (const char* item :
       {"\"quarantine:12q\"", "\"quarantine:99999999999999999999\"", "\"quarantine:\""}) {
    EXPECT_NE(err.find(std::string("bad value (bytes, with k, m or g: KiB, MiB, GiB) in ") + item),
              std::string::npos)
        << err;
  }
  testing::internal::CaptureStderr();
  const std::string long_path = "stats:/" + std::string(2000, 'a');
  EXPECT_EQ(mr::parse_options(long_path.c_str()).mode, mr::mode_fast);
  EXPECT_NE(testing::internal::GetCapturedStderr().find("path too long in"), std::string::npos);
}

TEST(ReplacementEngine, TraceOptionsTakeAPathAndAStackDepth) {
  const mr::runtime_options on = mr::parse_options("trace:/tmp/app.trace,stack:8");
  EXPECT_EQ(on.mode, mr::mode_trace);
  EXPECT_STREQ(on.trace_path, "/tmp/app.trace");
  EXPECT_EQ(on.stack_depth, 8u);
  EXPECT_EQ(mr::parse_options("trace:./a,trace:0").mode, mr::mode_fast) << "the last says";
  EXPECT_EQ(mr::parse_options("trace:./a").stack_depth, 1u);
  testing::internal::CaptureStderr();
  const mr::runtime_options bad =
      mr::parse_options("trace:app.trace,trace:,stack:0,stack:65,stack:x");
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(bad.mode, mr::mode_fast);
  EXPECT_EQ(bad.stack_depth, 1u);
  for (const char* item : {"\"trace:app.trace\"", "\"trace:\""}) {
    EXPECT_NE(err.find(std::string("bad value (0, or a path with a '/') in ") + item),
              std::string::npos)
        << err;
  }
  for (const char* item : {"\"stack:0\"", "\"stack:65\"", "\"stack:x\""}) {
    EXPECT_NE(err.find(std::string("bad value (frames, 1 to 64) in ") + item), std::string::npos)
        << err;
  }
}

TEST(ReplacementEngine, DecayTakesMillisecondsUpToAnHour) {
  EXPECT_EQ(mr::parse_options(nullptr).decay_ms, mr::os_upstream::default_delay_ms);
  EXPECT_EQ(mr::parse_options("decay:0").decay_ms, 0u);
  EXPECT_EQ(mr::parse_options("decay:250").decay_ms, 250u);
  EXPECT_EQ(mr::parse_options("decay:3600000").decay_ms, 3'600'000u);
  testing::internal::CaptureStderr();
  const mr::runtime_options bad =
      mr::parse_options("decay:3600001,decay:1k,decay:-1,decay:,decay:99999999999999999999");
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(bad.decay_ms, mr::os_upstream::default_delay_ms) << "every one refused";
  for (const char* item : {"\"decay:3600001\"", "\"decay:1k\"", "\"decay:-1\"", "\"decay:\"",
                           "\"decay:99999999999999999999\""}) {
    EXPECT_NE(err.find(std::string("bad value (milliseconds, 0 to 3600000) in ") + item),
              std::string::npos)
        << err;
  }
}

TEST(ReplacementEngine, DocsListEveryOptionAsTheTableSays) {
  char table[4096];
  const std::size_t n = mr::write_options_table(table, sizeof table);
  ASSERT_LT(n, sizeof table);
  std::ifstream in(MEMKIT_SOURCE_DIR "/docs/options.md");
  ASSERT_TRUE(in) << "docs/options.md";
  const std::string doc{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  EXPECT_NE(doc.find(table), std::string::npos)
      << "docs/options.md must hold the options table as src/options.cpp makes it:\n"
      << table;
  // Every option the table has is one the parser takes.
  for (std::size_t i = 0; i < mr::option_count; ++i) {
    testing::internal::CaptureStderr();
    mr::parse_options(
        (std::string(mr::options[i].name) + ":" + mr::options[i].default_value).c_str());
    EXPECT_EQ(testing::internal::GetCapturedStderr(), "") << mr::options[i].name;
  }
  testing::internal::CaptureStderr();
  mr::parse_options("bogus:1");
  EXPECT_NE(
      testing::internal::GetCapturedStderr().find(
          "(known: stats:0|1|PATH, debug:0|1, quarantine:BYTES[k|m|g], trace:0|PATH, stack:1..64, "
          "decay:0..3600000)"),
      std::string::npos);
}

TEST(ReplacementEngine, StatsJsonIsOneObjectAndTruncatesSafely) {
  char line[512];
  const std::size_t n = memkit_stats_json(line, sizeof line);
  ASSERT_LT(n, sizeof line);
  EXPECT_EQ(std::strlen(line), n);
  EXPECT_EQ(std::string(line).rfind(
                "{\"memkit\":{\"version\":\"" MEMKIT_VERSION_STRING "\",\"allocations\":", 0),
            0u)
      << line;
  EXPECT_EQ(line[n - 1], '}');
  char small[8];
  EXPECT_EQ(memkit_stats_json(small, sizeof small), n);
  EXPECT_EQ(std::strlen(small), sizeof small - 1);
}

// ---- debug:1 (the program's second run) -----------------------------------------------------

std::vector<memkit::misuse_report> reports;
void remember(const memkit::misuse_report& r) { reports.push_back(r); }

class ReplacementDebug : public testing::Test {
protected:
  void SetUp() override {
    if (!debug_run()) {
      GTEST_SKIP() << "runs with MEMKIT_OPTIONS=debug:1 (ctest replacement_engine.debug)";
    }
    reports.clear();
    previous_ = memkit::set_misuse_handler(&remember);
  }
  void TearDown() override {
    if (debug_run()) {
      memkit::set_misuse_handler(previous_);
    }
  }
  memkit::misuse_handler previous_ = nullptr;
};

TEST_F(ReplacementDebug, ADoubleFreeIsReportedWithItsAddress) {
  void* p = mr::allocate(40, 16);
  mr::free(p);
  mr::free(p);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].kind, memkit::misuse::double_free);
  EXPECT_EQ(reports[0].pointer, p);
}

// The quarantine gave the block back to the engine, which links it into a free list through its
// first words: the header, past them, still says FREE.
TEST_F(ReplacementDebug, ADoubleFreeAfterTheQuarantineGaveTheBlockBackIsReported) {
  void* p = mr::allocate(40, 16);
  void* q = mr::allocate(40, 16);
  mr::free(p);
  for (int i = 0; i < 1100; ++i) { // past the quarantine's 1,024 blocks, in another class
    mr::free(mr::allocate(3000, 16));
  }
  mr::free(q); // the chunk's free list now starts at q's block, not p's
  ASSERT_TRUE(reports.empty());
  mr::free(p);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].kind, memkit::misuse::double_free);
  EXPECT_EQ(reports[0].pointer, p);
}

TEST_F(ReplacementDebug, OverrunAndUnderrunAreReportedAndTheBlockKept) {
  auto* p = static_cast<unsigned char*>(mr::allocate(24, 16));
  EXPECT_EQ(mr::usable_size_of(p), 24u) << "debug blocks are exactly their request";
  p[24] = 0;
  mr::free(p);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].kind, memkit::misuse::overrun);
  p[24] = memkit::detail::guard::guard_byte; // the guard again
  p[-20] = 0;
  mr::free(p);
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_EQ(reports[1].kind, memkit::misuse::underrun);
}

// Every byte within 64 of a block, the header's included, changed in turn: each is reported at
// the block's address as an underrun or overrun, and the block, its byte restored, frees cleanly.
TEST_F(ReplacementDebug, EveryByteAroundABlockIsReportedAtItsAddress) {
  for (const std::size_t alignment : {std::size_t{16}, std::size_t{64}, std::size_t{4096}}) {
    for (const std::size_t size : {std::size_t{1}, std::size_t{100}, std::size_t{40000}}) {
      auto* p = static_cast<unsigned char*>(mr::allocate(size, alignment));
      ASSERT_NE(p, nullptr);
      const auto n = static_cast<std::ptrdiff_t>(size);
      for (std::ptrdiff_t offset = -64; offset < n + 64; offset = offset == -1 ? n : offset + 1) {
        reports.clear();
        p[offset] = static_cast<unsigned char>(~p[offset]);
        mr::free(p);
        ASSERT_EQ(reports.size(), 1u) << alignment << " " << size << " " << offset;
        EXPECT_EQ(reports[0].kind, offset < 0 ? memkit::misuse::underrun : memkit::misuse::overrun)
            << alignment << " " << size << " " << offset;
        EXPECT_EQ(reports[0].pointer, p);
        p[offset] = static_cast<unsigned char>(~p[offset]);
      }
      reports.clear();
      mr::free(p);
      EXPECT_TRUE(reports.empty());
    }
  }
}

TEST_F(ReplacementDebug, InteriorPointersAndSizeMismatchesAreReported) {
  auto* p = static_cast<char*>(mr::allocate(256, 64));
  EXPECT_TRUE(memkit::detail::is_aligned(p, 64));
  mr::free(p + 64);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].kind, memkit::misuse::foreign_pointer);
  mr::free_sized(p, 100);
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_EQ(reports[1].kind, memkit::misuse::size_mismatch);
  mr::free_sized(p, 256);
  EXPECT_EQ(reports.size(), 2u);
}

TEST_F(ReplacementDebug, FreshBlocksAreFilledAndFreedOnesWiped) {
  auto* p = static_cast<unsigned char*>(mr::allocate(64, 16));
  EXPECT_TRUE(stamped(p, 64, 0xcd));
  mr::free(p);
  EXPECT_TRUE(stamped(p, 64, 0xdd)) << "in quarantine: wiped, not reused";
  EXPECT_TRUE(reports.empty());
}

} // namespace
