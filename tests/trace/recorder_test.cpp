// SPDX-License-Identifier: BSL-1.0
// tests/trace/recorder_test.cpp: the recorder (src/trace.cpp, MEMKIT_OPTIONS=trace:PATH) from
// outside: recorded_program.cpp and python3 run under libmemkit-preload.so (and the program
// linked with memkit::new_delete), and their traces are read back and checked: event kinds and
// counts, every release paired with a live block, threads, cross-thread frees, sizes, fork, a
// program run by a recording one, and traces of killed programs.
#include "memkit/trace.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <gtest/gtest.h>
#include <map>
#include <set>
#include <spawn.h>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

extern char** environ;

namespace {

namespace trace = memkit::trace;
using kind = trace::event_kind;

struct run_result {
  int status = -1;
  std::string out;
};

/// Runs `args` with MEMKIT_OPTIONS=`options` and, if `preload` is not empty, LD_PRELOAD=`preload`.
run_result run(const std::vector<std::string>& args, const std::string& options,
               const std::string& preload) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string v = *e;
    if (v.rfind("LD_PRELOAD=", 0) != 0 && v.rfind("MEMKIT_OPTIONS=", 0) != 0) {
      env.push_back(v);
    }
  }
  env.push_back("MEMKIT_OPTIONS=" + options);
  if (!preload.empty()) {
    env.push_back("LD_PRELOAD=" + preload);
  }
  std::vector<char*> envp;
  for (std::string& v : env) {
    envp.push_back(v.data());
  }
  envp.push_back(nullptr);
  std::vector<std::string> argv_storage = args;
  std::vector<char*> argv;
  for (std::string& a : argv_storage) {
    argv.push_back(a.data());
  }
  argv.push_back(nullptr);
  int pipefd[2];
  run_result r;
  if (::pipe(pipefd) != 0) {
    return r;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipefd[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, pipefd[0]);
  pid_t pid = 0;
  const int err = ::posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipefd[1]);
  if (err == 0) {
    char buf[4096];
    for (ssize_t n; (n = ::read(pipefd[0], buf, sizeof buf)) > 0;) {
      r.out.append(buf, static_cast<std::size_t>(n));
    }
    ::waitpid(pid, &r.status, 0);
  }
  ::close(pipefd[0]);
  return r;
}

/// A fresh path for a trace, its PATH.<pid> siblings removed.
std::string trace_path(const std::string& name) {
  const std::string path = ::testing::TempDir() + "memkit_recorder_" + name + ".trace";
  std::remove(path.c_str());
  return path;
}

/// A trace read whole, with what the checks need.
struct recorded {
  std::vector<trace::event> events;
  trace::reader::status state = trace::reader::status::ok;
  std::string message;
  trace::header header;
  std::uint64_t exe_begin = 0; ///< the recorded program's executable segment
  std::uint64_t exe_end = 0;
  bool exe_has_build_id = false;
  std::vector<std::vector<std::uint64_t>> sites;

  /// Whether `e` was called from the program's own code (not a library's).
  bool own(const trace::event& e) const {
    return e.site != trace::no_site && sites[e.site][0] >= exe_begin && sites[e.site][0] < exe_end;
  }
};

recorded read_trace(const std::string& path, const std::string& exe) {
  recorded t;
  trace::reader r(path);
  trace::event e;
  while (r.next(e)) {
    if (e.kind == kind::mapping && e.path == exe) {
      t.exe_begin = e.block;
      t.exe_end = e.block + e.size;
      t.exe_has_build_id = !e.build_id.empty();
    }
    e.path = {};
    e.build_id = {};
    e.frames = nullptr;
    t.events.push_back(e);
  }
  for (std::size_t i = 0; i < r.site_count(); ++i) {
    t.sites.push_back(r.site_frames(static_cast<std::uint32_t>(i)));
  }
  t.state = r.state();
  t.message = r.message();
  t.header = r.file_header();
  return t;
}

/// Pairs every release with the live block it frees, in time order (frees first on a tie).
/// \returns the releases whose block was not live; `cross_thread` counts frees by another thread.
struct pairing {
  std::size_t unknown = 0;
  std::size_t cross_thread = 0;
  std::size_t releases = 0;
};

