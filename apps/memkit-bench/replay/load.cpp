// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/replay/load.cpp: synthetic traces, and recorded ones through the trace reader
// (include/memkit/trace.hpp): the one place that turns its events into the replay's, and puts a
// file's frames, written in whatever order the recorder's threads filled them, in time order.

#include "replay/load.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <limits>
#include <queue>
#include <stdexcept>
#include <tuple>
#include <unordered_map>
#include <vector>

#include <memkit/trace.hpp>

#include "replay/synthetic.hpp"

namespace memkit::bench::replay {
namespace {

/// \returns `e` as the replay's event, or false for the kinds the replay does not use (samples,
/// sites, mappings).
bool adapt(const memkit::trace::event& e, event& out) {
  using memkit::trace::kind_role;
  out = event{};
  out.thread = e.thread;
  out.time = e.time_ns;
  out.site = e.site;
  switch (memkit::trace::role(e.kind)) {
  case kind_role::allocation:
    out.kind = event_kind::alloc;
    out.result = e.block;
    out.size = e.size;
    out.alignment = static_cast<std::uint32_t>(
        std::min<std::uint64_t>(e.alignment, std::numeric_limits<std::uint32_t>::max()));
    return true;
  case kind_role::reallocation:
    out.kind = event_kind::realloc;
    out.ptr = e.old_block;
    out.result = e.block;
    out.size = e.size;
    return true;
  case kind_role::release:
    out.kind = event_kind::free;
    out.ptr = e.block;
    return true;
  case kind_role::other:
    break;
  }
  if (e.kind == memkit::trace::event_kind::thread_start ||
      e.kind == memkit::trace::event_kind::thread_exit) {
    out.kind = e.kind == memkit::trace::event_kind::thread_start ? event_kind::thread_start
                                                                 : event_kind::thread_exit;
    return e.thread != 0;
  }
  return false;
}

bool touches_a_block(const event& e) noexcept {
  return e.kind != event_kind::thread_start && e.kind != event_kind::thread_exit;
}

/// An unlinked temporary file of events, written in file order and read back by position.
class spill_file {
public:
  spill_file() {
    std::string name =
        (std::filesystem::temp_directory_path() / "memkit-bench-events-XXXXXX").string();
    fd_ = mkstemp(name.data());
    if (fd_ < 0) {
      throw std::runtime_error(std::string("cannot create a temporary file: ") +
                               std::strerror(errno));
    }
    unlink(name.c_str());
  }
  ~spill_file() { close(fd_); }
  spill_file(const spill_file&) = delete;
  spill_file& operator=(const spill_file&) = delete;

  void add(const event& e) {
    buffer_.push_back(e);
    if (buffer_.size() == batch) {
      flush();
    }
  }
  void flush() {
    const char* p = reinterpret_cast<const char*>(buffer_.data());
    std::size_t left = buffer_.size() * sizeof(event);
    while (left != 0) {
      const ssize_t n = write(fd_, p, left);
      if (n <= 0) {
        throw std::runtime_error(std::string("cannot write a temporary file: ") +
                                 std::strerror(errno));
      }
      p += n;
      left -= static_cast<std::size_t>(n);
    }
    buffer_.clear();
  }
  /// \effects reads `n` events from the `index`th into `out`.
  void read(std::uint64_t index, std::size_t n, event* out) const {
    char* p = reinterpret_cast<char*>(out);
    std::size_t left = n * sizeof(event);
    auto at = static_cast<off_t>(index * sizeof(event));
    while (left != 0) {
      const ssize_t got = pread(fd_, p, left, at);
      if (got <= 0) {
        throw std::runtime_error("cannot read back a temporary file");
      }
      p += got;
      at += got;
      left -= static_cast<std::size_t>(got);
    }
  }

