// SPDX-License-Identifier: BSL-1.0
// tests/trace/trace_test.cpp: the trace format (include/memkit/trace.hpp, docs/TRACE.md#format):
// every event kind round-trips, sites are interned across threads, and truncated, corrupted and
// version-mismatched input stops the reader with the offset, never a crash.
#include "memkit/trace.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <gtest/gtest.h>
#include <memory>
#include <string>
#include <vector>

namespace {

namespace trace = memkit::trace;
namespace codec = memkit::detail::trace_codec;

const std::uint64_t frames_a[] = {0x401000, 0x401234, 0x7f0000001000};
const std::uint64_t frames_b[] = {0x402000};

/// One event of kind `k` with every field its kind carries set to a distinct value; `site` is
/// the local index 0 (defined by the caller's first event) for kinds with a site.
trace::event sample(trace::event_kind k, std::uint64_t i) {
  const int f = trace::kind_fields(static_cast<std::uint8_t>(k));
  trace::event e;
  e.kind = k;
  e.time_ns = 1000 + 37 * i;
  if ((f & codec::f_site) != 0) {
    e.site = 0;
  }
  if ((f & codec::f_old_block) != 0) {
    e.old_block = 0x7f12'3456'7000 + 16 * i;
  }
  if ((f & codec::f_size) != 0) {
    e.size = i == 3 ? ~std::uint64_t{0} : 24 + i;
  }
  if ((f & codec::f_alignment) != 0) {
    e.alignment = std::uint64_t{64} << (i % 8);
  }
  if ((f & codec::f_block) != 0) {
    e.block = i % 5 == 0 ? 0 : 0x5555'0000'0000 - 32 * i;
  }
  if ((f & codec::f_tid) != 0) {
    e.tid = 4242 + i;
  }
  if ((f & codec::f_frames) != 0) {
    e.site = 0;
    e.frames = frames_a;
    e.frame_count = 3;
  }
  if ((f & codec::f_mapping) != 0) {
    e.block = 0x5555'5555'4000;
    e.size = 0x21000;
    e.offset = 0x1000;
    e.path = "/usr/lib/x86_64-linux-gnu/libc.so.6";
    e.build_id = std::string_view("\x01\x02\xab\x00\xff", 5);
  }
  return e;
}

/// A malloc without a site, which any thread can record before defining one.
trace::event malloc_without_site(std::uint64_t i) {
  trace::event e = sample(trace::event_kind::malloc, i);
  e.site = trace::no_site;
  return e;
}

/// Every kind once, the site defined first.
std::vector<trace::event> every_kind() {
  std::vector<trace::event> events;
  events.push_back(sample(trace::event_kind::site, 0));
  std::uint64_t i = 1;
  for (trace::event_kind k : trace::all_kinds) {
    if (k != trace::event_kind::site) {
      events.push_back(sample(k, i++));
    }
  }
  return events;
}

std::vector<trace::event> read_all(trace::reader& r) {
  std::vector<trace::event> out;
  trace::event e;
  while (r.next(e)) {
    out.push_back(e);
  }
  return out;
}

void expect_same(const trace::event& want, const trace::event& got, std::uint32_t thread,
                 std::uint32_t site) {
  SCOPED_TRACE(trace::kind_name(want.kind));
  EXPECT_EQ(want.kind, got.kind);
  EXPECT_EQ(thread, got.thread);
  EXPECT_EQ(want.time_ns, got.time_ns);
  EXPECT_EQ(want.block, got.block);
  EXPECT_EQ(want.old_block, got.old_block);
  EXPECT_EQ(want.size, got.size);
  EXPECT_EQ(want.alignment, got.alignment);
  EXPECT_EQ(want.site == trace::no_site ? trace::no_site : site, got.site);
  EXPECT_EQ(want.tid, got.tid);
  EXPECT_EQ(want.offset, got.offset);
  EXPECT_EQ(want.path, got.path);
  EXPECT_EQ(want.build_id, got.build_id);
  ASSERT_EQ(want.frame_count, got.frame_count);
  for (std::size_t i = 0; i < want.frame_count; ++i) {
    EXPECT_EQ(want.frames[i], got.frames[i]);
  }
}

class TraceRoundTrip : public ::testing::TestWithParam<bool> {};

TEST_P(TraceRoundTrip, EveryEventKindComesBackFieldByField) {
  trace::header h;
  h.start_wall_ns = 1'700'000'000'123'456'789;
  h.pid = 1234;
  h.parent_pid = 99;
  h.stack_depth = 3;
  trace::builder b(h, GetParam());
  const std::vector<trace::event> events = every_kind();
  b.frame(7, events);
  trace::reader r(b.bytes());
  EXPECT_EQ(1234u, r.file_header().pid);
  EXPECT_EQ(99u, r.file_header().parent_pid);
  EXPECT_EQ(3u, r.file_header().stack_depth);
  EXPECT_EQ(h.start_wall_ns, r.file_header().start_wall_ns);
  const std::vector<trace::event> got = read_all(r);
  EXPECT_EQ(trace::reader::status::end, r.state()) << r.message();
  EXPECT_EQ(b.bytes().size(), r.offset());
  ASSERT_EQ(events.size(), got.size());
  for (std::size_t i = 0; i < events.size(); ++i) {
    expect_same(events[i], got[i], 7, 0);
  }
  EXPECT_EQ(1u, r.frames());
  ASSERT_EQ(1u, r.site_count());
  EXPECT_EQ(std::vector<std::uint64_t>(std::begin(frames_a), std::end(frames_a)), r.site_frames(0));
}

INSTANTIATE_TEST_SUITE_P(StoredAndCompressed, TraceRoundTrip, ::testing::Bool());

TEST(Trace, EveryKindHasANameAndARole) {
  std::size_t allocations = 0;
  std::size_t releases = 0;
  for (trace::event_kind k : trace::all_kinds) {
    ASSERT_NE(nullptr, trace::kind_name(k));
    allocations += trace::role(k) == trace::kind_role::allocation;
    releases += trace::role(k) == trace::kind_role::release;
  }
  EXPECT_EQ(15u, allocations); // 7 C entry points and 8 operator new forms
  EXPECT_EQ(13u, releases);    // free and 12 operator delete forms
  EXPECT_EQ(trace::kind_role::reallocation, trace::role(trace::event_kind::realloc));
  EXPECT_EQ(-1, trace::kind_fields(0));
  EXPECT_EQ(-1, trace::kind_fields(255));
}

TEST(Trace, ReadsFromAFile) {
  trace::builder b;
  b.frame(1, every_kind());
  b.frame(1, {sample(trace::event_kind::free, 3)});
  const std::string path = ::testing::TempDir() + "memkit_trace_test.trace";
  std::FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(nullptr, f);
  ASSERT_EQ(b.bytes().size(), std::fwrite(b.bytes().data(), 1, b.bytes().size(), f));
  std::fclose(f);
  trace::reader r(path);
  EXPECT_EQ(every_kind().size() + 1, read_all(r).size());
  EXPECT_EQ(trace::reader::status::end, r.state()) << r.message();
  std::remove(path.c_str());

  trace::reader missing(path);
  EXPECT_EQ(trace::reader::status::error, missing.state());
  EXPECT_NE(std::string::npos, missing.message().find("cannot open")) << missing.message();
}

TEST(Trace, SitesAreInternedAcrossThreadsAndFrames) {
  trace::event a = sample(trace::event_kind::site, 0);
  trace::event b = a;
  b.frames = frames_b;
  b.frame_count = 1;
  b.site = 1;
  trace::event m = sample(trace::event_kind::malloc, 1);
  trace::builder t;
  t.frame(1, {a, m});
  // Thread 2 defines the same frames under local index 5, then a new site under 0.
  trace::event a5 = a;
  a5.site = 5;
  trace::event m5 = m;
  m5.site = 5;
  trace::event b0 = b;
  b0.site = 0;
  trace::event m0 = m;
  m0.site = 0;
  t.frame(2, {a5, m5, b0, m0});
  // Thread 1 again, a later frame: local index 0 still names the first site.
  t.frame(1, {m});
  trace::reader r(t.bytes());
  const std::vector<trace::event> got = read_all(r);
  ASSERT_EQ(trace::reader::status::end, r.state()) << r.message();
  ASSERT_EQ(6u, got.size()); // the repeated definition is not reported
  EXPECT_EQ(trace::event_kind::site, got[0].kind);
  EXPECT_EQ(0u, got[1].site);
  EXPECT_EQ(0u, got[2].site);
  EXPECT_EQ(2u, got[2].thread);
  EXPECT_EQ(trace::event_kind::site, got[3].kind);
  EXPECT_EQ(1u, got[3].site);
  EXPECT_EQ(1u, got[4].site);
  EXPECT_EQ(0u, got[5].site);
  EXPECT_EQ(1u, got[5].thread);
  EXPECT_EQ(2u, r.site_count());
}

TEST(Trace, UnknownSiteIsNoSite) {
  trace::builder t;
  t.frame(1, {malloc_without_site(1)});
  trace::reader r(t.bytes());
  trace::event e;
  ASSERT_TRUE(r.next(e)) << r.message();
  EXPECT_EQ(trace::no_site, e.site);
}

/// Three frames of two threads, stored so that byte edits reach the payload.
trace::builder three_frames() {
  trace::builder b({}, false);
  b.frame(1, every_kind());
  b.frame(2, {sample(trace::event_kind::thread_start, 1), malloc_without_site(2)});
  b.frame(1, {sample(trace::event_kind::free, 4)});
  return b;
}

TEST(Trace, CutAnywhereReadsEveryCompleteFrameAndSaysWhere) {
  const std::vector<std::uint8_t> whole = three_frames().bytes();
  // ends[c]: where the first c frames end; events_before[c]: the events they hold.
  std::vector<std::uint64_t> ends{codec::file_header_size};
  std::vector<std::size_t> events_before{0};
  {
    trace::reader r(whole);
    trace::event e;
    while (r.next(e)) {
      if (r.frames() == ends.size()) {
        ends.push_back(r.offset());
        events_before.push_back(events_before.back());
      }
      ++events_before.back();
    }
    ASSERT_EQ(trace::reader::status::end, r.state()) << r.message();
  }
  ASSERT_EQ(4u, ends.size());
  for (std::size_t cut = 0; cut < whole.size(); ++cut) {
    SCOPED_TRACE(cut);
    trace::reader r(std::vector<std::uint8_t>(whole.begin(), whole.begin() + cut));
    const std::size_t n = read_all(r).size();
    std::size_t complete = 0;
    while (complete + 1 < ends.size() && ends[complete + 1] <= cut) {
      ++complete;
    }
    if (cut < codec::file_header_size) {
      EXPECT_EQ(trace::reader::status::truncated, r.state()) << r.message();
      EXPECT_EQ(0u, n);
      continue;
    }
    EXPECT_EQ(events_before[complete], n);
    EXPECT_EQ(ends[complete], r.offset());
    if (cut == ends[complete]) {
      EXPECT_EQ(trace::reader::status::end, r.state()) << r.message();
    } else {
      EXPECT_EQ(trace::reader::status::truncated, r.state());
      EXPECT_NE(std::string::npos, r.message().find("byte " + std::to_string(ends[complete])))
          << r.message();
    }
  }
}

TEST(Trace, EveryCorruptedFrameByteStopsTheReader) {
  for (bool compress : {false, true}) {
    trace::builder b({}, compress);
    b.frame(1, every_kind());
    b.frame(2, {sample(trace::event_kind::thread_start, 1)});
    const std::vector<std::uint8_t> whole = b.bytes();
    for (std::size_t i = codec::file_header_size; i < whole.size(); ++i) {
      for (std::uint8_t flip : {0x01, 0x80, 0xff}) {
        std::vector<std::uint8_t> bad = whole;
        bad[i] ^= flip;
        trace::reader r(bad);
        read_all(r);
        ASSERT_NE(trace::reader::status::end, r.state())
            << "compress " << compress << " byte " << i << " ^ " << int{flip};
        EXPECT_LE(r.offset(), i);
        EXPECT_NE(std::string::npos, r.message().find("at byte " + std::to_string(r.offset())));
      }
    }
  }
}

/// Reads `bytes`, expecting `events` events and then an error at `offset` whose message holds
/// `text`.
void expect_error(std::vector<std::uint8_t> bytes, std::size_t events, std::uint64_t offset,
                  const std::string& text) {
  trace::reader r(std::move(bytes));
  EXPECT_EQ(events, read_all(r).size());
  EXPECT_EQ(trace::reader::status::error, r.state());
  EXPECT_EQ(offset, r.offset());
  EXPECT_NE(std::string::npos, r.message().find(text)) << r.message();
}

TEST(Trace, VersionMismatchIsAnErrorAtByteEight) {
  // An older trace (version 1 had no streams and no references) and a newer one.
  for (std::uint32_t version : {codec::format_version - 1, codec::format_version + 1}) {
    std::vector<std::uint8_t> bytes = three_frames().bytes();
    codec::put_le<std::uint32_t>(bytes.data() + 8, version);
    expect_error(bytes, 0, 8,
                 "format version " + std::to_string(version) + ", this reader reads version " +
                     std::to_string(codec::format_version));
  }
}

/// The frame of `rows` (preamble and events as frame_encoder writes them), stored.
std::vector<std::uint8_t> frame_of_rows(const std::vector<std::uint8_t>& rows) {
  std::vector<std::uint8_t> payload(trace::streams_bound(rows.size()));
  std::vector<std::uint8_t> scratch(trace::streams_scratch(rows.size()));
  payload.resize(trace::to_streams(rows.data(), rows.size(), payload.data(), scratch.data()));
  std::vector<std::uint8_t> out(codec::file_header_size + trace::frame_bound(payload.size()));
  codec::put_file_header(out.data(), {});
  out.resize(codec::file_header_size + trace::write_frame(payload.data(), payload.size(),
                                                          out.data() + codec::file_header_size,
                                                          nullptr, 0));
  return out;
}

TEST(Trace, AReferenceBeyondTheThreadsAllocationsIsAnError) {
  // Thread 1, frame 0, base time 0; malloc (no site, 16 bytes, block +32); a free naming the
  // allocation before the first.
  const std::uint8_t free_ref =
      static_cast<std::uint8_t>(trace::event_kind::free) | codec::reference_flag;
  const std::vector<std::uint8_t> rows = {1, 0, 0, 1, 0, 0, 16, 64, free_ref, 0, 0, 1};
  expect_error(frame_of_rows(rows), 1, codec::file_header_size,
               "a reference to allocation 2 back, where the thread made 1");
  std::vector<std::uint8_t> flagged_malloc = rows;
  flagged_malloc[3] |= codec::reference_flag;
  expect_error(frame_of_rows(flagged_malloc), 0, codec::file_header_size,
               "a reference flag on a kind that releases no block");
  std::vector<std::uint8_t> flagged_free = rows;
  flagged_free[8] = static_cast<std::uint8_t>(trace::event_kind::free) | codec::reuse_flag;
  expect_error(frame_of_rows(flagged_free), 1, codec::file_header_size,
               "a reuse flag on a kind that allocates no block");
  // The malloc reuses released block 0 of its class, where nothing was released.
  std::vector<std::uint8_t> reuse_nothing = rows;
  reuse_nothing[3] |= codec::reuse_flag;
  reuse_nothing[7] = 0;
  expect_error(frame_of_rows(reuse_nothing), 0, codec::file_header_size,
               "a reuse of released block 0 of a size class that has none there");
}

TEST(Trace, StreamsThatOutlastTheEventsAreAnError) {
  std::vector<std::uint8_t> rows = {1, 0, 0, 1, 0, 0, 16, 64};
  std::vector<std::uint8_t> payload(trace::streams_bound(rows.size()));
  std::vector<std::uint8_t> scratch(trace::streams_scratch(rows.size()));
  payload.resize(trace::to_streams(rows.data(), rows.size(), payload.data(), scratch.data()));
  // The preamble's 3 bytes, then the stream lengths: one byte more in the last stream.
  ASSERT_EQ(0u, payload[3 + codec::s_other]);
  payload[3 + codec::s_other] = 1;
  payload.push_back(7);
  std::vector<std::uint8_t> out(codec::file_header_size + trace::frame_bound(payload.size()));
  codec::put_file_header(out.data(), {});
  out.resize(codec::file_header_size + trace::write_frame(payload.data(), payload.size(),
                                                          out.data() + codec::file_header_size,
                                                          nullptr, 0));
  expect_error(out, 1, codec::file_header_size, "the frame's streams hold more than its events");
}

TEST(TraceCodec, AReleaseNamesItsAllocationByReference) {
  std::uint8_t buf[256];
  auto coder = std::make_unique<trace::thread_coder>();
  trace::frame_encoder enc(buf, sizeof buf, coder.get());
  enc.begin(1, 0, 0);
  const std::size_t preamble = enc.size();
  using k = trace::event_kind;
  ASSERT_TRUE(enc.put_call({k::operator_new, 1, trace::no_site, 0, 40, 0, 0x7000}));
  ASSERT_TRUE(enc.put_call({k::operator_new, 2, trace::no_site, 0, 40, 0, 0x7030}));
  const std::size_t before = enc.size();
  ASSERT_TRUE(enc.put_call({k::operator_delete_sized, 3, trace::no_site, 0, 40, 0, 0x7000}));
  // The tag with the flag, the time delta, no site, the size as a delta from the allocation's
  // (0), and the reference: one allocation back of the last.
  const std::uint8_t want[] = {
      static_cast<std::uint8_t>(k::operator_delete_sized) | codec::reference_flag, 1, 0, 0, 1};
  ASSERT_EQ(sizeof want, enc.size() - before);
  EXPECT_EQ(0, std::memcmp(want, buf + before, sizeof want));
  // An allocation of the same class that returns the released block names its place among the
  // class's released blocks: the first.
  const std::size_t reuse = enc.size();
  ASSERT_TRUE(enc.put_call({k::operator_new, 4, trace::no_site, 0, 33, 0, 0x7000}));
  const std::uint8_t reused[] = {static_cast<std::uint8_t>(k::operator_new) | codec::reuse_flag, 1,
                                 0, 33, 0};
  ASSERT_EQ(sizeof reused, enc.size() - reuse);
  EXPECT_EQ(0, std::memcmp(reused, buf + reuse, sizeof reused));
  // The block at 0x7030 was never released: a free of 0x7000 now names the last allocation, and
  // a second free of it, forgotten by then, is written as an address.
  ASSERT_TRUE(enc.put_call({k::free, 5, trace::no_site, 0, 0, 0, 0x7000}));
  const std::size_t again = enc.size();
  ASSERT_TRUE(enc.put_call({k::free, 6, trace::no_site, 0, 0, 0, 0x7000}));
  EXPECT_EQ(static_cast<std::uint8_t>(k::free), buf[again]);
  EXPECT_LT(preamble, again);
}

/// Calls of `threads` threads on a shared heap of random blocks, some freed by another thread,
/// some freed twice or never allocated, sized releases with the right size and a wrong one,
/// reallocs and failed allocations: what the block coding must bring back exactly.
std::vector<std::vector<trace::event>> random_calls(std::uint64_t seed, int threads, int calls) {
  std::uint64_t x = seed;
  auto next = [&x] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  using k = trace::event_kind;
  std::vector<std::vector<trace::event>> out(static_cast<std::size_t>(threads));
  std::vector<std::pair<std::uint64_t, std::uint64_t>> live;     // block, size
  std::vector<std::pair<std::uint64_t, std::uint64_t>> released; // block, size
  std::uint64_t top = 0x5555'0000'0000;
  for (int i = 0; i < calls; ++i) {
    trace::event e;
    e.time_ns = 1000 + static_cast<std::uint64_t>(i) * 50;
    e.site = trace::no_site;
    const std::uint64_t r = next();
    const std::uint64_t size = r % 64 == 0 ? ~std::uint64_t{0} - r % 3 : 1 + (r >> 8) % 2000;
    const auto pick = static_cast<std::size_t>((r >> 20) % (live.empty() ? 1 : live.size()));
    switch ((r >> 40) % 8) {
    case 0:
    case 1:
    case 2: // an allocation: a freed block again, a new one, or a failure
      e.kind = (r >> 50) % 2 == 0 ? k::malloc : k::operator_new;
      e.size = size;
      e.block = (r >> 44) % 16 == 0 ? 0 : (top += 16 * (1 + (r >> 52) % 8));
      if ((r >> 44) % 4 == 1 && !released.empty()) { // a block released before, as allocators do
        const std::size_t back = std::min<std::size_t>((r >> 53) % 12, released.size() - 1);
        const auto it = released.end() - 1 - static_cast<std::ptrdiff_t>(back);
        e.block = it->first;
        e.size = (r >> 58) % 2 == 0 ? it->second : size;
        released.erase(it);
      }
      if (e.block != 0) {
        live.emplace_back(e.block, e.size);
      }
      break;
    case 3:
    case 4:
    case 5: // a release of a live block, sized right or wrong, or of one never allocated
      if (live.empty() || (r >> 44) % 32 == 0) {
        e.kind = k::free;
        e.block = (r >> 44) % 2 == 0 ? 0 : top + 4096;
        break;
      }
      e.kind = (r >> 50) % 2 == 0 ? k::free : k::operator_delete_sized;
      e.block = live[pick].first;
      e.size = e.kind == k::free    ? 0
               : (r >> 55) % 4 == 0 ? live[pick].second + 8
                                    : live[pick].second;
      released.push_back(live[pick]);
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(pick));
      break;
    case 6: // a realloc in place, or moving
      e.kind = k::realloc;
      e.size = size;
      if (!live.empty()) {
        e.old_block = live[pick].first;
        e.block = (r >> 45) % 2 == 0 ? e.old_block : (top += 64);
        live[pick] = {e.block, e.size};
      } else {
        e.block = (top += 64);
        live.emplace_back(e.block, e.size);
      }
      break;
    default: // a block freed a second time: the coder forgot it
      e.kind = k::free;
      e.block = live.empty() ? 0 : live[pick].first ^ 16;
      break;
    }
    out[(r >> 60) % static_cast<std::uint64_t>(threads)].push_back(e);
  }
  return out;
}

