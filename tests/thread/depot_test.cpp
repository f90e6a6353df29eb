// SPDX-License-Identifier: BSL-1.0
// tests/thread/depot_test.cpp: what the heaps share (memkit/detail/thread/depot.hpp), with its
// large regions (large.hpp) and decay (decay.hpp): every chunk, region and heap obtained from a spy
// upstream comes back to it, and memory is decommitted exactly when its delay has passed.
#include "memkit/detail/thread/depot.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <new>
#include <utility>
#include <vector>

#include <sys/mman.h>

#include "memkit/detail/thread/heap.hpp"
#include "memkit/resource.hpp"
#include "support/spy_resource.hpp"

namespace {

namespace thread = memkit::detail::thread;
using memkit::page_size;
using memkit::resource_ref;
using memkit::detail::address;
using memkit::test::spy_resource;

using heap = thread::heap<4>;
using spy_depot = thread::depot<resource_ref<spy_resource>, heap>;

void expect_all_returned(const spy_resource& spy) {
  EXPECT_EQ(spy.blocks_in_use(), 0u);
  EXPECT_TRUE(spy.errors().empty()) << (spy.errors().empty() ? "" : spy.errors().front());
}

TEST(Depot, ObtainedChunksAreAlignedFoundFromAnyOfTheirBytesAndAllReturnedByRelease) {
  spy_resource spy;
  {
    spy_depot d(resource_ref<spy_resource>{spy});
    std::vector<thread::chunk*> chunks;
    for (int i = 0; i < 3; ++i) {
      thread::chunk* c = d.obtain();
      ASSERT_NE(c, nullptr);
      EXPECT_EQ(address(thread::base_of(c)) % thread::chunk_size, 0u);
      EXPECT_EQ(c, thread::header_at(thread::base_of(c)));
      EXPECT_EQ(d.find(thread::base_of(c) + thread::chunk_size - 1), c);
      chunks.push_back(c);
    }
    int outside = 0;
    EXPECT_EQ(d.find(&outside), nullptr);
    {
      memkit::statistics s;
      d.add_upstream_counts(s);
      EXPECT_GE(s.upstream_allocations, 3u); // the chunks, and the map's own nodes
      EXPECT_GE(s.upstream_bytes_in_use, 3 * thread::chunk_size);
    }
    d.release();
    expect_all_returned(spy);
    EXPECT_EQ(d.find(thread::base_of(chunks[0])), nullptr);
  }
  expect_all_returned(spy);
}

TEST(Depot, FreeChunksComeBackNewestFirstOwnedByNoHeap) {
  spy_resource spy;
  spy_depot d(resource_ref<spy_resource>{spy});
  thread::chunk* a = d.obtain();
  thread::chunk* b = d.obtain();
  int owner = 0;
  a->owner = b->owner = &owner;
  EXPECT_EQ(d.pop(0), nullptr);
  d.push(a);
  d.push(b);
  EXPECT_EQ(a->owner, nullptr);
  EXPECT_EQ(d.pop(0), b);
  EXPECT_EQ(d.pop(0), a);
  EXPECT_EQ(d.pop(0), nullptr);
  d.release();
  expect_all_returned(spy);
}

TEST(Depot, AFreeChunkGoesBackToItsLastClassBeforeAnyOtherWithinTheScan) {
  spy_resource spy;
  spy_depot d(resource_ref<spy_resource>{spy});
  std::vector<thread::chunk*> chunks;
  for (std::uint32_t cls = 0; cls < thread::class_scan + 1; ++cls) {
    thread::chunk* c = d.obtain();
    ASSERT_NE(c, nullptr);
    c->cls = cls; // the class it served last
    d.push(c);
    chunks.push_back(c);
  }
  // Newest first: chunks[class_scan] on top, chunks[0] the one past the scan.
  EXPECT_EQ(d.pop(0), chunks[thread::class_scan])
      << "the last class of no chunk within the scan: the newest";
  EXPECT_EQ(d.pop(3), chunks[3]) << "its own class, from the middle of the list";
  EXPECT_EQ(d.pop(thread::class_scan - 1), chunks[thread::class_scan - 1]);
  std::size_t left = 0;
  while (d.pop(thread::large_class) != nullptr) {
    ++left;
  }
  EXPECT_EQ(left, thread::class_scan - 2) << "no chunk lost by unlinking from the middle";
  d.release();
  expect_all_returned(spy);
}

TEST(Depot, HeapsAreMadeOnceAndAnAbandonedOneIsAdoptedWhole) {
  spy_resource spy;
  spy_depot d(resource_ref<spy_resource>{spy});
  heap* first = d.adopt_or_make();
  heap* second = d.adopt_or_make();
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  EXPECT_NE(first, second);
  EXPECT_EQ(address(first) % memkit::cache_line_size, 0u);
  d.abandon(*first);
  EXPECT_TRUE(first->abandoned);
  std::vector<heap*> waiting;
  d.for_each_abandoned([&](heap& h) { waiting.push_back(&h); });
  EXPECT_EQ(waiting, std::vector<heap*>{first});
  EXPECT_EQ(d.adopt_or_make(), first);
  EXPECT_FALSE(first->abandoned);
  EXPECT_EQ(d.heap_count(), 2u);
  std::size_t visited = 0;
  d.for_each_heap([&](const heap&) { ++visited; });
  EXPECT_EQ(visited, 2u);
  d.release();
  expect_all_returned(spy);
}

/// \returns `n` heaps made by `d`, none adopted.
std::vector<heap*> make_heaps(spy_depot& d, std::size_t n) {
  std::vector<heap*> made;
  for (std::size_t i = 0; i < n; ++i) {
    made.push_back(d.adopt_or_make());
  }
  return made;
}

TEST(Depot, AThreadAdoptsTheHeapItFreesIntoElseTheOneWithTheMostOrFewestCurrentChunks) {
  spy_resource spy;
  spy_depot d(resource_ref<spy_resource>{spy});
  const std::vector<heap*> made = make_heaps(d, 6);
  heap* const a = made[0];
  heap* const b = made[1];
  heap* const c = made[2];
  heap* const rich = made[3];
  heap* const middle = made[4];
  heap* const live = made[5]; // a heap whose thread runs
  d.abandon(*a);
  d.abandon(*b);
  d.abandon(*c);
  EXPECT_EQ(d.adopt_or_make(b, false), b) << "the heap that owns the block freed, from the middle";
  EXPECT_FALSE(b->abandoned);
  std::vector<heap*> waiting;
  d.for_each_abandoned([&](heap& h) { waiting.push_back(&h); });
  EXPECT_EQ(waiting, (std::vector<heap*>{c, a})) << "the others still wait, in their order";
  EXPECT_EQ(d.adopt_or_make(a, false), a) << "the owner, the last";

  const auto give_current = [&](heap* h, std::size_t cls) {
    thread::chunk* chunk = d.obtain();
    ASSERT_NE(chunk, nullptr);
    chunk->used = 2; // pinned, with a block out: abandoning the heap leaves it current
    h->set_current(cls, chunk);
  };
  give_current(rich, 1);
  give_current(rich, 2);
  give_current(middle, 1);
  d.abandon(*rich);
  d.abandon(*middle); // waiting, newest first: middle, rich, c
  EXPECT_EQ(rich->current_chunks(), 2u);
  EXPECT_EQ(d.adopt_or_make(nullptr, true), rich) << "allocating: the most current chunks";
  EXPECT_EQ(d.adopt_or_make(live, false), c) << "freeing a running thread's block: the fewest";
  EXPECT_EQ(d.adopt_or_make(live, false), middle);
  EXPECT_EQ(d.heap_count(), 6u) << "no heap made while one waited";
  d.release();
  expect_all_returned(spy);
}

TEST(Depot, AbandoningAHeapTakesItsSparesAndItsEmptyCurrentChunksButNotBusyOnes) {
  spy_resource spy;
  spy_depot d(resource_ref<spy_resource>{spy});
  heap* h = d.adopt_or_make();
  thread::chunk* spare = d.obtain();
  thread::chunk* empty_current = d.obtain();
  thread::chunk* busy_current = d.obtain();
  h->push_spare(spare);
  empty_current->used = 1; // the pin alone
  busy_current->used = 2;  // the pin and a live block
  h->set_current(0, empty_current);
  h->set_current(1, busy_current);
  d.abandon(*h);
  EXPECT_EQ(h->bins[0].current, &thread::empty_chunk);
  EXPECT_EQ(h->bins[1].current, busy_current);
  EXPECT_EQ(h->spare_count, 0u);
  EXPECT_EQ(empty_current->used, 0u);
  std::vector<thread::chunk*> taken;
  while (thread::chunk* c = d.pop(0)) {
    taken.push_back(c);
  }
  EXPECT_EQ(taken.size(), 2u);
  EXPECT_NE(std::find(taken.begin(), taken.end(), spare), taken.end());
  EXPECT_NE(std::find(taken.begin(), taken.end(), empty_current), taken.end());
  d.release();
  expect_all_returned(spy);
}

TEST(Depot, LargeBlocksAreAlignedFoundThroughTheMapAndGivenBackWhenFreed) {
  spy_resource spy;
  spy_depot d(resource_ref<spy_resource>{spy});
  const struct {
    std::size_t bytes, alignment;
  } cases[] = {{100000, 16}, {1, page_size}, {3 * thread::chunk_size, 2 * thread::chunk_size}};
  std::vector<void*> blocks;
  for (const auto& k : cases) {
    void* p = d.allocate_large(k.bytes, k.alignment);
    ASSERT_NE(p, nullptr) << k.bytes;
    EXPECT_EQ(address(p) % k.alignment, 0u) << k.bytes;
    thread::chunk* c = d.find(p);
    ASSERT_NE(c, nullptr) << k.bytes;
    EXPECT_TRUE(c->is_large());
    EXPECT_EQ(c->blocks, p);
    EXPECT_EQ(c->size, k.bytes);
    EXPECT_EQ(d.find(static_cast<char*>(p) + k.bytes - 1), c) << k.bytes;
    blocks.push_back(p);
  }
  const std::size_t before = spy.blocks_in_use();
  d.free_large(d.find(blocks[0]));
  EXPECT_EQ(spy.blocks_in_use(), before - 1);
  EXPECT_EQ(d.find(blocks[0]), nullptr);
  EXPECT_NE(d.find(blocks[1]), nullptr);                            // the others stay
  EXPECT_EQ(d.allocate_large(memkit::unbounded_size, 16), nullptr); // no region is that large
  d.release();
  expect_all_returned(spy);
}

TEST(Depot, ALargeBlockThatFitsAChunkTakesAFreeChunkAndGivesItBackToTheDepot) {
  spy_resource spy;
  spy_depot d(resource_ref<spy_resource>{spy});
  const std::size_t fits = thread::chunk_size - thread::header_room;
  ASSERT_TRUE(thread::large_regions::fits_chunk(fits, 16));
  ASSERT_FALSE(thread::large_regions::fits_chunk(fits + 1, 16));
  ASSERT_FALSE(thread::large_regions::fits_chunk(fits, 2 * thread::header_room));

  thread::chunk* spare = d.obtain();
  ASSERT_NE(spare, nullptr);
  d.push(spare);
  const std::size_t obtained = spy.blocks_in_use();
  void* p = d.allocate_large(fits, 16);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(spy.blocks_in_use(), obtained) << "the depot's free chunk, no upstream call";
  thread::chunk* c = d.find(p);
  EXPECT_EQ(c, spare);
  EXPECT_EQ(thread::chunk_of(p), c) << "found by masking, as a small block";
  EXPECT_TRUE(c->is_large());
  EXPECT_TRUE(thread::large_regions::in_chunk(c));
  EXPECT_EQ(c->size, fits);
  EXPECT_LE(static_cast<char*>(p) + fits, thread::base_of(c) + thread::chunk_size);
  std::fill_n(static_cast<unsigned char*>(p), fits, 0xa5); // every byte is the caller's

  void* q = d.allocate_large(fits + 1, 16); // too large for a chunk: a region of its own
  ASSERT_NE(q, nullptr);
  EXPECT_FALSE(thread::large_regions::in_chunk(d.find(q)));
  // The region, and a node of the chunk map if the region lies where none was yet.
  const std::size_t with_region = spy.blocks_in_use();
  EXPECT_GT(with_region, obtained);

  d.free_large(c);
  EXPECT_EQ(d.pop(0), spare) << "back in the depot, for any class or block";
  EXPECT_EQ(c->owner, nullptr);
  d.push(spare);
  d.free_large(d.find(q));
  EXPECT_EQ(spy.blocks_in_use(), with_region - 1) << "the region back to the upstream";
  d.release();
  expect_all_returned(spy);
}

// An upstream that decommits, as the global replacement's does, recording what it was asked.
struct decommitting {
  static constexpr std::uint64_t default_delay = 100;
  resource_ref<spy_resource> spy;
  std::vector<std::pair<void*, std::size_t>>* decommitted;
  std::size_t* purges;
  std::uint64_t delay = default_delay;