pairing pair_blocks(std::vector<trace::event> events) {
  auto rank = [](const trace::event& e) {
    return trace::role(e.kind) == trace::kind_role::allocation ? 1 : 0;
  };
  std::stable_sort(events.begin(), events.end(), [&](const trace::event& a, const trace::event& b) {
    return a.time_ns != b.time_ns ? a.time_ns < b.time_ns : rank(a) < rank(b);
  });
  std::map<std::uint64_t, std::uint32_t> live; // block -> allocating thread
  pairing p;
  auto release = [&](const trace::event& e, std::uint64_t block) {
    if (block == 0) {
      return;
    }
    ++p.releases;
    const auto it = live.find(block);
    if (it == live.end()) {
      ++p.unknown;
      return;
    }
    p.cross_thread += it->second != e.thread;
    live.erase(it);
  };
  for (const trace::event& e : events) {
    switch (trace::role(e.kind)) {
    case trace::kind_role::allocation:
      if (e.block != 0) {
        EXPECT_TRUE(live.emplace(e.block, e.thread).second)
            << trace::kind_name(e.kind) << " returned live block " << e.block;
      }
      break;
    case trace::kind_role::release:
      release(e, e.block);
      break;
    case trace::kind_role::reallocation:
      release(e, e.old_block);
      if (e.block != 0) {
        live.emplace(e.block, e.thread);
      }
      break;
    case trace::kind_role::other:
      break;
    }
  }
  return p;
}

std::size_t count(const recorded& t, kind k, bool own_only) {
  return static_cast<std::size_t>(
      std::count_if(t.events.begin(), t.events.end(),
                    [&](const trace::event& e) { return e.kind == k && (!own_only || t.own(e)); }));
}

const std::string program = MEMKIT_TRACE_PROGRAM;
const std::string preload = MEMKIT_TRACE_PRELOAD;

/// The trace of the process whose pid the program run as `r` printed, recorded beside `path` (as
/// PATH.<pid>), read and removed.
recorded read_child_trace(const std::string& path, const run_result& r) {
  const std::string child_path = path + "." + std::to_string(std::atoi(r.out.c_str()));
  recorded child = read_trace(child_path, program);
  std::remove(child_path.c_str());
  return child;
}

TEST(Recorder, RecordsEveryEntryPointWithSizesAlignmentsAndSites) {
  const std::string path = trace_path("kinds");
  ASSERT_EQ(0, run({program, "kinds", "10"}, "trace:" + path, preload).status);
  const recorded t = read_trace(path, program);
  ASSERT_EQ(trace::reader::status::end, t.state) << t.message;
  EXPECT_EQ(1u, t.header.stack_depth);
  EXPECT_NE(0u, t.exe_end) << "no mapping of " << program;
  EXPECT_TRUE(t.exe_has_build_id);
  // Every allocation and release kind, ten times each from the program's own code.
  for (kind k : trace::all_kinds) {
    if (trace::role(k) == trace::kind_role::other) {
      continue;
    }
    // free: after 8 of the C allocations; realloc: 3 calls; each operator new form but the
    // nothrow ones: twice, for the unsized and the sized delete.
    const bool twice = k == kind::operator_new || k == kind::operator_new_array ||
                       k == kind::operator_new_aligned || k == kind::operator_new_array_aligned;
    const std::size_t per_round = k == kind::realloc ? 3 : k == kind::free ? 8 : twice ? 2 : 1;
    EXPECT_EQ(10 * per_round, count(t, k, true)) << trace::kind_name(k);
  }
  for (const trace::event& e : t.events) {
    if (!t.own(e)) {
      continue;
    }
    switch (e.kind) {
    case kind::malloc:
      EXPECT_EQ(100u, e.size);
      break;
    case kind::calloc:
      EXPECT_EQ(120u, e.size);
      break;
    case kind::reallocarray:
      EXPECT_EQ(300u, e.size);
      break;
    case kind::aligned_alloc:
      EXPECT_EQ(64u, e.alignment);
      break;
    case kind::posix_memalign:
      EXPECT_EQ(256u, e.alignment);
      break;
    case kind::operator_delete_sized_aligned:
      EXPECT_EQ(24u, e.size);
      EXPECT_EQ(64u, e.alignment);
      break;
    case kind::operator_delete_array_sized:
      EXPECT_EQ(24u, e.size);
      break;
    default:
      break;
    }
    if (trace::role(e.kind) == trace::kind_role::allocation) {
      EXPECT_NE(0u, e.block) << trace::kind_name(e.kind);
    }
  }
  // realloc's three: from null, growing, to zero (freed, null returned).
  std::vector<trace::event> reallocs;
  std::copy_if(t.events.begin(), t.events.end(), std::back_inserter(reallocs),
               [&](const trace::event& e) { return e.kind == kind::realloc && t.own(e); });
  ASSERT_EQ(30u, reallocs.size());
  EXPECT_EQ(0u, reallocs[0].old_block);
  EXPECT_EQ(50u, reallocs[0].size);
  EXPECT_EQ(reallocs[0].block, reallocs[1].old_block);
  EXPECT_EQ(5000u, reallocs[1].size);
  EXPECT_EQ(reallocs[1].block, reallocs[2].old_block);
  EXPECT_EQ(0u, reallocs[2].block);
  // Each line of the program is a site of its own: the ten rounds share them.
  std::set<std::uint32_t> own_sites;
  for (const trace::event& e : t.events) {
    if (t.own(e) && trace::role(e.kind) != trace::kind_role::other) {
      own_sites.insert(e.site);
    }
  }
  EXPECT_GE(own_sites.size(), 40u);
  EXPECT_LE(own_sites.size(), 60u);
  const pairing p = pair_blocks(t.events);
  EXPECT_EQ(0u, p.unknown) << "of " << p.releases;
  EXPECT_EQ(1u, count(t, kind::thread_start, false));
  EXPECT_GE(count(t, kind::rss_sample, false), 1u);
}

