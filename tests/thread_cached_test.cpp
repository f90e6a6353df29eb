// SPDX-License-Identifier: BSL-1.0
// tests/thread_cached_test.cpp: the thread-caching resources (memkit/thread_cached.hpp): their
// single-threaded contracts, and under threads the stress run, producer/consumer, thread churn and
// exhaustion, each with a spy upstream that must get every byte back.
#include "memkit/thread_cached.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "support/locked_spy.hpp"
#include "support/spy_resource.hpp"
#include "support/stress.hpp"

namespace {

using memkit::test::locked_spy;
using spy_ref = memkit::resource_ref<locked_spy>;
using any_size = memkit::thread_cached<spy_ref>;
using fixed_size = memkit::thread_cached_pool<spy_ref>;

// Sanitizers run each operation several times slower; the concurrent tests scale their rounds so
// that every build finishes in seconds and TSan in well under a minute.
#if defined(MEMKIT_TSAN) || defined(MEMKIT_ASAN)
constexpr std::size_t scale = 2;
#else
constexpr std::size_t scale = 1;
#endif

void expect_everything_returned(const locked_spy& spy) {
  EXPECT_EQ(spy.blocks_in_use(), 0u) << "chunks not returned to the upstream";
  const auto errors = spy.errors();
  EXPECT_TRUE(errors.empty()) << (errors.empty() ? "" : errors.front());
}

TEST(ThreadCached, ServesEveryClassAlignedWithAUsableSizeThatCoversTheRequest) {
  locked_spy spy;
  {
    any_size r{spy_ref(spy)};
    for (std::size_t a = 1; a <= memkit::page_size; a *= 2) {
      for (std::size_t n :
           {std::size_t{0}, std::size_t{1}, std::size_t{15}, std::size_t{16}, std::size_t{17},
            std::size_t{100}, std::size_t{129}, std::size_t{500}, std::size_t{1000},
            std::size_t{4095}, std::size_t{4096}, std::size_t{4097}, std::size_t{70000}}) {
        auto* p = static_cast<unsigned char*>(r.allocate(n, a));
        ASSERT_TRUE(memkit::detail::is_aligned(p, a)) << "size " << n << " alignment " << a;
        const std::size_t usable = r.usable_size(p);
        EXPECT_GE(usable, n == 0 ? 1 : n);
        std::memset(p, 0xab, usable);
        EXPECT_TRUE(r.owns(p));
        EXPECT_TRUE(r.owns(p + usable - 1));
        r.deallocate(p, n, a);
      }
    }
  }
  expect_everything_returned(spy);
}

TEST(ThreadCached, UsableSizeIsTheClassSizeForSmallBlocks) {
  locked_spy spy;
  any_size r{spy_ref(spy)};
  for (std::size_t n = 1; n <= r.max_class_size(); n += 7) {
    void* p = r.allocate(n);
    EXPECT_EQ(r.usable_size(p), memkit::detail::class_size(memkit::detail::class_index(n))) << n;
    r.deallocate(p);
  }
}

TEST(ThreadCached, CarvingTouchesOnePageAtATimeBeginningWithTheHeadersPage) {
  namespace thread = memkit::detail::thread;
  using memkit::page_size;
  using memkit::detail::address;
  constexpr std::size_t s = 64; // a class size: its blocks are 64 bytes apart
  locked_spy spy;
  any_size r{spy_ref(spy)};
  std::vector<void*> held{r.allocate(s)};
  const thread::chunk* c = thread::chunk_of(held[0]);
  const std::uintptr_t base = address(thread::base_of(c));
  const auto carved_to = [&] { return address(c->fresh.next()) - base; };
  // Carving links the blocks it carves, writing their first words: only those that begin in the
  // header's page, so one block touches one page.
  EXPECT_GE(carved_to(), page_size);
  EXPECT_LT(carved_to(), page_size + s) << "blocks beginning in the next page carved already";
  const std::size_t in_first_page = (base + page_size - address(c->blocks) + s - 1) / s;
  for (std::size_t i = 1; i < in_first_page; ++i) {
    held.push_back(r.allocate(s));
  }
  EXPECT_LT(carved_to(), page_size + s) << "carved again while carved blocks were free";
  held.push_back(r.allocate(s));
  EXPECT_EQ(thread::chunk_of(held.back()), c);
  EXPECT_GE(carved_to(), 2 * page_size);
  EXPECT_LT(carved_to(), 2 * page_size + s) << "the next page, and no more";
  for (void* p : held) {
    r.deallocate(p, s);
  }
}

TEST(ThreadCached, APartlyUsedChunksFreeBlocksGoOutBeforeTheCurrentChunkCarvesANewPage) {
  namespace thread = memkit::detail::thread;
  using memkit::detail::address;
  constexpr std::size_t s = 64;
  locked_spy spy;
  {
    any_size r{spy_ref(spy)};
    // A first chunk of the class, filled until a block comes from a second one.
    std::vector<void*> held{r.allocate(s)};
    const thread::chunk* first = thread::chunk_of(held[0]);
    while (thread::chunk_of(held.back()) == first) {
      held.push_back(r.allocate(s));
    }
    const thread::chunk* second = thread::chunk_of(held.back());
    const auto carved_to = [&] { return address(second->fresh.next()) - address(second); };
    // A block of the full first chunk comes back: the first is partly used now.
    void* const freed = held[held.size() / 2];
    held[held.size() / 2] = nullptr;
    r.deallocate(freed, s);
    // The second, current, chunk hands out the blocks its carved page holds...
    const std::size_t carved = carved_to();
    while (!second->free.empty()) {
      held.push_back(r.allocate(s));
      ASSERT_EQ(thread::chunk_of(held.back()), second);
    }
    // ...then the freed block of the first rather than a block of a new page.
    held.push_back(r.allocate(s));
    EXPECT_EQ(held.back(), freed);
    EXPECT_EQ(carved_to(), carved)
        << "carved a new page while a freed block waited in another chunk";
    // The first is full again: the second, partly used, is current again and carves its next page.
    held.push_back(r.allocate(s));
    EXPECT_EQ(thread::chunk_of(held.back()), second);
    EXPECT_GT(carved_to(), carved);
    for (void* p : held) {
      if (p != nullptr) {
        r.deallocate(p, s);
      }
    }
  }
  expect_everything_returned(spy);
}

TEST(ThreadCached, FreeWithoutASizeFindsTheBlockFromItsAddress) {
  locked_spy spy;
  {
    any_size r{spy_ref(spy)};
    std::vector<void*> blocks;
    for (std::size_t n = 1; n < 20000; n += 97) {
      blocks.push_back(r.allocate(n, n % 3 == 0 ? 64 : 8));
    }
    for (void* p : blocks) {
      r.deallocate(p);
    }
    if constexpr (memkit::statistics_enabled) {
      EXPECT_EQ(r.stats().blocks_in_use, 0u);
      EXPECT_EQ(r.stats().deallocations, blocks.size());
    }
  }
  expect_everything_returned(spy);
}

TEST(ThreadCached, LargeBlocksHaveARegionOfTheirOwnAndGoBackWhenFreed) {
  locked_spy spy;
  any_size r{spy_ref(spy)};
  const std::size_t before = spy.bytes_in_use();
  void* p = r.allocate(1 << 20, 4096);
  EXPECT_GE(spy.bytes_in_use(), before + (1 << 20));
  EXPECT_EQ(r.usable_size(p), std::size_t{1} << 20);
  EXPECT_TRUE(r.owns(static_cast<char*>(p) + (1 << 20) - 1));
  r.deallocate(p, 1 << 20, 4096);
  // The region is gone; the chunk map may have kept a node it grew to record it (8 or 16 KiB).
  EXPECT_LT(spy.bytes_in_use(), before + (std::size_t{64} << 10));
}

TEST(ThreadCached, RejectsAlignmentsAbovePageSizeAndSizesThatOverflow) {
  locked_spy spy;
  any_size r{spy_ref(spy)};
  EXPECT_THROW((void)r.allocate(64, 2 * memkit::page_size), memkit::bad_alignment);
  EXPECT_EQ(r.try_allocate(64, 3), nullptr);
  EXPECT_THROW((void)r.allocate(SIZE_MAX, 8), memkit::bad_size);
  EXPECT_THROW((void)r.allocate(r.max_size() + 1, 4096), memkit::bad_size);
}

TEST(ThreadCached, ReportsExhaustionAndRecoversWhenTheUpstreamHasMemoryAgain) {
  locked_spy spy(1 << 20);
  any_size r{spy_ref(spy)};
  std::vector<void*> blocks;
  try {
    for (;;) {
      blocks.push_back(r.allocate(256));
    }
  } catch (const memkit::out_of_memory& e) {
    EXPECT_STREQ(e.resource(), "memkit::thread_cached");
    EXPECT_EQ(e.size(), 256u);
  }
  EXPECT_GT(blocks.size(), 1000u) << "the budget holds about 15 chunks";
  EXPECT_EQ(r.try_allocate(256), nullptr);
  for (void* p : blocks) {
    r.deallocate(p, 256);
  }
  void* again = r.allocate(256);
  EXPECT_NE(again, nullptr);
  r.deallocate(again, 256);
}

TEST(ThreadCached, ReportsForeignPointersDoubleFreesAndMismatchedSizes) {
  if constexpr (!memkit::deallocate_checks) {
    GTEST_SKIP() << "the checks run at MEMKIT_DEBUG >= 1";
  }
  locked_spy spy;
  any_size r{spy_ref(spy)};
  memkit::test::misuse_recorder recorder;
  int local = 0;
  r.deallocate(&local, sizeof local);
  r.deallocate(&local);
  EXPECT_EQ(recorder.count(memkit::misuse::foreign_pointer), 2u);

  auto* p = static_cast<char*>(r.allocate(48));
  void* keep = r.allocate(48);
  r.deallocate(p + 16, 48);
  EXPECT_EQ(recorder.count(memkit::misuse::foreign_pointer), 3u) << "not at a block's start";
  r.deallocate(p, 4000);
  EXPECT_EQ(recorder.count(memkit::misuse::size_mismatch), 1u);
  r.deallocate(p, 48, 3);
  EXPECT_EQ(recorder.count(memkit::misuse::alignment_mismatch), 1u);
  r.deallocate(p, 48);
  r.deallocate(p, 48);
  EXPECT_EQ(recorder.count(memkit::misuse::double_free), 1u);

  void* big = r.allocate(100000);
  r.deallocate(big, 99999);
  EXPECT_EQ(recorder.count(memkit::misuse::size_mismatch), 2u);
  r.deallocate(big, 100000);
  r.deallocate(big, 100000);
  EXPECT_EQ(recorder.count(memkit::misuse::foreign_pointer), 4u) << "a large block freed twice";
  r.deallocate(keep);
  EXPECT_EQ(recorder.reports().size(), 8u) << "correct calls report nothing";
}

TEST(ThreadCached, ReportsADoubleFreeOfABlockWaitingToGoBackToItsOwner) {
  if constexpr (!memkit::deallocate_checks) {
    GTEST_SKIP() << "the checks run at MEMKIT_DEBUG >= 1";
  }
  locked_spy spy;
  any_size r{spy_ref(spy)};
  void* p = nullptr;
  std::thread([&] { p = r.allocate(32); }).join();
  memkit::test::misuse_recorder recorder;
  r.deallocate(p, 32);
  r.deallocate(p, 32);
  EXPECT_EQ(recorder.count(memkit::misuse::double_free), 1u);
}

TEST(ThreadCached, OwnsIsExactInConstantTime) {
  locked_spy spy;
  any_size r{spy_ref(spy)};
  int local = 0;
  EXPECT_FALSE(r.owns(&local));
  EXPECT_FALSE(r.owns(nullptr));
  void* p = r.allocate(16);
  EXPECT_TRUE(r.owns(p));
  auto other = std::make_unique<any_size>(spy_ref(spy));
  EXPECT_FALSE(other->owns(p));
  r.deallocate(p, 16);
  r.release();
  EXPECT_FALSE(r.owns(p));
}

TEST(ThreadCached, ReleaseReturnsEveryByteEvenWithBlocksLiveOnExitedThreads) {
  locked_spy spy;
  any_size r{spy_ref(spy)};
  for (int t = 0; t < 4; ++t) {
    std::thread([&] {
      for (int i = 0; i < 1000; ++i) {
        (void)r.allocate(16 + static_cast<std::size_t>(i % 500), 16);
      }
      (void)r.allocate(300000);
    }).join();
  }
  EXPECT_GT(spy.blocks_in_use(), 4u);
  r.release();
  expect_everything_returned(spy);
  void* p = r.allocate(64); // usable again, with a fresh heap for this thread
  r.deallocate(p, 64);
}

TEST(ThreadCached, StatisticsCountEveryCallOfEveryThread) {
  if constexpr (!memkit::statistics_enabled) {
    GTEST_SKIP() << "MEMKIT_STATISTICS is 0";
  }
  locked_spy spy;
  any_size r{spy_ref(spy)};
  void* a = r.allocate(100);
  void* b = nullptr;
  std::thread([&] {
    b = r.allocate(200);
    r.deallocate(a, 100);
  }).join();
  memkit::statistics s = r.stats();
  EXPECT_EQ(s.allocations, 2u);
  EXPECT_EQ(s.deallocations, 1u);
  EXPECT_EQ(s.bytes_in_use, 200u);
  EXPECT_EQ(s.blocks_in_use, 1u);
  EXPECT_EQ(s.upstream_bytes_in_use, spy.bytes_in_use());
  r.deallocate(b, 200);
  EXPECT_EQ(r.try_allocate(1, 8192), nullptr);
  s = r.stats();
  EXPECT_EQ(s.bytes_in_use, 0u);
  EXPECT_EQ(s.failures, 1u);
  EXPECT_EQ(s.peak_blocks_in_use, 1u) << "peaks are sampled when stats() is read";
}

TEST(ThreadCached, InstancesAreKeyedSoADestroyedOnesThreadStateIsNeverUsed) {
  locked_spy spy;
  std::mutex m;
  std::condition_variable cv;
  int phase = 0;
  auto first = std::make_unique<any_size>(spy_ref(spy));
  std::unique_ptr<any_size> second;
  auto wait_for = [&](int p) {
    std::unique_lock<std::mutex> lock(m);
    cv.wait(lock, [&] { return phase >= p; });
  };
  auto advance = [&] {
    const std::lock_guard<std::mutex> lock(m);
    ++phase;
    cv.notify_all();
  };
  // A thread that outlives the first instance, and then uses the second, which may take over the
  // first one's registry slot: its old binding must be seen as stale, not followed.
  std::thread user([&] {
    void* p = first->allocate(64);
    first->deallocate(p, 64);
    advance(); // 1
    wait_for(2);
    for (int i = 0; i < 100; ++i) {
      void* q = second->allocate(64);
      second->deallocate(q, 64);
    }
    advance(); // 3
  });
  wait_for(1);
  first.reset();
  EXPECT_EQ(spy.blocks_in_use(), 0u);
  second = std::make_unique<any_size>(spy_ref(spy));
  advance(); // 2
  wait_for(3);
  EXPECT_EQ(second->heap_count(), 1u);
  user.join();
  second.reset();
  expect_everything_returned(spy);
}

TEST(ThreadCached, MoreInstancesThanRegistrySlotsShareALockedHeap) {
  locked_spy spy;
  {
    std::vector<std::unique_ptr<any_size>> many;
    for (std::size_t i = 0; i < memkit::detail::thread::registry::capacity + 3; ++i) {
      many.push_back(std::make_unique<any_size>(spy_ref(spy)));
    }
    for (auto& r : many) {
      std::vector<void*> blocks;
      for (int i = 0; i < 100; ++i) {
        blocks.push_back(r->allocate(40));
      }
      std::thread([&] {
        for (void* p : blocks) {
          r->deallocate(p, 40);
        }
      }).join();
    }
    if constexpr (memkit::statistics_enabled) {
      EXPECT_GT(many.back()->stats().fallbacks, 0u);
      EXPECT_EQ(many.back()->stats().blocks_in_use, 0u);
    }
    EXPECT_EQ(many.back()->heap_count(), 0u);
  }
  expect_everything_returned(spy);
}

TEST(ThreadCached, ThreadExitReturnsTheCacheToTheDepot) {
  locked_spy spy;
  any_size r{spy_ref(spy)};
  std::thread([&] {
    std::vector<void*> blocks;
    for (int i = 0; i < 20000; ++i) {
      blocks.push_back(r.allocate(64));
    }
    for (void* p : blocks) {
      r.deallocate(p, 64);
    }
  }).join();
  const std::size_t obtained = spy.allocations();
  std::vector<void*> blocks;
  for (int i = 0; i < 20000; ++i) {
    blocks.push_back(r.allocate(32));
  }
  EXPECT_EQ(spy.allocations(), obtained) << "this thread adopts the exited thread's heap and "
                                            "takes every chunk from the depot";
  for (void* p : blocks) {
    r.deallocate(p, 32);
  }
}

TEST(ThreadCached, BlocksFreedAfterTheirOwnerExitedAreReused) {
  locked_spy spy;
  any_size r{spy_ref(spy)};
  // This thread has its own heap, which allocates another class than the blocks it frees below,
  // so it keeps none of them (ForeignBlocksAreKeptWhereTheirClassIsAllocated): they go home.
  r.deallocate(r.allocate(48), 48);
  std::vector<void*> blocks(20000);
  std::thread([&] {
    for (void*& p : blocks) {
      p = r.allocate(64);
    }
  }).join();
  for (void* p : blocks) {
    r.deallocate(p, 64); // to the exited thread's heap, in batches
  }
  const std::size_t obtained = spy.allocations();
  std::thread([&] { // adopts the exited thread's heap
    for (void*& p : blocks) {
      p = r.allocate(64);
    }
    for (void* p : blocks) {
      r.deallocate(p, 64);
    }
  })
      .join();
  std::vector<void*> more(20000);
  for (void*& p : more) {
    p = r.allocate(48); // the main thread's heap takes the chunks from the depot
  }
  EXPECT_EQ(spy.allocations(), obtained);
  EXPECT_EQ(r.heap_count(), 2u);
  for (void* p : more) {
    r.deallocate(p, 48);
  }
}

// Allocates 64-byte blocks from `r` until every block of `sent` came back or a chunk's worth and
// more was handed out, then frees them. \returns how many of `sent` came back.
template <class Resource>
std::size_t allocate_until_back(Resource& r, const std::set<void*>& sent) {
  std::vector<void*> again;
  std::size_t found = 0;
  for (std::size_t i = 0; i < 65536 / 64 + sent.size() && found < sent.size(); ++i) {
    again.push_back(r.allocate(64));
    found += sent.count(again.back());
  }
  for (void* p : again) {
    r.deallocate(p, 64);
  }
  return found;
}

// A thread that allocates a class keeps blocks of that class other threads allocated when it
// frees them, and hands them out before it carves new memory; one that never allocates the class
// sends them home at once; and what an exited thread kept stays with its heap, for the thread that
// adopts it.
/// Runs `first` and `second` on two threads that run side by side, so that each binds a heap of its
/// own, and exit in that order: the heap of `second` is then the newest waiting for adoption.
template <class First, class Second>
void exit_one_after_the_other(First first, Second second) {
  std::atomic<int> step{0};
  const auto await = [&](int s) {
    while (step.load() != s) {
      std::this_thread::yield();
    }
  };
  std::thread a([&] {
    first();
    step = 1;
    await(2);
  });
  std::thread b([&] {
    await(1);
    second();
    step = 2;
    await(3);
  });
  a.join();
  step = 3;
  b.join();
}

/// \returns the 64 KiB chunk `p` lies in.
std::uintptr_t chunk_of(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p) / memkit::detail::thread::chunk_size;
}