TEST(Trace, AThreadExitStartsTheBlockStateAfresh) {
  using k = trace::event_kind;
  // Before the exit a free of 0x7000 would name its allocation; after it, 0x7000 is written as an
  // address, and 0x9000's free names the allocation made after the exit.
  const std::pair<k, std::uint64_t> calls[] = {
      {k::malloc, 0x7000}, {k::malloc, 0x8000}, {k::thread_exit, 0},      {k::malloc, 0x9000},
      {k::free, 0x9000},   {k::free, 0x7000},   {k::operator_new, 0x9000}};
  std::vector<trace::event> events;
  for (const auto& [kind, block] : calls) {
    events.emplace_back();
    events.back().kind = kind;
    events.back().time_ns = events.size();
    events.back().size = trace::role(kind) == trace::kind_role::allocation ? 40 : 0;
    events.back().block = block;
  }
  trace::builder b;
  b.frame(1, {events.begin(), events.begin() + 4});
  b.frame(1, {events.begin() + 4, events.end()});
  trace::reader r(b.bytes());
  const std::vector<trace::event> got = read_all(r);
  ASSERT_EQ(trace::reader::status::end, r.state()) << r.message();
  ASSERT_EQ(events.size(), got.size());
  for (std::size_t i = 0; i < events.size(); ++i) {
    expect_same(events[i], got[i], 1, trace::no_site);
  }
}