  std::uint64_t delay_ms() const noexcept { return delay; }

  void* try_allocate(std::size_t bytes, std::size_t alignment) noexcept {
    return spy.try_allocate(bytes, alignment);
  }
  void* allocate(std::size_t bytes, std::size_t alignment) {
    return spy.allocate(bytes, alignment);
  }
  void deallocate(void* p, std::size_t bytes, std::size_t alignment) noexcept {
    spy.deallocate(p, bytes, alignment);
  }
  void decommit(void* p, std::size_t bytes) noexcept { decommitted->emplace_back(p, bytes); }
  std::size_t purge(bool) noexcept {
    ++*purges;
    return 0;
  }
};
static_assert(thread::decommits<decommitting>::value);
static_assert(!thread::decommits<resource_ref<spy_resource>>::value);

TEST(Decay, AChunkInTheDepotIsDecommittedOnceItsDelayHasPassedAndNotBefore) {
  spy_resource spy;
  std::vector<std::pair<void*, std::size_t>> decommitted;
  std::size_t purges = 0;
  thread::depot<decommitting, heap> d(
      decommitting{resource_ref<spy_resource>{spy}, &decommitted, &purges});
  thread::chunk* c = d.obtain();
  d.push(c);
  const std::uint64_t entered = c->freed_at;
  ASSERT_NE(entered, 0u);
  EXPECT_EQ(d.purge(entered + decommitting::default_delay - 1, false), 0u);
  EXPECT_TRUE(decommitted.empty());
  const std::size_t given = d.purge(entered + decommitting::default_delay, false);
  EXPECT_EQ(given, thread::chunk_size - page_size);
  ASSERT_EQ(decommitted.size(), 1u);
  // All but the header's page, which links the chunk into the depot.
  EXPECT_EQ(decommitted[0].first, thread::base_of(c) + page_size);
  EXPECT_EQ(decommitted[0].second, thread::chunk_size - page_size);
  EXPECT_EQ(c->freed_at, 0u);
  EXPECT_EQ(d.purge(entered + 10 * decommitting::default_delay, false), 0u); // once only
  EXPECT_GE(purges, 3u); // the upstream is asked every time
  d.release();
  expect_all_returned(spy);
}

TEST(Decay, WithADelayOfZeroAChunkGivesItsPagesBackAsItEntersTheDepot) {
  spy_resource spy;
  std::vector<std::pair<void*, std::size_t>> decommitted;
  std::size_t purges = 0;
  thread::depot<decommitting, heap> d(
      decommitting{resource_ref<spy_resource>{spy}, &decommitted, &purges, 0});
  thread::chunk* c = d.obtain();
  d.push(c);
  ASSERT_EQ(decommitted.size(), 1u) << "at once, with no purge due yet";
  EXPECT_EQ(decommitted[0].first, thread::base_of(c) + page_size);
  EXPECT_EQ(decommitted[0].second, thread::chunk_size - page_size);
  EXPECT_EQ(c->freed_at, 0u);
  const std::size_t purges_before = purges;
  EXPECT_EQ(d.purge(memkit::detail::os::now_ms(), false), 0u) << "nothing waits";
  EXPECT_EQ(decommitted.size(), 1u);
  EXPECT_GT(purges, purges_before) << "the upstream is still asked, for what it keeps";
  EXPECT_EQ(d.pop(0), c);
  d.push(c);
  EXPECT_EQ(decommitted.size(), 2u) << "again at each entry";
  d.release();
  expect_all_returned(spy);
}

TEST(Decay, TrimDecommitsEveryFreeChunkAtOnce) {
  spy_resource spy;
  std::vector<std::pair<void*, std::size_t>> decommitted;
  std::size_t purges = 0;
  thread::depot<decommitting, heap> d(
      decommitting{resource_ref<spy_resource>{spy}, &decommitted, &purges});
  d.push(d.obtain());
  d.push(d.obtain());
  EXPECT_EQ(d.purge(memkit::detail::os::now_ms(), true), 2 * (thread::chunk_size - page_size));
  EXPECT_EQ(decommitted.size(), 2u);
  d.release();
  expect_all_returned(spy);
}

// Which pages of the chunk at `base` are resident, one bit a page.
std::uint32_t resident_pages(const char* base) {
  unsigned char vec[thread::chunk_size / page_size] = {};
  EXPECT_EQ(::mincore(const_cast<char*>(base), thread::chunk_size, vec), 0);
  std::uint32_t bits = 0;
  for (std::size_t i = 0; i < std::size(vec); ++i) {
    bits |= static_cast<std::uint32_t>(vec[i] & 1u) << i;
  }
  return bits;
}

TEST(Decay, AChunkTakenByAnotherClassGivesBackThePagesItsLastClassCarved) {
  // A chunk of the OS's, every page touched, whose last class (blocks of 64) carved into its
  // fourth page.
  void* const mapped = ::mmap(nullptr, 2 * thread::chunk_size, PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mapped, MAP_FAILED);
  char* const base =
      reinterpret_cast<char*>(memkit::detail::round_up(address(mapped), thread::chunk_size));
  thread::chunk* const c = ::new (thread::header_at(base)) thread::chunk;
  c->cls = 3;
  c->block_size = 64;
  c->fresh = memkit::detail::carver(base + 3 * page_size + 100, base + thread::chunk_size);
  const auto touch_all = [&] { std::memset(base + page_size, 1, thread::chunk_size - page_size); };
  touch_all();
  constexpr std::uint32_t all = (std::uint32_t{1} << (thread::chunk_size / page_size)) - 1;
  ASSERT_EQ(resident_pages(base) & all, all);

  // The same class again, or an upstream that does not decommit: every page stays.
  thread::decay<decommitting>::on_reassign(c, 3);
  thread::decay<resource_ref<spy_resource>>::on_reassign(c, 4);
  EXPECT_EQ(resident_pages(base) & all, all);

  // Another class: the pages the last one carved go, all but the header's, and the rest stay.
  thread::decay<decommitting>::on_reassign(c, 4);
  EXPECT_EQ(resident_pages(base) & all, all & ~std::uint32_t{0b1110});
  EXPECT_EQ(base[page_size], 0) << "still usable, zero-filled";

  // A chunk never assigned (block_size 0), or one whose class carved only the header's page.
  touch_all();
  c->block_size = 0;
  thread::decay<decommitting>::on_reassign(c, 4);
  c->block_size = 64;
  c->fresh = memkit::detail::carver(base + 2000, base + thread::chunk_size);
  thread::decay<decommitting>::on_reassign(c, 4);
  EXPECT_EQ(resident_pages(base) & all, all);
  ::munmap(mapped, 2 * thread::chunk_size);
}

} // namespace