TEST(ThreadCached, AThreadWhoseFirstCallFreesAnExitedThreadsBlockAdoptsThatThreadsHeap) {
  locked_spy spy;
  any_size r{spy_ref(spy)};
  void* left = nullptr;
  exit_one_after_the_other([&] { left = r.allocate(64); }, // exits with it live
                           [&] { r.deallocate(r.allocate(32), 32); });
  void* next = nullptr;
  std::thread([&] {
    r.deallocate(left, 64); // this thread's first call: it adopts the heap that owns `left`
    next = r.allocate(64);
  }).join();
  EXPECT_EQ(next, left) << "freed where it lies and handed out again, not sent to a heap "
                           "without a thread while this one carves another chunk";
  r.deallocate(next, 64);
}

TEST(ThreadCached,
     AThreadThatAllocatesFirstAdoptsTheRichestWaitingHeapOneThatFreesFirstThePoorest) {
  // A producer exits with a block of class 64 live: its heap keeps that class's current chunk. A
  // consumer frees a block of this thread (which runs throughout) and allocates nothing: its heap
  // keeps no chunk. Whichever exited last, a thread that allocates first adopts the producer's
  // heap and one that frees first the consumer's.
  for (const bool producer_last : {false, true}) {
    locked_spy spy;
    any_size r{spy_ref(spy)};
    void* const mine[2] = {r.allocate(32), r.allocate(32)};
    void* produced = nullptr;
    const auto produce = [&] { produced = r.allocate(64); };
    const auto consume = [&] { r.deallocate(mine[0], 32); };
    if (producer_last) {
      exit_one_after_the_other(consume, produce);
    } else {
      exit_one_after_the_other(produce, consume);
    }
    void* next = nullptr;
    if (producer_last) {
      std::thread([&] {
        r.deallocate(mine[1], 32);
        next = r.allocate(64);
      }).join();
      EXPECT_NE(chunk_of(next), chunk_of(produced)) << "it adopted the producer's heap, the newest";
    } else {
      std::thread([&] { next = r.allocate(64); }).join();
      EXPECT_EQ(chunk_of(next), chunk_of(produced)) << "it adopted the consumer's heap, the newest";
    }
    r.deallocate(next, 64);
    r.deallocate(produced, 64);
  }
}