  static constexpr std::size_t batch = 4096;

private:
  int fd_ = -1;
  std::vector<event> buffer_;
};

/// A run of consecutive events of one thread in file order (part of one frame or more): each
/// thread's runs are in its program order.
struct run {
  std::uint64_t first = 0; ///< index of its first event in the spill file
  std::uint64_t time = 0;  ///< its first event's time
  std::uint32_t count = 0;
  std::uint32_t next = UINT32_MAX; ///< the thread's next run
};

/// One thread's place in the merge.
struct thread_cursor {
  std::uint32_t run = UINT32_MAX;  ///< the run under way (UINT32_MAX: done)
  std::uint32_t last = UINT32_MAX; ///< its last run, while reading
  std::uint32_t at = 0;            ///< the next event's index in the run
  std::uint32_t loaded_from = 0;   ///< the run index of buffer[0]
  std::vector<event> buffer;       ///< some of the run's events, read back
};

constexpr std::uint32_t read_back = 1024; ///< events a thread reads back at once (48 KiB)

/// \effects gives `sink` every event of the runs, in time order (ties: file order).
void merge(const spill_file& spill, const std::vector<run>& runs,
           std::vector<thread_cursor>& threads, const event_sink& sink) {
  using key = std::tuple<std::uint64_t, std::uint64_t, std::uint32_t>; // time, index, thread
  std::priority_queue<key, std::vector<key>, std::greater<>> next;
  for (std::uint32_t t = 0; t < threads.size(); ++t) {
    const run& r = runs[threads[t].run];
    next.emplace(r.time, r.first, t);
  }
  while (!next.empty()) {
    const std::uint32_t t = std::get<2>(next.top());
    next.pop();
    thread_cursor& c = threads[t];
    const run& r = runs[c.run];
    if (c.at == 0 || c.at >= c.loaded_from + c.buffer.size()) {
      c.buffer.resize(std::min(read_back, r.count - c.at));
      spill.read(r.first + c.at, c.buffer.size(), c.buffer.data());
      c.loaded_from = c.at;
    }
    sink(c.buffer[c.at - c.loaded_from]);
    if (++c.at == r.count) {
      c.run = r.next;
      c.at = 0;
      if (c.run == UINT32_MAX) {
        c.buffer = {}; // the thread is done: its buffer goes
        continue;
      }
      next.emplace(runs[c.run].time, runs[c.run].first, t);
    } else if (c.at < c.loaded_from + c.buffer.size()) {
      next.emplace(c.buffer[c.at - c.loaded_from].time, r.first + c.at, t);
    } else {
      c.buffer.resize(std::min(read_back, r.count - c.at));
      spill.read(r.first + c.at, c.buffer.size(), c.buffer.data());
      c.loaded_from = c.at;
      next.emplace(c.buffer[0].time, r.first + c.at, t);
    }
  }
}

std::uint64_t read_file(const std::string& trace, const event_sink& sink,
                        std::map<std::uint32_t, std::uint64_t>* addresses) {
  memkit::trace::reader r(trace);
  spill_file spill;
  std::vector<run> runs;
  std::vector<thread_cursor> threads;
  std::unordered_map<std::uint32_t, std::uint32_t> dense; // trace thread -> threads' index
  std::uint32_t current = UINT32_MAX;                     // the thread of the run under way
  std::uint64_t index = 0;
  std::uint64_t blocks = 0;
  memkit::trace::event e;
  event x;
  while (r.next(e)) {
    if (!adapt(e, x)) {
      continue;
    }
    blocks += touches_a_block(x) ? 1 : 0;
    const auto [it, added] =
        dense.try_emplace(x.thread, static_cast<std::uint32_t>(threads.size()));
    if (added) {
      threads.emplace_back();
    }
    const std::uint32_t t = it->second;
    if (t != current || runs.back().count == UINT32_MAX) {
      const auto n = static_cast<std::uint32_t>(runs.size());
      runs.push_back({index, x.time, 0, UINT32_MAX});
      thread_cursor& c = threads[t];
      (c.last == UINT32_MAX ? c.run : runs[c.last].next) = n;
      c.last = n;
      current = t;
    }
    ++runs.back().count;
    spill.add(x);
    ++index;
  }
  spill.flush();
  using status = memkit::trace::reader::status;
  if (r.state() == status::error) {
    throw std::runtime_error(trace + ": " + r.message());
  }
  for (std::uint32_t id = 0; addresses != nullptr && id < r.site_count(); ++id) {
    if (!r.site_frames(id).empty()) {
      (*addresses)[id] = r.site_frames(id).front();
    }
  }
  if (r.state() == status::truncated) {
    // A recorder killed mid-write leaves its complete frames readable (docs/TRACE.md).
    std::cerr << "memkit-bench: warning: " << trace << ": " << r.message() << "; replaying the "
              << blocks << " events before it\n";
  }
  if (blocks == 0) {
    throw std::runtime_error(trace + ": no allocation events to replay");
  }
  // Frames of different threads interleave in the order they were written: one global order is
  // the time order, each thread's own kept (docs/TRACE.md, "Timestamps").
  merge(spill, runs, threads, sink);
  return blocks;
}

} // namespace

std::uint64_t read_events(const std::string& trace, const event_sink& sink,
                          std::map<std::uint32_t, std::uint64_t>* addresses) {
  if (const auto s = parse_synthetic(trace)) {
    std::uint64_t blocks = 0;
    generate_synthetic(*s, [&](const event& e) {
      blocks += touches_a_block(e) ? 1 : 0;
      sink(e);
    });
    return blocks;
  }
  return read_file(trace, sink, addresses);
}

event_list load_events(const std::string& trace,
                       std::map<std::uint32_t, std::uint64_t>* addresses) {
  event_list events;
  read_events(
      trace, [&events](const event& e) { events.push_back(e); }, addresses);
  return events;
}

} // namespace memkit::bench::replay
