// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/tests/replay_test.cpp: the causal compiler on hand-written multi-thread event
// lists whose orders are known (a cross-thread free, a realloc chain across threads, slot reuse
// across threads), the verifier (unknown pointers, double frees, programs it must reject), the
// slot bound, replays against this process's malloc and the strategies with every block's
// contents checked, the advice on the synthetic trace whose right answers are known, and recorded
// trace files read through the trace reader (in time order, cut and corrupted files).

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <vector>

#include <memkit/trace.hpp>

#include "replay/advise.hpp"
#include "replay/compile.hpp"
#include "replay/flat_map.hpp"
#include "replay/load.hpp"
#include "replay/program_file.hpp"
#include "replay/replayer.hpp"
#include "replay/routes.hpp"
#include "replay/series.hpp"
#include "replay/sites.hpp"
#include "replay/synthetic.hpp"

namespace memkit::bench::replay {
namespace {

/// Events built in order, timestamps increasing.
class trace_builder {
public:
  trace_builder& alloc(std::uint32_t thread, std::uint64_t ptr, std::uint64_t size,
                       std::uint32_t site = 1) {
    event e;
    e.kind = event_kind::alloc;
    e.thread = thread;
    e.result = ptr;
    e.size = size;
    e.site = site;
    return add(e);
  }
  trace_builder& free(std::uint32_t thread, std::uint64_t ptr) {
    event e;
    e.kind = event_kind::free;
    e.thread = thread;
    e.ptr = ptr;
    return add(e);
  }
  trace_builder& realloc(std::uint32_t thread, std::uint64_t ptr, std::uint64_t result,
                         std::uint64_t size, std::uint32_t site = 2) {
    event e;
    e.kind = event_kind::realloc;
    e.thread = thread;
    e.ptr = ptr;
    e.result = result;
    e.size = size;
    e.site = site;
    return add(e);
  }
  trace_builder& start(std::uint32_t thread) {
    event e;
    e.kind = event_kind::thread_start;
    e.thread = thread;
    return add(e);
  }
  trace_builder& exit(std::uint32_t thread) {
    event e;
    e.kind = event_kind::thread_exit;
    e.thread = thread;
    return add(e);
  }
  const event_list& events() const { return events_; }

private:
  trace_builder& add(event e) {
    e.time = events_.size() + 1;
    events_.push_back(e);
    return *this;
  }
  event_list events_;
};

op alloc_op(std::uint32_t slot, std::uint64_t size, std::uint32_t site) {
  return {op_kind::alloc, size, slot, site};
}
op free_op(std::uint32_t slot) { return {op_kind::free, 0, slot}; }
op realloc_op(std::uint32_t slot, std::uint64_t size, std::uint32_t site) {
  return {op_kind::realloc, size, slot, site};
}
op wait_op(std::uint32_t stream, std::uint64_t done) { return {op_kind::wait, done, stream}; }

TEST(CausalCompiler, MakesACrossThreadFreeWaitForItsAllocation) {
  trace_builder t;
  t.alloc(7, 0x100, 40).alloc(7, 0x200, 8).free(9, 0x100).free(7, 0x200);
  const program p = compile(t.events());
  ASSERT_EQ(p.streams.size(), 2u);
  EXPECT_EQ(p.streams[0].thread, 7u);
  EXPECT_EQ(p.streams[1].thread, 9u);
  EXPECT_EQ(ops_of(p, 0), (std::vector<op>{alloc_op(0, 40, 0), alloc_op(1, 8, 0), free_op(1)}));
  // Thread 9 frees the first block: it waits for thread 7's first operation, no more.
  EXPECT_EQ(ops_of(p, 1), (std::vector<op>{wait_op(0, 1), free_op(0)}));
  EXPECT_EQ(p.stats.cross_thread, 1u);
  EXPECT_EQ(p.stats.waits, 1u);
  EXPECT_TRUE(verify(p).ok) << verify(p).error;
}

TEST(CausalCompiler, AddsNoWaitWhereBlocksStayOnTheirThread) {
  trace_builder t;
  t.alloc(1, 0x10, 16)
      .alloc(2, 0x20, 16)
      .free(1, 0x10)
      .free(2, 0x20)
      .alloc(2, 0x30, 16)
      .free(2, 0x30);
  const program p = compile(t.events());
  EXPECT_EQ(p.stats.waits, 0u);
  EXPECT_EQ(p.stats.cross_thread, 0u);
  for (std::uint32_t s = 0; s < p.streams.size(); ++s) {
    const std::vector<op> ops = ops_of(p, s);
    EXPECT_TRUE(std::none_of(ops.begin(), ops.end(),
                             [](const op& o) { return o.kind() == op_kind::wait; }));
  }
  EXPECT_TRUE(verify(p).ok);
}

TEST(CausalCompiler, OrdersAReallocChainAcrossThreads) {
  // Thread 1 allocates and grows a buffer, thread 2 grows it again (moving it), thread 1 frees
  // the moved block: each step waits for the one before it on the other thread.
  trace_builder t;
  t.alloc(1, 0xa0, 16, 5)
      .realloc(1, 0xa0, 0xb0, 64, 6)
      .realloc(2, 0xb0, 0xc0, 256, 7)
      .free(1, 0xc0);
  const program p = compile(t.events());
  ASSERT_EQ(p.streams.size(), 2u);
  EXPECT_EQ(ops_of(p, 0),
            (std::vector<op>{alloc_op(0, 16, 0), realloc_op(0, 64, 1), wait_op(1, 2), free_op(0)}));
  EXPECT_EQ(ops_of(p, 1), (std::vector<op>{wait_op(0, 2), realloc_op(0, 256, 2)}));
  EXPECT_EQ(p.sites, (std::vector<std::uint32_t>{5, 6, 7}));
  EXPECT_EQ(p.stats.cross_thread, 2u);
  EXPECT_EQ(p.stats.peak_live_bytes, 256u);
  EXPECT_TRUE(verify(p).ok) << verify(p).error;
}

TEST(CausalCompiler, WaitsOnceForSeveralBlocksOfTheSameThread) {
  trace_builder t;
  t.alloc(1, 0x1, 8).alloc(1, 0x2, 8).free(2, 0x2).free(2, 0x1);
  const program p = compile(t.events());
  EXPECT_EQ(ops_of(p, 1), (std::vector<op>{wait_op(0, 2), free_op(1), free_op(0)}));
}

TEST(CausalCompiler, ReusesASlotFreedOnAnotherThreadOnlyAfterThatFree) {
  // Thread 2 frees thread 1's block; thread 3's allocation takes the freed slot and must wait
  // for thread 2's free, which the trace put before it.
  trace_builder t;
  t.alloc(1, 0x1, 8).free(2, 0x1).alloc(3, 0x2, 8).free(3, 0x2);
  const program p = compile(t.events());
  EXPECT_EQ(p.slots, 1u);
  EXPECT_EQ(ops_of(p, 2), (std::vector<op>{wait_op(1, 2), alloc_op(0, 8, 0), free_op(0)}));
  EXPECT_TRUE(verify(p).ok) << verify(p).error;
}

TEST(CausalCompiler, TurnsReallocEdgeCasesIntoAllocationsAndFrees) {
  trace_builder t;
  t.realloc(1, 0, 0x10, 32)       // realloc(NULL, 32): an allocation
      .realloc(1, 0x10, 0, 100)   // failed: the block lives on
      .realloc(1, 0x10, 0, 0)     // realloc(p, 0) returning NULL: a free
      .realloc(1, 0x77, 0x20, 16) // of a block from before recording: an allocation
      .free(1, 0x20);
  const program p = compile(t.events());
  EXPECT_EQ(ops_of(p, 0),
            (std::vector<op>{alloc_op(0, 32, 0), free_op(0), alloc_op(0, 16, 0), free_op(0)}));
  EXPECT_EQ(p.stats.failed_reallocs, 1u);
  EXPECT_EQ(p.stats.unknown_reallocs, 1u);
}

TEST(CausalCompiler, StartsAThreadOnlyAfterWhatPrecededItsStart) {
  // Thread 1 lives throughout; 2 and 3 run one after the other, 3 freeing what 2 allocated.
  trace_builder t;
  t.start(1).alloc(1, 0x10, 8).start(2).alloc(2, 0x20, 8).exit(2);
  t.alloc(1, 0x30, 8).start(3).free(3, 0x20).exit(3).free(1, 0x30).free(1, 0x10);
  const program p = compile(t.events());
  ASSERT_EQ(p.streams.size(), 3u);
  EXPECT_EQ(p.streams[0].start_waits, 0u); // the first thread: nothing before it
  // Thread 2 waits for thread 1's first allocation, which came before its start.
  EXPECT_EQ(p.streams[1].start_waits, 1u);
  EXPECT_EQ(ops_of(p, 1), (std::vector<op>{wait_op(0, 1), alloc_op(1, 8, 0)}));
  // Thread 3 waits for thread 2's last operation (it exited before 3 started), which covers
  // the block it frees, and for thread 1's second allocation, which came before 3 started.
  EXPECT_EQ(p.streams[2].start_waits, 2u);
  EXPECT_EQ(ops_of(p, 2), (std::vector<op>{wait_op(1, 2), wait_op(0, 2), free_op(1)}));
  EXPECT_EQ(p.stats.start_waits, 3u);
  EXPECT_EQ(p.stats.peak_threads, 2u);
  EXPECT_TRUE(verify(p).ok) << verify(p).error;
}

TEST(Verifier, CountsUnknownPointersAndDoubleFreesInsteadOfReplayingThem) {
  trace_builder t;
  t.free(1, 0xdead) // allocated before recording started
      .alloc(1, 0x10, 8)
      .free(1, 0x10)
      .free(2, 0x10) // a double free, on another thread
      .free(1, 0);   // free(NULL)
  const program p = compile(t.events());
  EXPECT_EQ(p.stats.unknown_frees, 1u);
  EXPECT_EQ(p.stats.double_frees, 1u);
  EXPECT_EQ(p.stats.leaked, 0u);
  EXPECT_EQ(ops_of(p, 0), (std::vector<op>{alloc_op(0, 8, 0), free_op(0)}));
  EXPECT_TRUE(ops_of(p, 1).empty());
  const verify_result v = verify(p);
  EXPECT_TRUE(v.ok) << v.error;
  EXPECT_EQ(v.checked, 2u);
}

TEST(Verifier, CountsABlockAllocatedAgainWithoutItsFreeAndFreesIt) {
  trace_builder t;
  t.alloc(1, 0x10, 8).alloc(1, 0x10, 24).free(1, 0x10);
  const program p = compile(t.events());
  EXPECT_EQ(p.stats.reused_live, 1u);
  EXPECT_EQ(ops_of(p, 0),
            (std::vector<op>{alloc_op(0, 8, 0), free_op(0), alloc_op(0, 24, 0), free_op(0)}));
  EXPECT_TRUE(verify(p).ok);
}

program two_streams(std::vector<op> a, std::vector<op> b, std::uint32_t slots) {
  return make_program({{1, std::move(a)}, {2, std::move(b)}}, slots);
}

TEST(Verifier, RejectsAFreeWithoutAWaitForItsAllocation) {
  const verify_result v = verify(two_streams({alloc_op(0, 8, 0)}, {free_op(0)}, 1));
  EXPECT_FALSE(v.ok);
  EXPECT_NE(v.error.find("without waiting"), std::string::npos) << v.error;
}

TEST(Verifier, RejectsAFreeOfAnEmptySlotAndAnAllocationIntoALiveOne) {
  EXPECT_FALSE(verify(two_streams({free_op(0)}, {}, 1)).ok);
  EXPECT_FALSE(verify(two_streams({alloc_op(0, 8, 0), alloc_op(0, 8, 0)}, {}, 1)).ok);
  EXPECT_FALSE(verify(two_streams({alloc_op(3, 8, 0)}, {}, 1)).ok); // slot out of range
}

TEST(Verifier, RejectsStartWaitsThatAreNotWaits) {
  program p = two_streams({alloc_op(0, 8, 0), free_op(0)}, {wait_op(0, 2), alloc_op(1, 8, 0)}, 2);
  p.streams[1].start_waits = 1;
  EXPECT_TRUE(verify(p).ok) << verify(p).error;
  p.streams[1].start_waits = 2; // the replay would wait on an allocation
  const verify_result v = verify(p);
  EXPECT_FALSE(v.ok);
  EXPECT_NE(v.error.find("start waits"), std::string::npos) << v.error;
  p.streams[1].start_waits = 3;
  EXPECT_FALSE(verify(p).ok);
}

TEST(Verifier, RejectsWaitsThatNeverEnd) {
  // Each stream waits for the other: a cycle.
  const verify_result cycle = verify(
      two_streams({wait_op(1, 1), alloc_op(0, 8, 0)}, {wait_op(0, 1), alloc_op(1, 8, 0)}, 2));
  EXPECT_FALSE(cycle.ok);
  EXPECT_NE(cycle.error.find("for ever"), std::string::npos) << cycle.error;
  // A wait for more operations than the stream has.
  EXPECT_FALSE(verify(two_streams({alloc_op(0, 8, 0)}, {wait_op(0, 5)}, 1)).ok);
}

TEST(SlotMapping, NeedsNoMoreSlotsThanThePeakLiveCount) {
  trace_builder t;
  for (std::uint64_t round = 0; round < 3; ++round) {
    for (std::uint64_t i = 1; i <= 4; ++i) {
      t.alloc(static_cast<std::uint32_t>(i % 2), round * 100 + i, 8);
    }
    for (std::uint64_t i = 1; i <= 4; ++i) {
      t.free(static_cast<std::uint32_t>((i + round) % 2), round * 100 + i);
    }
  }
  const program small = compile(t.events());
  EXPECT_EQ(small.stats.peak_live, 4u);
  EXPECT_EQ(small.slots, 4u);
  EXPECT_TRUE(verify(small).ok) << verify(small).error;

  const program big = compile(synthetic_trace({20'000, 3, 7}));
  EXPECT_EQ(big.slots, big.stats.peak_live);
  EXPECT_LT(big.slots, 2'000u); // far fewer than the 10'000 allocations
  EXPECT_TRUE(verify(big).ok) << verify(big).error;
}

TEST(ProgramFile, ReadsBackWhatItWroteAndRejectsAnythingElse) {
  const program p = compile(synthetic_trace({5'000, 3, 2}));
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("memkit-replay-program-" + std::to_string(getpid())))
                               .string();
  save_program(p, path);
  const program q = load_program(path);
  EXPECT_EQ(q.slots, p.slots);
  EXPECT_EQ(q.sites, p.sites);
  EXPECT_EQ(q.stats, p.stats);
  ASSERT_EQ(q.streams.size(), p.streams.size());
  for (std::uint32_t s = 0; s < p.streams.size(); ++s) {
    EXPECT_EQ(q.streams[s].thread, p.streams[s].thread);
    EXPECT_EQ(ops_of(q, s), ops_of(p, s));
  }
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 1);
  EXPECT_THROW(load_program(path), std::runtime_error);
  std::ofstream(path) << "not a program";
  EXPECT_THROW(load_program(path), std::runtime_error);
  std::filesystem::remove(path);
  EXPECT_THROW(load_program(path), std::runtime_error);
}

/// The number of allocation, free and realloc operations in `p`.
std::uint64_t calls(const program& p) {
  std::uint64_t n = 0;
  for (std::uint32_t s = 0; s < p.streams.size(); ++s) {
    const std::vector<op> ops = ops_of(p, s);
    n += static_cast<std::uint64_t>(std::count_if(
        ops.begin(), ops.end(), [](const op& o) { return o.kind() != op_kind::wait; }));
  }
  return n;
}

TEST(Replay, ReplaysASyntheticTraceAgainstMallocWithEveryBlocksContentsIntact) {
  const program p = compile(synthetic_trace({20'000, 3, 11}));
  ASSERT_TRUE(verify(p).ok);
  ASSERT_GT(p.stats.cross_thread, 0u);
  router none(p, {});
  const replay_result r = replay_routed(p, none, {touch_mode::line, 16});
  EXPECT_EQ(r.ops, calls(p));
  EXPECT_EQ(r.content_errors, 0u);
  EXPECT_NE(r.checksum, 0u);
  EXPECT_GT(r.samples, 0u);
  EXPECT_LE(r.op_p50_ns, r.op_p99_ns);
  // The null allocator does the same operations and adds the same stamps.
  const replay_result null = replay_null(p, {touch_mode::page, 16});
  EXPECT_EQ(null.ops, r.ops);
  EXPECT_EQ(null.checksum, r.checksum);
}

TEST(Replay, RecordsTheProgramsLiveBytesAndTheReplaysResidentMemoryOverTime) {
  trace_builder t;
  t.alloc(1, 0x1000, 100).alloc(1, 0x2000, 50).realloc(1, 0x1000, 0x3000, 300).free(1, 0x2000);
  const program small = compile(t.events());
  using point = std::array<std::uint64_t, 2>;
  // Before each event: nothing, 100, 150, then 350 after the realloc grew the first block.
  EXPECT_EQ(small.live_over_time, (std::vector<point>{{0, 0}, {1, 100}, {2, 150}, {3, 350}}));

  const program p = compile(synthetic_trace({200'000, 2, 5}));
  ASSERT_LE(p.live_over_time.size(), series_limit);
  ASSERT_GE(p.live_over_time.size(), series_limit / 2);
  std::uint64_t peak = 0;
  for (const point& x : p.live_over_time) {
    peak = std::max(peak, x[1]);
  }
  EXPECT_LE(peak, p.stats.peak_live_bytes);
  EXPECT_GT(peak, p.stats.peak_live_bytes / 2) << "the samples follow the live bytes";

  router none(p, {});
  const replay_result r = replay_routed(p, none, {touch_mode::page, 64});
  ASSERT_FALSE(r.rss_over_time.empty()) << "the end is always sampled";
  EXPECT_LE(r.rss_over_time.size(), series_limit + 1);
  EXPECT_TRUE(std::is_sorted(r.rss_over_time.begin(), r.rss_over_time.end()));
  EXPECT_LE(r.rss_over_time.back()[0], static_cast<std::uint64_t>(r.seconds * 1e6) + 100'000);
}

TEST(Replay, ChargesItsOwnTimingsNothingInThePeakResidentMemory) {
  // One block allocated and freed 400,000 times, every operation timed: 3,125 KiB of timings,
  // resident before the replay reads its starting resident memory, so not in its peak (which is
  // about 100 KiB here, 250 under AddressSanitizer and 1.1 MiB under ThreadSanitizer).
  std::vector<op> ops;
  ops.reserve(800'000); // no memory freed while the program is made, for the timings to reuse
  for (int i = 0; i < 400'000; ++i) {
    ops.push_back(alloc_op(0, 8, 0));
    ops.push_back(free_op(0));
  }
  const program p = make_program({{1, std::move(ops)}}, 1);
  const replay_result r = replay_null(p, {touch_mode::none, 1});
  ASSERT_EQ(r.samples, 800'000u);
  EXPECT_LT(r.peak_rss_kib, 2048u) << "the timings were counted as the allocator's memory";
}

TEST(Series, KeepsAtMostItsLimitEvenlySpacedFromTheStartToTheEnd) {
  thinned_series s(8);
  for (std::uint64_t x = 0; x < 1000; ++x) {
    if (s.due(x)) {
      s.add(x, 2 * x);
    }
  }
  const auto& points = s.points();
  ASSERT_LE(points.size(), 8u);
  ASSERT_GE(points.size(), 4u);
  EXPECT_EQ(points.front()[0], 0u);
  for (std::size_t i = 1; i < points.size(); ++i) {
    EXPECT_EQ(points[i][0] - points[i - 1][0], s.step()) << "point " << i;
    EXPECT_EQ(points[i][1], 2 * points[i][0]);
  }
  EXPECT_GT(points.back()[0] + s.step(), 999u - s.step()) << "the points reach the end";
  s.close(999, 1);
  EXPECT_EQ(s.points().back(), (std::array<std::uint64_t, 2>{999, 1}));
}

TEST(Replay, KeepsContentsThroughAReallocChainAcrossThreads) {
  trace_builder t;
  for (std::uint64_t i = 0; i < 50; ++i) {
    const std::uint64_t a = 0x1000 + i * 16;
    t.alloc(1, a, 24)
        .realloc(1, a, a + 1, 4000)
        .realloc(2, a + 1, a + 2, 100'000)
        .realloc(1, a + 2, a + 3, 16);
    t.free(2, a + 3);
  }
  const program p = compile(t.events());
  ASSERT_TRUE(verify(p).ok) << verify(p).error;
  for (const auto& policy : {policy_map{}, policy_map{{2, strategy::multipool}},
                             policy_map{{all_sites, strategy::thread_cached}}}) {
    router routes(p, policy);
    const replay_result r = replay_routed(p, routes, {touch_mode::page, 4});
    EXPECT_EQ(r.content_errors, 0u) << to_string(policy);
    EXPECT_EQ(r.ops, 250u);
    EXPECT_EQ(r.checksum, replay_null(p, {}).checksum) << to_string(policy);
  }
}

TEST(Replay, RoutesSitesToEveryStrategyWithContentsIntact) {
  // One thread: the strategies run without locks, as each site's advice would use them.
  const event_list events = synthetic_trace({20'000, 1, 3});
  const program p = compile(events);
  const std::uint64_t expected = replay_null(p, {}).checksum;
  const policy_map policies[] = {
      {{lifo_site, strategy::stack}, {bulk_site, strategy::arena}},
      {{long_lived_site, strategy::huge_page}, {handoff_site, strategy::pool}},
      {{all_sites, strategy::multipool}},
      {{churn_site, strategy::thread_cached}, {all_sites, strategy::pool}},
      {{all_sites, strategy::routed_malloc}}};
  for (const auto& policy : policies) {
    router routes(p, policy);
    const replay_result r = replay_routed(p, routes, {touch_mode::page, 64});
    EXPECT_EQ(r.content_errors, 0u) << to_string(policy);
    EXPECT_EQ(r.checksum, expected) << to_string(policy);
  }
}

/// A thread-per-request program: thread 1 lives throughout, then `workers` threads run one
/// after another, each allocating and freeing `blocks` blocks and handing its last block to the
/// next one. With `starts` false, the same calls without the threads' starts and exits.
event_list one_thread_after_another(std::uint32_t workers, std::uint64_t blocks, bool starts) {
  trace_builder t;
  if (starts) {
    t.start(1);
  }
  t.alloc(1, 0x10, 64);
  std::uint64_t handed = 0;
  for (std::uint32_t w = 2; w < workers + 2; ++w) {
    if (starts) {
      t.start(w);
    }
    if (handed != 0) {
      t.free(w, handed);
    }
    for (std::uint64_t i = 0; i < blocks; ++i) {
      t.alloc(w, 0x1000 + i * 16, 16 + i % 64);
    }
    for (std::uint64_t i = 0; i + 1 < blocks; ++i) {
      t.free(w, 0x1000 + i * 16);
    }
    handed = 0x1000 + (blocks - 1) * 16;
    if (starts) {
      t.exit(w);
    }
  }
  t.free(1, handed).free(1, 0x10);
  return t.events();
}

TEST(Replay, NeverRunsThreadsThatRanOneAfterAnotherAtOnce) {
  const program p = compile(one_thread_after_another(24, 300, true));
  ASSERT_TRUE(verify(p).ok) << verify(p).error;
  EXPECT_EQ(p.stats.peak_threads, 2u);
  router none(p, {});
  const replay_result r = replay_routed(p, none, {touch_mode::page, 8});
  EXPECT_EQ(r.content_errors, 0u);
  EXPECT_EQ(r.ops, calls(p));
  // The thread that lives throughout and one worker at a time, never two workers.
  EXPECT_LE(r.peak_threads, 2u);
  EXPECT_GE(r.peak_threads, 1u);
  const replay_result null = replay_null(p, {});
  EXPECT_LE(null.peak_threads, 2u);
  EXPECT_EQ(null.checksum, r.checksum);
  // Without the starts, every thread is started at once, and the same calls are replayed.
  const program all_at_once = compile(one_thread_after_another(24, 300, false));
  EXPECT_EQ(all_at_once.stats.start_waits, 0u);
  EXPECT_EQ(replay_null(all_at_once, {}).ops, r.ops);
}

TEST(ProgramFile, HoldsWhatTheCompilerWroteIntoItChunkByChunk) {
  const event_list events = synthetic_trace({30'000, 3, 4});
  const program in_memory = compile(events);
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("memkit-replay-compiled-" + std::to_string(getpid())))
                               .string();
  causal_compiler c(create_program_file(path));
  for (const event& e : events) {
    c.add(e);
  }
  const program written = c.finish();
  finish_program_file(written);
  const program read = load_program(path);
  std::filesystem::remove(path); // the open descriptor keeps it readable
  EXPECT_FALSE(read.storage.in_memory());
  EXPECT_GT(read.chunks.size(), read.streams.size()); // streams span several chunks
  EXPECT_EQ(read.stats, in_memory.stats);
  EXPECT_EQ(read.largest, in_memory.largest);
  for (std::uint32_t s = 0; s < in_memory.streams.size(); ++s) {
    EXPECT_EQ(ops_of(read, s), ops_of(in_memory, s));
  }
  ASSERT_TRUE(verify(read).ok);
  router none(read, {});
  const replay_result r = replay_routed(read, none, {touch_mode::none, 64});
  EXPECT_EQ(r.content_errors, 0u);
  EXPECT_EQ(r.checksum, replay_null(in_memory, {}).checksum);
}

TEST(FlatMap, FindsEveryKeyLeftAfterErasingHalf) {
  flat_map<std::uint64_t> m;
  constexpr std::uint64_t n = 5'000;
  for (std::uint64_t k = 1; k <= n; ++k) {
    *m.insert(k * 4096).first = k; // addresses: keys alike in their low bits
  }
  EXPECT_FALSE(m.insert(4096).second);
  for (std::uint64_t k = 1; k <= n; k += 2) {
    EXPECT_TRUE(m.erase(k * 4096));
  }
  EXPECT_FALSE(m.erase(4096));
  EXPECT_EQ(m.size(), n / 2);
  for (std::uint64_t k = 1; k <= n; ++k) {
    const std::uint64_t* v = m.find(k * 4096);
    if (k % 2 == 0) {
      ASSERT_NE(v, nullptr) << k;
      EXPECT_EQ(*v, k);
    } else {
      EXPECT_EQ(v, nullptr) << k;
    }
  }
}

TEST(Advice, FindsTheKnownPatternOfEverySyntheticSite) {
  const std::vector<site_profile> sites = profile_sites(synthetic_trace({60'000, 2, 5}));
  const auto find = [&](std::uint32_t id) {
    const auto it = std::find_if(sites.begin(), sites.end(),
                                 [id](const site_profile& s) { return s.site == id; });
    EXPECT_NE(it, sites.end()) << id;
    return it == sites.end() ? site_profile{} : *it;
  };
  const site_profile lifo = find(lifo_site);
  EXPECT_EQ(lifo.lifo_share, 1.0);
  EXPECT_EQ(lifo.candidate, strategy::stack);
  const site_profile bulk = find(bulk_site + 1);
  EXPECT_EQ(bulk.bulk_share, 1.0);
  EXPECT_LT(bulk.lifo_share, 0.5);
  EXPECT_EQ(bulk.candidate, strategy::arena);
  const site_profile lasting = find(long_lived_site);
  EXPECT_EQ(lasting.min_size, 1u << 20);
  EXPECT_EQ(lasting.candidate, strategy::huge_page);
  const site_profile handoff = find(handoff_site);
  EXPECT_EQ(handoff.cross_thread_share, 1.0);
  EXPECT_EQ(handoff.candidate, strategy::thread_cached);
  const site_profile churn = find(churn_site);
  EXPECT_GT(churn.distinct_sizes, 64u);
  EXPECT_EQ(churn.candidate, strategy::multipool);
  // The histogram counts every allocation once.
  std::uint64_t counted = 0;
  for (const auto n : churn.size_histogram) {
    counted += n;
  }
  EXPECT_EQ(counted, churn.allocs);
  // Top sites: the busiest by operations and the largest by peak bytes.
  const std::vector<site_profile> top = top_sites(sites, 1);
  ASSERT_EQ(top.size(), 2u);
  EXPECT_EQ(top[0].ops, sites[0].ops);
  EXPECT_EQ(top[1].site, long_lived_site);
}

TEST(Advice, KeepsACandidateOnlyWhenItsGainClearsAThresholdAndItsIntervalOne) {
  advice a;
  a.baseline = "mimalloc";
  a.site.candidate = strategy::arena;
  a.time = {1.20, 1.10, 1.30, 5};
  decide(a, 0.05, 0.10);
  EXPECT_TRUE(a.use);
  EXPECT_EQ(a.verdict, "use arena");
  a.time = {1.08, 1.01, 1.12, 5}; // 8 % faster, surely faster: the interval need not clear 5 %
  decide(a, 0.05, 0.10);
  EXPECT_TRUE(a.use);
  EXPECT_EQ(a.why, "faster");
  a.time = {1.04, 1.02, 1.06, 5}; // surely faster, but by less than 5 %
  decide(a, 0.05, 0.10);
  EXPECT_FALSE(a.use);
  EXPECT_EQ(a.why, "gain not above the thresholds");
  a.time = {1.12, 0.98, 1.30, 5}; // 12 % faster at the median, not surely faster
  a.rss = {1.30, 1.15, 1.40, 5};  // surely 10 % smaller
  a.rss_saved_kib = 4096;
  decide(a, 0.05, 0.10);
  EXPECT_TRUE(a.use);
  EXPECT_EQ(a.why, "smaller");
  a.rss_saved_kib = 300; // smaller by a ratio, but by less than a MiB: the harness's own memory
  decide(a, 0.05, 0.10);
  EXPECT_FALSE(a.use);
  EXPECT_NE(a.why.find("300 KiB, under the 1 MiB"), std::string::npos) << a.why;
  a.rss_saved_kib = 4096;
  a.rss = {1.30, 0.95, 1.40, 5}; // 30 % smaller at the median, not surely smaller
  decide(a, 0.05, 0.10);
  EXPECT_FALSE(a.use);
  EXPECT_EQ(a.verdict, "keep mimalloc");
  a.time = {1.50, 0, 0, 1}; // one process: no interval, no claim
  a.processes = 1;
  decide(a, 0.05, 0.10);
  EXPECT_FALSE(a.use);
  EXPECT_EQ(a.why, "no interval: the bootstrap needs --processes 2 or more");
  a.processes = 2; // two asked, one paired process failed: the why says so
  decide(a, 0.05, 0.10);
  EXPECT_FALSE(a.use);
  EXPECT_NE(a.why.find("1 of 2 processes replayed both sides"), std::string::npos) << a.why;
  a.time = {1.20, 1.10, 1.30, 5}; // a group's verdict names its sites
  a.group = {4, 9, 2};
  decide(a, 0.05, 0.10);
  EXPECT_EQ(a.verdict, "use arena");
  EXPECT_EQ(a.why, "faster; sites 4,9,2 routed together");
  a.group.clear();
  a.site.candidate = strategy::malloc;
  a.site.reason = "long-lived: nothing to gain";
  decide(a, 0.05, 0.10);
  EXPECT_EQ(a.verdict, "keep mimalloc");
  EXPECT_EQ(a.why, "long-lived: nothing to gain");
}

TEST(ReplayInput, RejectsBadPoliciesAndSyntheticNames) {
  EXPECT_EQ(parse_policy("4=arena,*=pool"),
            (policy_map{{4, strategy::arena}, {all_sites, strategy::pool}}));
  EXPECT_EQ(to_string(parse_policy("4=arena,*=pool")), "4=arena,*=pool");
  EXPECT_EQ(to_string(parse_policy("7=routed-malloc")), "7=routed-malloc");
  EXPECT_THROW(parse_policy("4=heap"), std::invalid_argument);
  EXPECT_THROW(parse_policy("x=arena"), std::invalid_argument);
  EXPECT_THROW(parse_policy("arena"), std::invalid_argument);
  EXPECT_FALSE(parse_synthetic("trace.mkt").has_value());
  EXPECT_EQ(parse_synthetic("synthetic:500:4:9")->threads, 4u);
  EXPECT_THROW(parse_synthetic("synthetic:many"), std::invalid_argument);
  EXPECT_THROW(parse_synthetic("synthetic:10:0"), std::invalid_argument);
}

namespace mt = memkit::trace;

mt::event recorded(mt::event_kind kind, std::uint64_t time, std::uint64_t block,
                   std::uint64_t size) {
  mt::event e;
  e.kind = kind;
  e.time_ns = time;
  e.block = block;
  e.size = size;
  e.site = mt::no_site;
  return e;
}

/// A trace file of two threads whose frames are written out of time order, removed at the end.
class trace_file {
public:
  trace_file() {
    const std::uint64_t site_frames[] = {0x401234};
    mt::event site = recorded(mt::event_kind::site, 1, 0, 0);
    site.site = 0;
    site.frames = site_frames;
    site.frame_count = 1;
    mt::event first = recorded(mt::event_kind::malloc, 10, 0x1000, 24);
    first.site = 0;
    mt::event grow = recorded(mt::event_kind::realloc, 30, 0x2000, 4000);
    grow.old_block = 0x1000;
    mt::event aligned = recorded(mt::event_kind::operator_new_aligned, 20, 0x3000, 64);
    aligned.alignment = 256;
    mt::builder b({}, false);
    b.frame(2, {aligned, recorded(mt::event_kind::operator_delete_sized, 40, 0x2000, 4000),
                recorded(mt::event_kind::rss_sample, 45, 0, 1 << 20)});
    b.frame(1, {site, first, grow, recorded(mt::event_kind::free, 50, 0x3000, 0)});
    bytes_ = b.bytes();
    write(bytes_);
  }
  ~trace_file() { std::filesystem::remove(path_); }
  trace_file(const trace_file&) = delete;
  trace_file& operator=(const trace_file&) = delete;

  void write(const std::vector<std::uint8_t>& bytes) const {
    std::ofstream(path_, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));
  }
  const std::string& path() const { return path_; }
  std::vector<std::uint8_t> bytes() const { return bytes_; }

private:
  std::string path_ = (std::filesystem::temp_directory_path() /
                       ("memkit-replay-test-" + std::to_string(getpid()) + ".trace"))
                          .string();
  std::vector<std::uint8_t> bytes_;
};

TEST(TraceFile, IsReadInTimeOrderWithEveryBlockEventAdapted) {
  const trace_file f;
  std::map<std::uint32_t, std::uint64_t> addresses;
  const event_list events = load_events(f.path(), &addresses);
  EXPECT_EQ(addresses, (std::map<std::uint32_t, std::uint64_t>{{0, 0x401234}}));
  ASSERT_EQ(events.size(), 5u); // the site and the RSS sample touch no block
  EXPECT_EQ(events[0].kind, event_kind::alloc);
  EXPECT_EQ(events[0].thread, 1u);
  EXPECT_EQ(events[0].result, 0x1000u);
  EXPECT_EQ(events[0].site, 0u);
  EXPECT_EQ(events[1].kind, event_kind::alloc); // thread 2's, between thread 1's in time
  EXPECT_EQ(events[1].thread, 2u);
  EXPECT_EQ(events[1].alignment, 256u);
  EXPECT_EQ(events[2].kind, event_kind::realloc);
  EXPECT_EQ(events[2].ptr, 0x1000u);
  EXPECT_EQ(events[2].result, 0x2000u);
  EXPECT_EQ(events[3].kind, event_kind::free);
  EXPECT_EQ(events[3].ptr, 0x2000u);
  EXPECT_EQ(events[4].ptr, 0x3000u);
  // Both blocks change thread: the compiled program waits twice and replays intact.
  const program p = compile(events);
  EXPECT_EQ(p.stats.cross_thread, 2u);
  EXPECT_EQ(p.stats.leaked, 0u);
  ASSERT_TRUE(verify(p).ok) << verify(p).error;
  router none(p, {});
  EXPECT_EQ(replay_routed(p, none, {}).content_errors, 0u);
}

TEST(TraceFile, ThreadsStartsAndExitsMakeALaterThreadWaitForAnEarlierOnesEnd) {
  // Thread 2 starts after thread 1 exited; its frame comes first in the file.
  mt::event start1 = recorded(mt::event_kind::thread_start, 5, 0, 0);
  start1.tid = 100;
  mt::event start2 = recorded(mt::event_kind::thread_start, 60, 0, 0);
  start2.tid = 101;
  mt::builder b({}, false);
  b.frame(2, {start2, recorded(mt::event_kind::malloc, 70, 0x2000, 32),
              recorded(mt::event_kind::free, 80, 0x2000, 0),
              recorded(mt::event_kind::thread_exit, 90, 0, 0)});
  b.frame(1, {start1, recorded(mt::event_kind::malloc, 10, 0x1000, 16),
              recorded(mt::event_kind::free, 20, 0x1000, 0),
              recorded(mt::event_kind::thread_exit, 30, 0, 0)});
  const trace_file f;
  f.write(b.bytes());
  const event_list events = load_events(f.path());
  ASSERT_EQ(events.size(), 8u);
  EXPECT_EQ(events[0].kind, event_kind::thread_start);
  EXPECT_EQ(events[0].thread, 1u);
  EXPECT_EQ(events[3].kind, event_kind::thread_exit);
  EXPECT_EQ(events[4].kind, event_kind::thread_start);
  EXPECT_EQ(events[4].thread, 2u);
  const program p = compile(events);
  ASSERT_EQ(p.streams.size(), 2u);
  EXPECT_EQ(p.stats.peak_threads, 1u);
  EXPECT_EQ(p.streams[1].start_waits, 1u);
  EXPECT_EQ(ops_of(p, 1), (std::vector<op>{wait_op(0, 2), alloc_op(0, 32, 0), free_op(0)}));
  ASSERT_TRUE(verify(p).ok) << verify(p).error;
  EXPECT_EQ(replay_null(p, {}).peak_threads, 1u);
}

TEST(TraceFile, CutFileGivesItsCompleteFramesAndCorruptOneAnErrorWithTheOffset) {
  const trace_file f;
  std::vector<std::uint8_t> cut = f.bytes();
  cut.resize(cut.size() - 3);
  f.write(cut);
  const event_list complete = load_events(f.path());
  EXPECT_EQ(complete.size(), 2u); // thread 2's frame; thread 1's was cut

  std::vector<std::uint8_t> version = f.bytes();
  version[8] = 99;
  f.write(version);
  try {
    load_events(f.path());
    ADD_FAILURE() << "a trace of another version was read";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("byte 8"), std::string::npos) << e.what();
  }
  EXPECT_THROW(load_events(f.path() + ".missing"), std::runtime_error);

  mt::builder only_samples({}, false);
  only_samples.frame(1, {recorded(mt::event_kind::rss_sample, 5, 0, 4096)});
  f.write(only_samples.bytes());
  EXPECT_THROW(load_events(f.path()), std::runtime_error); // nothing to replay
}

} // namespace
} // namespace memkit::bench::replay