TEST(ThreadCached, ForeignBlocksAreKeptWhereTheirClassIsAllocated) {
  locked_spy spy;
  any_size r{spy_ref(spy)};
  constexpr std::size_t n = 32;
  std::vector<void*> theirs(n);
  // This thread's heap first, with a current chunk of class 64: were the other thread's heap
  // waiting already, this thread would adopt it, and its blocks would be this thread's own.
  void* mine = r.allocate(64);
  std::thread([&] {
    for (void*& p : theirs) {
      p = r.allocate(64);
    }
  }).join();
  for (void* p : theirs) {
    r.deallocate(p, 64);
  }
  // This thread's free list gives out its own page's worth first, then the kept blocks, all before
  // its chunk carves another page.
  const std::set<void*> kept(theirs.begin(), theirs.end());
  std::vector<void*> got;
  for (std::size_t i = 0; i < 4096 / 64 + n; ++i) {
    got.push_back(r.allocate(64));
  }
  EXPECT_EQ(std::count_if(got.begin(), got.end(), [&](void* p) { return kept.count(p) != 0; }),
            static_cast<std::ptrdiff_t>(n));
  for (void* p : got) {
    r.deallocate(p, 64);
  }
  r.deallocate(mine, 64);

  // The owner stays alive; a thread that allocates the class keeps the owner's blocks and exits
  // with them. The next thread adopts its heap (the one abandoned last) and hands them out after
  // its current chunk's free blocks, before it carves, as the thread that kept them would have.
  std::mutex m;
  std::condition_variable cv;
  bool allocated = false;
  bool adopted = false;
  std::thread owner([&] {
    for (void*& p : theirs) {
      p = r.allocate(64);
    }
    std::unique_lock<std::mutex> lock(m);
    allocated = true;
    cv.notify_all();
    cv.wait(lock, [&] { return adopted; });
  });
  {
    std::unique_lock<std::mutex> lock(m);
    cv.wait(lock, [&] { return allocated; });
  }
  const std::set<void*> left(theirs.begin(), theirs.end());
  std::thread([&] {
    r.deallocate(r.allocate(64), 64);
    for (void* p : theirs) {
      r.deallocate(p, 64);
    }
  }).join();
  std::size_t handed_out = 0;
  std::thread([&] {
    std::vector<void*> got(4096 / 64 + n);
    for (void*& p : got) {
      p = r.allocate(64);
      handed_out += left.count(p);
    }
    for (void* p : got) {
      r.deallocate(p, 64);
    }
  }).join();
  {
    const std::lock_guard<std::mutex> lock(m);
    adopted = true;
  }
  cv.notify_all();
  owner.join();
  EXPECT_EQ(handed_out, n) << "the adopting thread handed out what the exited one kept";
}