namespace {

// decommitting, whose decommitted ranges must be recommitted before use (as os_upstream's).
struct recommitting : decommitting {
  std::vector<void*>* recommitted;
  bool refuse = false;
  bool recommit(void* p, std::size_t) noexcept {
    recommitted->push_back(p);
    return !refuse;
  }
};
static_assert(thread::recommits<recommitting>::value && !thread::recommits<decommitting>::value);

TEST(Decay, ADecommittedChunkIsRecommittedBeforeItLeavesTheDepotAndStaysIfRefused) {
  spy_resource spy;
  std::vector<std::pair<void*, std::size_t>> decommitted;
  std::vector<void*> recommitted;
  std::size_t purges = 0;
  thread::depot<recommitting, heap> d(
      recommitting{{resource_ref<spy_resource>{spy}, &decommitted, &purges}, &recommitted});
  thread::chunk* kept = d.obtain();
  d.push(kept);
  EXPECT_EQ(d.pop(0), kept); // never decommitted: nothing to recommit
  EXPECT_TRUE(recommitted.empty());
  d.push(kept);
  d.purge(memkit::detail::os::now_ms(), true);
  d.upstream().refuse = true;
  EXPECT_EQ(d.pop(0), nullptr);
  d.upstream().refuse = false;
  EXPECT_EQ(d.pop(0), kept); // still there
  ASSERT_EQ(recommitted.size(), 2u);
  EXPECT_EQ(recommitted[1], thread::base_of(kept) + page_size);
  d.release();
  expect_all_returned(spy);
}

} // namespace