TEST(Trace, BlocksComeBackExactlyAcrossFramesAndThreads) {
  for (std::uint64_t seed : {std::uint64_t{88172645463325252u}, std::uint64_t{0x2545F4914F6CDD1Du},
                             std::uint64_t{12345u}}) {
    SCOPED_TRACE(seed);
    const auto calls = random_calls(seed, 3, 60000);
    trace::builder b;
    // Frames of varied lengths, the threads' interleaved.
    std::vector<trace::event> want;
    std::vector<std::uint32_t> want_thread;
    std::size_t at[3] = {};
    for (std::size_t len = 1;
         at[0] < calls[0].size() || at[1] < calls[1].size() || at[2] < calls[2].size();
         len = len * 7 % 9973 + 1) {
      for (std::uint32_t t = 0; t < 3; ++t) {
        const std::size_t n = std::min(len, calls[t].size() - at[t]);
        if (n == 0) {
          continue;
        }
        std::vector<trace::event> frame(calls[t].begin() + static_cast<std::ptrdiff_t>(at[t]),
                                        calls[t].begin() + static_cast<std::ptrdiff_t>(at[t] + n));
        b.frame(t + 1, frame);
        want.insert(want.end(), frame.begin(), frame.end());
        want_thread.insert(want_thread.end(), n, t + 1);
        at[t] += n;
      }
    }
    trace::reader r(b.bytes());
    const std::vector<trace::event> got = read_all(r);
    ASSERT_EQ(trace::reader::status::end, r.state()) << r.message();
    ASSERT_EQ(want.size(), got.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
      SCOPED_TRACE(i);
      expect_same(want[i], got[i], want_thread[i], trace::no_site);
      if (::testing::Test::HasFailure()) {
        return;
      }
    }
  }
}