// What an exited thread kept counts as handed out since the last tick: the first tick of the
// thread that adopts its heap leaves it there; a second one with none of it handed out would send
// it home (KeptBlocksGoHomeWhileTheThreadAllocatesOtherClasses).
TEST(ThreadCached, AnAdoptingThreadsFirstTickLeavesWhatTheExitedThreadKept) {
  locked_spy spy;
  any_size r{spy_ref(spy)};
  constexpr std::size_t n = 32;
  std::vector<void*> theirs(n); // this thread's, which runs on
  for (void*& p : theirs) {
    p = r.allocate(64);
  }
  void* left = nullptr;
  std::thread([&] {
    r.deallocate(r.allocate(64), 64); // a current chunk of the class: the thread keeps theirs
    left = r.allocate(64);            // and exits with it live
    for (void* p : theirs) {
      r.deallocate(p, 64);
    }
  }).join();
  const std::set<void*> kept(theirs.begin(), theirs.end());
  std::size_t handed_out = 0;
  std::thread([&] {
    r.deallocate(left, 64); // this thread's first call: it adopts the heap that owns `left`
    // Blocks of the largest class, a page: every one a refill (one block carved each), and 64
    // refills make exactly one tick (engine::refills_per_tick).
    std::vector<void*> pages(64);
    for (void*& p : pages) {
      p = r.allocate(4096);
    }
    // The current chunk's free list gives out at most a page's worth and `left`, then the kept.
    std::vector<void*> got(4096 / 64 + 1 + n);
    for (void*& p : got) {
      p = r.allocate(64);
      handed_out += kept.count(p);
    }
    for (void* p : got) {
      r.deallocate(p, 64);
    }
    for (void* p : pages) {
      r.deallocate(p, 4096);
    }
  }).join();
  EXPECT_EQ(handed_out, n);
}