TEST(Recorder, RecordsThreadsAndCrossThreadFrees) {
  const std::string path = trace_path("threads");
  ASSERT_EQ(0, run({program, "threads"}, "trace:" + path, preload).status);
  const recorded t = read_trace(path, program);
  ASSERT_EQ(trace::reader::status::end, t.state) << t.message;
  // The main thread, 4 allocating and 4 freeing threads; the 8 exit.
  EXPECT_EQ(9u, count(t, kind::thread_start, false));
  EXPECT_EQ(8u, count(t, kind::thread_exit, false));
  std::map<std::uint32_t, std::multiset<std::uint64_t>> sizes_by_thread;
  std::vector<trace::event> own;
  std::map<std::uint32_t, std::uint64_t> last_time;
  for (const trace::event& e : t.events) {
    if (e.thread != 0) {
      EXPECT_GE(e.time_ns, last_time[e.thread]) << "thread " << e.thread << " out of order";
      last_time[e.thread] = e.time_ns;
    }
    if (t.own(e) && (e.kind == kind::malloc || e.kind == kind::free)) {
      own.push_back(e);
      if (e.kind == kind::malloc) {
        sizes_by_thread[e.thread].insert(e.size);
      }
    }
  }
  // Four threads allocated 1000 blocks each, of the sizes thread t asks for, some t.
  ASSERT_EQ(4u, sizes_by_thread.size());
  std::set<int> matched;
  for (const auto& [thread, sizes] : sizes_by_thread) {
    for (int t_index = 0; t_index < 4; ++t_index) {
      std::multiset<std::uint64_t> want;
      for (int i = 0; i < 1000; ++i) {
        want.insert(1 + static_cast<std::uint64_t>(t_index * 1000 + i) % 500);
      }
      if (want == sizes) {
        matched.insert(t_index);
      }
    }
  }
  EXPECT_EQ(4u, matched.size());
  EXPECT_EQ(4000u, count(t, kind::free, true));
  const pairing p = pair_blocks(own);
  EXPECT_EQ(0u, p.unknown);
  EXPECT_EQ(4000u, p.releases);
  EXPECT_EQ(2000u, p.cross_thread); // the odd blocks, freed by the next thread
}

// Threads that fill buffers faster than the writer thread compresses them help it, each
// compressing the oldest waiting buffer, any thread's: the frames still reach the file whole and
// each thread's in its order (a release names its allocation across frames only then).
TEST(Recorder, BuffersCompressedOnSeveralThreadsKeepEachThreadsOrder) {
  const std::string path = trace_path("many-buffers");
  ASSERT_EQ(0, run({program, "many-buffers"}, "trace:" + path, preload).status);
  const recorded t = read_trace(path, program);
  ASSERT_EQ(trace::reader::status::end, t.state) << t.message;
  std::vector<trace::event> own;
  std::map<std::uint32_t, std::size_t> mallocs_by_thread;
  for (const trace::event& e : t.events) {
    if (t.own(e) && (e.kind == kind::malloc || e.kind == kind::free)) {
      own.push_back(e);
      if (e.kind == kind::malloc) {
        ++mallocs_by_thread[e.thread];
        EXPECT_LT(e.size, 16u + 3 * 8 + 64) << "an event decoded against another's blocks";
      }
    }
  }
  ASSERT_EQ(3u, mallocs_by_thread.size());
  for (const auto& [thread, n] : mallocs_by_thread) {
    EXPECT_EQ(200000u, n) << "thread " << thread;
  }
  const pairing p = pair_blocks(own);
  EXPECT_EQ(0u, p.unknown);
  EXPECT_EQ(3u * 200000u, p.releases);
}