TEST(Trace, NotATraceIsAnErrorAtByteZero) {
  expect_error({'G', 'I', 'F', '8', '9', 'a', 0, 0, 0, 0, 0, 0}, 0, 0, "not a memkit trace");
}

TEST(Trace, AMissingFrameIsReported) {
  trace::builder b({}, false);
  b.frame(1, {sample(trace::event_kind::thread_start, 1)});
  const std::size_t first = b.bytes().size();
  b.frame(1, {sample(trace::event_kind::thread_exit, 2)});
  const std::size_t second = b.bytes().size();
  b.frame(1, {sample(trace::event_kind::thread_exit, 3)});
  std::vector<std::uint8_t> bytes = b.bytes();
  bytes.erase(bytes.begin() + static_cast<std::ptrdiff_t>(first),
              bytes.begin() + static_cast<std::ptrdiff_t>(second));
  expect_error(bytes, 1, first, "frame 2 of thread 1 where frame 1 was due");
}

TEST(Trace, ASiteUsedBeforeItsDefinitionIsAnError) {
  trace::builder b({}, false);
  b.frame(1, {sample(trace::event_kind::malloc, 1)});
  expect_error(b.bytes(), 0, codec::file_header_size, "site 0 used before its definition");
}

TEST(TraceCodec, VarintsRoundTripAndRejectOverlongInput) {
  const std::uint64_t values[] = {0, 1, 127, 128, 300, 0xffff'ffff, ~std::uint64_t{0}};
  for (std::uint64_t v : values) {
    std::uint8_t buf[codec::max_varint_bytes];
    const std::uint8_t* end = codec::put_varint(buf, v);
    const std::uint8_t* p = buf;
    std::uint64_t got = 0;
    ASSERT_TRUE(codec::get_varint(&p, end, &got));
    EXPECT_EQ(v, got);
    EXPECT_EQ(end, p);
    p = buf;
    EXPECT_FALSE(codec::get_varint(&p, end - 1, &got)) << v; // cut short
    EXPECT_EQ(buf, p);
  }
  const std::uint8_t overflow[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02};
  const std::uint8_t* p = overflow;
  std::uint64_t v = 0;
  EXPECT_FALSE(codec::get_varint(&p, overflow + sizeof overflow, &v));
  const std::uint8_t eleven[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00};
  p = eleven;
  EXPECT_FALSE(codec::get_varint(&p, eleven + sizeof eleven, &v));
}

TEST(TraceCodec, DeltasOfAddressesRoundTripBothWays) {
  const std::uint64_t a = 0x7fff'0000'1000;
  const std::uint64_t b = 0x5555'0000'0010;
  EXPECT_EQ(b, codec::undelta(a, codec::delta(a, b)));
  EXPECT_EQ(a, codec::undelta(b, codec::delta(b, a)));
  EXPECT_EQ(0u, codec::undelta(~std::uint64_t{0}, codec::delta(~std::uint64_t{0}, 0)));
  EXPECT_EQ(2u, codec::delta(0x1000, 0x1001)); // small moves stay small either way
  EXPECT_EQ(1u, codec::delta(0x1001, 0x1000));
}

TEST(TraceCodec, TheEncoderRefusesWhatMightNotFit) {
  std::uint8_t buf[64];
  auto coder = std::make_unique<trace::thread_coder>();
  trace::frame_encoder enc(buf, sizeof buf, coder.get());
  enc.begin(1, 0, 0);
  std::size_t n = 0;
  while (enc.put(sample(trace::event_kind::malloc, 1))) {
    ++n;
  }
  EXPECT_EQ(enc.events(), n);
  EXPECT_LE(enc.size(), sizeof buf);
  EXPECT_LT(sizeof buf - enc.size(), trace::encoded_bound(sample(trace::event_kind::malloc, 1)));
}

} // namespace