// A thread that kept other threads' blocks of a class and then allocates only other classes
// sends the kept ones home every 64 times it runs out of a class (engine::refills_per_tick),
// rather than at its exit: their owners, still running, find them once their chunks are used up,
// while the thread that kept them still runs. Without the tick they found none. The kept blocks go
// home as one chain, to the owner of the newest (engine::send_class_home), which sends the others'
// on as it takes them: the owners look in turn, the last one whose blocks were freed first.
// \returns how many of the 32 blocks the `owners` threads allocated came back to each.
std::vector<std::size_t> kept_blocks_sent_home(std::size_t owners) {
  locked_spy spy;
  any_size r{spy_ref(spy)};
  constexpr std::size_t n = 32;
  std::vector<std::vector<void*>> theirs(owners, std::vector<void*>(n / owners));
  std::mutex m;
  std::condition_variable cv;
  // 1..owners: that many owners allocated; +1: the other thread kept them; then one more as each
  // owner looked, the last owner first
  std::size_t step = 0;
  std::vector<std::size_t> found(owners);
  auto advance = [&] {
    const std::lock_guard<std::mutex> lock(m);
    ++step;
    cv.notify_all();
  };
  auto await = [&](std::size_t at) {
    std::unique_lock<std::mutex> lock(m);
    cv.wait(lock, [&] { return step >= at; });
  };
  std::vector<std::thread> threads;
  for (std::size_t o = 0; o < owners; ++o) {
    threads.emplace_back([&, o] {
      for (void*& p : theirs[o]) {
        p = r.allocate(64);
      }
      const std::set<void*> sent(theirs[o].begin(), theirs[o].end());
      advance();
      await(2 * owners - o);
      found[o] = allocate_until_back(r, sent);
      advance();
    });
  }
  threads.emplace_back([&] {
    await(owners);
    r.deallocate(r.allocate(64), 64); // a current chunk of the class: it keeps the owners' blocks
    for (const std::vector<void*>& blocks : theirs) {
      for (void* p : blocks) {
        r.deallocate(p, 64);
      }
    }
    // Then 200-byte blocks only: a refill each page carved (20 blocks), three ticks' worth.
    std::vector<void*> others;
    for (std::size_t i = 0; i < 3 * 64 * (4096 / 200 + 1); ++i) {
      others.push_back(r.allocate(200));
    }
    advance();
    await(2 * owners + 1);
    for (void* p : others) {
      r.deallocate(p, 200);
    }
  });
  for (std::thread& t : threads) {
    t.join();
  }
  return found;
}