TEST(Recorder, ThreadsOneAfterAnotherReuseRecordsAndStayApart) {
  const std::string path = trace_path("short_threads");
  ASSERT_EQ(0, run({program, "short-threads"}, "trace:" + path, preload).status);
  const recorded t = read_trace(path, program);
  ASSERT_EQ(trace::reader::status::end, t.state) << t.message;
  EXPECT_EQ(201u, count(t, kind::thread_start, false));
  EXPECT_EQ(200u, count(t, kind::thread_exit, false));
  std::map<std::uint32_t, std::size_t> mallocs;
  std::vector<trace::event> own;
  for (const trace::event& e : t.events) {
    if (t.own(e) && (e.kind == kind::malloc || e.kind == kind::free)) {
      own.push_back(e);
      mallocs[e.thread] += e.kind == kind::malloc;
    }
  }
  ASSERT_EQ(200u, mallocs.size()); // each thread its own number, though records are reused
  for (const auto& [thread, n] : mallocs) {
    EXPECT_EQ(100u, n) << "thread " << thread;
  }
  const pairing p = pair_blocks(own);
  EXPECT_EQ(0u, p.unknown);
  EXPECT_EQ(20000u, p.releases);
}

TEST(Recorder, AThreadStillCallingAtExitLeavesAWholeTrace) {
  const std::string path = trace_path("busy_at_exit");
  ASSERT_EQ(0, run({program, "busy-at-exit"}, "trace:" + path, preload).status);
  const recorded t = read_trace(path, program);
  ASSERT_EQ(trace::reader::status::end, t.state) << t.message;
  std::map<std::uint32_t, std::size_t> mallocs;
  for (const trace::event& e : t.events) {
    if (t.own(e) && e.kind == kind::malloc && e.size == 40) {
      ++mallocs[e.thread];
    }
  }
  ASSERT_EQ(1u, mallocs.size());
  EXPECT_GE(mallocs.begin()->second, 1000u); // 50 ms of calls, up to its last whole event
}

TEST(Recorder, StackOptionRecordsMoreFrames) {
  const std::string path = trace_path("stack");
  ASSERT_EQ(0, run({program, "kinds", "1"}, "trace:" + path + ",stack:4", preload).status);
  const recorded t = read_trace(path, program);
  ASSERT_EQ(trace::reader::status::end, t.state) << t.message;
  EXPECT_EQ(4u, t.header.stack_depth);
  std::size_t deep = 0;
  for (const trace::event& e : t.events) {
    if (t.own(e) && e.kind == kind::malloc) {
      deep += t.sites[e.site].size() >= 2;
    }
  }
  EXPECT_EQ(1u, deep); // every_kind_once's malloc, called from main
}

TEST(Recorder, NewDeleteLibraryRecordsOperatorNewAndDelete) {
  const std::string path = trace_path("new_delete");
  ASSERT_EQ(0, run({MEMKIT_TRACE_PROGRAM_NEW_DELETE, "kinds", "5"}, "trace:" + path, "").status);
  const recorded t = read_trace(path, MEMKIT_TRACE_PROGRAM_NEW_DELETE);
  ASSERT_EQ(trace::reader::status::end, t.state) << t.message;
  EXPECT_EQ(10u, count(t, kind::operator_new, true)); // for delete(p) and for delete(p, 24)
  EXPECT_EQ(5u, count(t, kind::operator_delete_array_sized_aligned, true));
  EXPECT_EQ(0u, count(t, kind::malloc, false)); // malloc is glibc's here
}