TEST(ThreadCached, KeptBlocksGoHomeWhileTheThreadAllocatesOtherClasses) {
  EXPECT_EQ(kept_blocks_sent_home(1), std::vector<std::size_t>{32});
}

TEST(ThreadCached, KeptBlocksOfTwoOwnersGoHomeEachToItsOwner) {
  EXPECT_EQ(kept_blocks_sent_home(2), (std::vector<std::size_t>{16, 16}));
}

TEST(ThreadCached, TwoThreadsNeverGetBlocksOnOneCacheLine) {
  locked_spy spy;
  any_size r{spy_ref(spy)};
  std::vector<void*> blocks[2];
  std::atomic<int> ready{0};
  std::atomic<int> done{0};
  // Both threads live until both are done: a thread that exited early would leave its heap, and
  // its chunks' free blocks, to the other.
  auto run = [&](int t) {
    ready.fetch_add(1);
    while (ready.load() < 2) {
      std::this_thread::yield();
    }
    for (int i = 0; i < 5000; ++i) {
      blocks[t].push_back(r.allocate(16));
      if (i % 3 == 0) {
        r.deallocate(blocks[t].back(), 16);
        blocks[t].pop_back();
      }
    }
    done.fetch_add(1);
    while (done.load() < 2) {
      std::this_thread::yield();
    }
  };
  std::thread a(run, 0);
  std::thread b(run, 1);
  a.join();
  b.join();
  std::set<std::uintptr_t> lines;
  for (void* p : blocks[0]) {
    lines.insert(memkit::detail::address(p) / memkit::cache_line_size);
  }
  for (void* p : blocks[1]) {
    EXPECT_EQ(lines.count(memkit::detail::address(p) / memkit::cache_line_size), 0u);
  }
  for (auto& v : blocks) {
    for (void* p : v) {
      r.deallocate(p, 16);
    }
  }
}

TEST(ThreadCached, StressWithMixedSizesAndRemoteFreesKeepsEveryStamp) {
  locked_spy spy;
  {
    any_size r{spy_ref(spy)};
    memkit::test::stress_options o;
    o.threads = 4;
    o.operations = 40'000 / scale;
    o.min_size = 16;
    o.max_size = 512;
    o.remote_percent = 40;
    const auto res = memkit::test::run_stress(r, o);
    EXPECT_EQ(res.corrupted, 0u) << "seed " << o.seed << ": "
                                 << (res.errors.empty() ? "" : res.errors.front());
    EXPECT_EQ(res.misaligned, 0u);
    EXPECT_EQ(res.failed_allocations, 0u);
    EXPECT_GT(res.remote_frees, res.allocations / 5);
    EXPECT_EQ(res.allocations, res.local_frees + res.remote_frees) << "every block freed once";
    EXPECT_LE(r.heap_count(), 5u);
    if constexpr (memkit::statistics_enabled) {
      EXPECT_EQ(r.stats().blocks_in_use, 0u);
    }
  }
  expect_everything_returned(spy);
}

TEST(ThreadCachedPool, StressWithRemoteFreesKeepsEveryStamp) {
  locked_spy spy;
  {
    fixed_size r(48, 16, spy_ref(spy));
    memkit::test::stress_options o;
    o.threads = 4;
    o.operations = 40'000 / scale;
    o.min_size = o.max_size = 48;
    o.remote_percent = 50;
    o.seed = 20261125;
    const auto res = memkit::test::run_stress(r, o);
    EXPECT_EQ(res.corrupted, 0u) << "seed " << o.seed;
    EXPECT_EQ(res.misaligned, 0u);
    EXPECT_EQ(res.failed_allocations, 0u);
    EXPECT_EQ(res.allocations, res.local_frees + res.remote_frees);
  }
  expect_everything_returned(spy);
}

// A bounded queue of blocks between one producer and one consumer.
class block_queue {
public:
  explicit block_queue(std::size_t capacity) : capacity_(capacity) {}
  void push(void* p) {
    std::unique_lock<std::mutex> lock(m_);
    not_full_.wait(lock, [&] { return q_.size() < capacity_; });
    q_.push_back(p);
    not_empty_.notify_one();
  }
  void* pop() {
    std::unique_lock<std::mutex> lock(m_);
    not_empty_.wait(lock, [&] { return !q_.empty(); });
    void* p = q_.front();
    q_.pop_front();
    not_full_.notify_one();
    return p;
  }

private:
  std::mutex m_;
  std::condition_variable not_full_;
  std::condition_variable not_empty_;
  std::deque<void*> q_;
  std::size_t capacity_;
};

TEST(ThreadCached, ProducerConsumerMemoryStaysBounded) {
  locked_spy spy;
  {
    any_size r{spy_ref(spy)};
    constexpr std::size_t pairs = 2;
    constexpr std::size_t queue_capacity = 1024;
    const std::size_t blocks = 200'000 / scale;
    std::vector<std::unique_ptr<block_queue>> queues;
    for (std::size_t i = 0; i < pairs; ++i) {
      queues.push_back(std::make_unique<block_queue>(queue_capacity));
    }
    std::vector<std::thread> threads;
    std::atomic<std::size_t> bad{0};
    for (std::size_t i = 0; i < pairs; ++i) {
      threads.emplace_back([&, i] {
        for (std::size_t k = 0; k < blocks; ++k) {
          const std::size_t n = 16 + (k * 37 + i) % 497;
          auto* p = static_cast<unsigned char*>(r.allocate(n));
          p[0] = static_cast<unsigned char>(n);
          p[n - 1] = static_cast<unsigned char>(k);
          queues[i]->push(p);
        }
        queues[i]->push(nullptr);
      });
      threads.emplace_back([&, i] {
        std::size_t k = 0;
        while (auto* p = static_cast<unsigned char*>(queues[i]->pop())) {
          const std::size_t n = 16 + (k * 37 + i) % 497;
          if (p[0] != static_cast<unsigned char>(n) || p[n - 1] != static_cast<unsigned char>(k)) {
            bad.fetch_add(1);
          }
          r.deallocate(p, n);
          ++k;
        }
      });
    }
    for (auto& t : threads) {
      t.join();
    }
    EXPECT_EQ(bad.load(), 0u);
    // In flight at once per pair: the queue, the consumer's unposted batches (8 slots of 64) and
    // what the producer has not yet taken back; each heap may also keep 4 spare chunks and one
    // current chunk per class. 4 MiB is 64 chunks: about a fifth of one pair's 100 MB of traffic
    // would already exceed it if freed blocks were not reused.
    EXPECT_LT(spy.peak_bytes(), std::size_t{4} << 20)
        << "peak upstream bytes " << spy.peak_bytes() << " for " << pairs * blocks << " blocks";
  }
  expect_everything_returned(spy);
}