TEST(Recorder, AForkedChildRecordsToItsOwnFile) {
  const std::string path = trace_path("fork");
  const run_result r = run({program, "fork"}, "trace:" + path, preload);
  ASSERT_EQ(0, r.status);
  const recorded parent = read_trace(path, program);
  ASSERT_EQ(trace::reader::status::end, parent.state) << parent.message;
  for (const trace::event& e : parent.events) {
    EXPECT_NE(777777u, e.size) << "the child's malloc is in the parent's trace";
  }
  const recorded child = read_child_trace(path, r);
  ASSERT_EQ(trace::reader::status::end, child.state) << child.message;
  EXPECT_EQ(parent.header.pid, child.header.parent_pid);
  EXPECT_EQ(parent.header.start_wall_ns, child.header.start_wall_ns) << "one clock for both";
  std::vector<trace::event> calls;
  for (const trace::event& e : child.events) {
    if (trace::role(e.kind) != trace::kind_role::other) {
      calls.push_back(e);
    }
  }
  // The forking thread goes on as thread 1; its malloc and free, then exit's own calls.
  ASSERT_GE(calls.size(), 2u);
  EXPECT_EQ(kind::malloc, calls[0].kind);
  EXPECT_EQ(777777u, calls[0].size);
  EXPECT_EQ(1u, calls[0].thread);
  EXPECT_EQ(kind::free, calls[1].kind);
  EXPECT_EQ(calls[0].block, calls[1].block);
  EXPECT_EQ(1u, count(child, kind::thread_start, false));
}

// A forked child writes its trace from a writer thread of its own, as its parent does: the
// thread that calls malloc does not compress, and the writer samples the child's resident memory
// every 10 ms while it runs (without it, only when the trace begins and ends).
TEST(Recorder, AForkedChildHasAWriterThreadOfItsOwn) {
  const std::string path = trace_path("fork-sampled");
  const run_result r = run({program, "fork-sampled"}, "trace:" + path, preload);
  ASSERT_EQ(0, r.status);
  const recorded child = read_child_trace(path, r);
  ASSERT_EQ(trace::reader::status::end, child.state) << child.message;
  EXPECT_EQ(20u, count(child, kind::malloc, true));
  EXPECT_GE(count(child, kind::rss_sample, false), 4u) << "the child's 100 ms, sampled";
}

TEST(Recorder, AProgramStartedWhileRecordingWritesItsOwnFile) {
  const std::string path = trace_path("spawn");
  const run_result r = run({program, "spawn"}, "trace:" + path, preload);
  ASSERT_EQ(0, r.status);
  const recorded child = read_child_trace(path, r);
  ASSERT_EQ(trace::reader::status::end, child.state) << child.message;
  EXPECT_EQ(static_cast<std::uint32_t>(std::atoi(r.out.c_str())), child.header.pid);
  EXPECT_EQ(1u, count(child, kind::operator_delete_array_sized_aligned, true));
  const recorded parent = read_trace(path, program);
  ASSERT_EQ(trace::reader::status::end, parent.state) << parent.message;
  EXPECT_EQ(0u, count(parent, kind::operator_delete_array_sized_aligned, true));
  EXPECT_EQ(child.header.parent_pid, parent.header.pid);
}

class RecorderAbnormalExit : public ::testing::TestWithParam<const char*> {};

TEST_P(RecorderAbnormalExit, LeavesATraceReadableUpToItsLastWholeFrame) {
  const std::string path = trace_path(GetParam());
  run({program, GetParam()}, "trace:" + path, preload);
  const recorded t = read_trace(path, program);
  EXPECT_TRUE(t.state == trace::reader::status::end || t.state == trace::reader::status::truncated)
      << t.message;
  // Written by the writer while the program slept: several buffers of its 400,000 calls.
  EXPECT_GE(count(t, kind::malloc, true), 10000u);
}

INSTANTIATE_TEST_SUITE_P(KilledOrQuickExit, RecorderAbnormalExit,
                         ::testing::Values("kill", "quick-exit"));

TEST(Recorder, RecordsPython) {
  const std::string path = trace_path("python");
  const std::vector<std::string> args = {
      MEMKIT_TRACE_PYTHON, "-c",
      "import json; print(len(json.dumps([str(i) * 3 for i in range(20000)])))"};
  const run_result r = run(args, "trace:" + path, preload);
  ASSERT_EQ(0, r.status);
  EXPECT_EQ(run(args, "", "").out, r.out); // as on glibc
  const recorded t = read_trace(path, MEMKIT_TRACE_PYTHON);
  ASSERT_EQ(trace::reader::status::end, t.state) << t.message;
  EXPECT_GE(count(t, kind::malloc, false), 1000u);
  EXPECT_GE(count(t, kind::free, false), 1000u);
  EXPECT_GE(count(t, kind::realloc, false), 100u);
  const pairing p = pair_blocks(t.events);
  EXPECT_EQ(0u, p.unknown) << "of " << p.releases;
}

} // namespace