TEST(ThreadCached, ThreadChurnReusesHeapsAndLeaksNothing) {
  locked_spy spy;
  {
    any_size r{spy_ref(spy)};
    constexpr std::size_t wave = 4;
    const std::size_t threads = 10'000 / scale;
    std::mutex m;
    std::vector<std::pair<void*, std::size_t>> handed; // freed later by the main thread
    for (std::size_t done = 0; done < threads; done += wave) {
      std::vector<std::thread> ts;
      for (std::size_t t = 0; t < wave; ++t) {
        ts.emplace_back([&, t] {
          void* local[8];
          for (std::size_t i = 0; i < 8; ++i) {
            local[i] = r.allocate(16 + 40 * (i + t));
          }
          for (std::size_t i = 0; i < 8; i += 2) {
            r.deallocate(local[i], 16 + 40 * (i + t));
          }
          const std::lock_guard<std::mutex> lock(m);
          for (std::size_t i = 1; i < 8; i += 2) {
            handed.emplace_back(local[i], 16 + 40 * (i + t));
          }
        });
      }
      for (auto& t : ts) {
        t.join();
      }
      for (auto& [p, n] : handed) {
        r.deallocate(p, n);
      }
      handed.clear();
    }
    EXPECT_LE(r.heap_count(), wave + 2) << "heaps of exited threads must be adopted";
    EXPECT_LT(spy.peak_bytes(), std::size_t{8} << 20);
  }
  expect_everything_returned(spy);
}

TEST(ThreadCached, ExhaustionUnderContentionGivesNullNeverCorruption) {
  locked_spy spy(std::size_t{2} << 20);
  {
    any_size r{spy_ref(spy)};
    memkit::test::stress_options o;
    o.threads = 4;
    o.operations = 20'000 / scale;
    o.max_live = 2000;
    o.min_size = 64;
    o.max_size = 2048;
    o.remote_percent = 30;
    const auto res = memkit::test::run_stress(r, o);
    EXPECT_GT(res.failed_allocations, 0u) << "the budget must run dry";
    EXPECT_EQ(res.corrupted, 0u) << "seed " << o.seed;
    EXPECT_EQ(res.allocations, res.local_frees + res.remote_frees);
    EXPECT_LE(spy.peak_bytes(), std::size_t{2} << 20);
  }
  expect_everything_returned(spy);
}

TEST(ThreadCachedPool, ServesOneBlockSizeAndRejectsWhatDoesNotFit) {
  locked_spy spy;
  {
    fixed_size r(40, 8, spy_ref(spy));
    EXPECT_EQ(r.block_size(), 48u);
    EXPECT_EQ(r.max_alignment(), 16u);
    void* p = r.allocate(48, 16);
    EXPECT_TRUE(memkit::detail::is_aligned(p, 16));
    EXPECT_TRUE(r.owns(p));
    EXPECT_EQ(r.usable_size(p), 48u);
    EXPECT_THROW((void)r.allocate(49), memkit::bad_size);
    EXPECT_THROW((void)r.allocate(8, 32), memkit::bad_alignment);
    r.deallocate(p);
    fixed_size paged(100, 4096, spy_ref(spy));
    void* q = paged.allocate(100, 4096);
    EXPECT_TRUE(memkit::detail::is_aligned(q, 4096));
    paged.deallocate(q, 100, 4096);
  }
  EXPECT_THROW(fixed_size(16, 8192, spy_ref(spy)), memkit::bad_alignment);
  EXPECT_THROW(fixed_size(16, 24, spy_ref(spy)), memkit::bad_alignment);
  EXPECT_THROW(fixed_size(9000, 8, spy_ref(spy)), memkit::bad_size);
  expect_everything_returned(spy);
}

TEST(ThreadCachedPool, ReportsMisuse) {
  if constexpr (!memkit::deallocate_checks) {
    GTEST_SKIP() << "the checks run at MEMKIT_DEBUG >= 1";
  }
  locked_spy spy;
  fixed_size r(32, 16, spy_ref(spy));
  memkit::test::misuse_recorder recorder;
  void* p = r.allocate(32);
  r.deallocate(p, 33);
  r.deallocate(p, 32, 64);
  int local = 0;
  r.deallocate(&local, 4);
  r.deallocate(p, 32);
  r.deallocate(p, 32);
  EXPECT_EQ(recorder.count(memkit::misuse::size_mismatch), 1u);
  EXPECT_EQ(recorder.count(memkit::misuse::alignment_mismatch), 1u);
  EXPECT_EQ(recorder.count(memkit::misuse::foreign_pointer), 1u);
  EXPECT_EQ(recorder.count(memkit::misuse::double_free), 1u);
}

} // namespace
