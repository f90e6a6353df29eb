// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/replay/replayer.cpp: the replay loop, one thread per stream, over a backend
// (malloc with routes, or the null allocator).

#include "replay/replayer.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <thread>
#include <utility>
#include <vector>

#include <memkit/config.hpp>

#include "core/measure.hpp"
#include "replay/series.hpp"

namespace memkit::bench::replay {
namespace {

using clock = std::chrono::steady_clock;

/// A block of the replay: 32 bytes a slot, so slots cost 32 bytes per block of peak live count.
struct slot {
  void* p = nullptr;
  std::uint64_t size = 0;
  std::uint64_t stamp = 0;
  std::uint32_t route = 0;
  std::uint32_t align_log2 = 0;
};

/// How far a stream is: its own cache line, written only by its thread.
struct alignas(64) progress {
  std::atomic<std::uint64_t> done{0};
};

/// What one thread counts while it replays: a local of its loop, so the counts stay in registers
/// (the blocks' writes are char stores, which may alias any memory the loop could reach).
struct tally {
  std::uint64_t ops = 0;
  std::uint64_t errors = 0;
  std::uint64_t checksum = 0;
};

/// What one thread measured: its own cache lines. `samples_ns` is sized (and so written) before
/// the replay, and its first `sampled` are the samples: filled as the replay went, its pages
/// would count in the replay's peak RSS as the allocator's (4 bytes every --sample-every
/// operations: 525 KiB for a trace of 8.6 million operations).
struct alignas(64) thread_figures {
  std::vector<float> samples_ns;
  std::size_t sampled = 0;
  tally counts;
};

/// \returns a stamp for the block the `index`th operation of stream `s` allocates: distinct per
/// allocation and never 0 while a stream makes fewer than 2^40 operations. Three instructions:
/// every allocation of the replay pays for it, the null allocator's included.
std::uint64_t stamp_of(std::uint32_t s, std::uint64_t index) noexcept {
  return (std::uint64_t{s} << 40) + index + 1;
}

std::size_t alignment_of(std::uint32_t align_log2) noexcept {
  return align_log2 == 0 ? default_alignment
                         : std::max(std::size_t{1} << align_log2, default_alignment);
}

[[noreturn]] void out_of_memory(std::uint64_t size) {
  std::fprintf(stderr, "memkit-bench replay: out of memory allocating %llu bytes\n",
               static_cast<unsigned long long>(size));
  std::abort();
}

/// The process's malloc, with the routed sites on their strategies.
class routed_backend {
public:
  static constexpr bool checks = true;
  explicit routed_backend(router& r) noexcept : r_(r) {}

  void begin(std::uint32_t) noexcept {}
  void end(std::uint32_t) noexcept {}

  void allocate(std::uint32_t, slot& s, std::uint64_t size, std::uint32_t align_log2,
                std::uint32_t site) {
    s.align_log2 = align_log2;
    s.route = r_.route_of(site);
    s.p = s.route != 0 ? r_.target(s.route).allocate(size, alignment_of(align_log2)) : nullptr;
    if (s.p == nullptr) {
      s.route = 0;
      s.p = from_malloc(size, align_log2);
    }
  }
  void release(std::uint32_t, slot& s) noexcept {
    if (s.route == 0) {
      std::free(s.p);
    } else {
      r_.target(s.route).deallocate(s.p, s.size, alignment_of(s.align_log2));
    }
  }
  void reallocate(std::uint32_t stream, slot& s, std::uint64_t size, std::uint32_t site) {
    if (s.route == 0 && s.align_log2 == 0 && r_.route_of(site) == 0) {
      // realloc(p, 0) would free p in glibc: a block of the trace's realloc(p, 0) that returned
      // a block stays one.
      void* q = std::realloc(s.p, std::max<std::uint64_t>(size, 1));
      if (q == nullptr) {
        out_of_memory(size);
      }
      s.p = q;
      return;
    }
    slot old = s;
    allocate(stream, s, size, old.align_log2, site);
    std::memcpy(s.p, old.p, std::min(old.size, size));
    release(stream, old);
  }

private:
  static void* from_malloc(std::uint64_t size, std::uint32_t align_log2) {
    void* p = nullptr;
    if (align_log2 == 0 || alignment_of(align_log2) == default_alignment) {
      p = std::malloc(size);
    } else if (posix_memalign(&p, alignment_of(align_log2), size) != 0) {
      p = nullptr;
    }
    if (p == nullptr && size != 0) {
      out_of_memory(size);
    }
    return p;
  }

  router& r_;
};

/// The null allocator: per running stream, a bump pointer through a ring that wraps around;
/// frees cost nothing. A ring is small (4 MiB, or twice the largest request) and written before
/// use, so the replay pays no page faults for it and its time is the harness's: the loop, waits,
/// stamps and touches. Blocks overlap once a ring wraps, so stamps are not checked. The streams
/// that start with the others get their rings before the replay; a stream started later (at its
/// thread's start) takes one another stream has finished with, or a new one.
class null_backend {
public:
  static constexpr bool checks = false;
  null_backend(std::size_t streams, std::uint64_t max_size)
      : ring_bytes_(std::max<std::size_t>(std::size_t{4} << 20, 2 * max_size + 4096)),
        rings_(streams) {}
  ~null_backend() {
    for (char* base : spare_) {
      munmap(base, ring_bytes_);
    }
    for (auto& r : rings_) {
      if (r.base != nullptr) {
        munmap(r.base, ring_bytes_);
      }
    }
  }
  null_backend(const null_backend&) = delete;
  null_backend& operator=(const null_backend&) = delete;

  /// \effects gives stream `stream` a ring.
  void begin(std::uint32_t stream) {
    ring& r = rings_[stream];
    if (r.base != nullptr) {
      return;
    }
    {
      const std::lock_guard<std::mutex> hold(spare_lock_);
      if (!spare_.empty()) {
        r.base = spare_.back();
        spare_.pop_back();
      }
    }
    if (r.base == nullptr) {
      void* base = mmap(nullptr, ring_bytes_, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (base == MAP_FAILED) {
        out_of_memory(ring_bytes_);
      }
      r.base = static_cast<char*>(base);
      std::memset(r.base, 0, ring_bytes_);
    }
    r.cursor = 0;
  }
  /// \effects takes stream `stream`'s ring back for a later stream.
  void end(std::uint32_t stream) {
    ring& r = rings_[stream];
    const std::lock_guard<std::mutex> hold(spare_lock_);
    spare_.push_back(std::exchange(r.base, nullptr));
  }

  void allocate(std::uint32_t stream, slot& s, std::uint64_t size, std::uint32_t align_log2,
                std::uint32_t) noexcept {
    ring& r = rings_[stream];
    const std::size_t a = alignment_of(align_log2);
    std::size_t at = (r.cursor + a - 1) & ~(a - 1);
    if (at + size > ring_bytes_) {
      at = 0;
    }
    r.cursor = at + size;
    s.p = r.base + at;
  }
  void release(std::uint32_t, slot&) noexcept {}
  void reallocate(std::uint32_t stream, slot& s, std::uint64_t size, std::uint32_t site) noexcept {
    const slot old = s;
    allocate(stream, s, size, old.align_log2, site);
    std::memmove(s.p, old.p, std::min(old.size, size));
  }

private:
  struct alignas(64) ring {
    char* base = nullptr;
    std::size_t cursor = 0;
  };
  std::size_t ring_bytes_;
  std::vector<ring> rings_;
  std::mutex spare_lock_;
  std::vector<char*> spare_;
};

/// \returns the distance between the bytes `t` writes in a block beyond its stamp (0: none).
std::size_t touch_step(touch_mode t) noexcept {
  return t == touch_mode::page ? 4096 : t == touch_mode::line ? 64 : 0;
}

/// Writes the stamp and one byte every `step` bytes beyond it (touch_step).
void write_block(const slot& s, std::size_t step) noexcept {
  auto* p = static_cast<char*>(s.p);
  if (s.size >= sizeof s.stamp) {
    std::memcpy(p, &s.stamp, sizeof s.stamp);
  }
  if (step != 0) {
    for (std::size_t i = step; i < s.size; i += step) {
      p[i] = 1;
    }
  }
}

/// Checks the stamp of `s` and adds it to the checksum; `Reads` false (the null allocator): adds
/// the stamp expected, so the checksum is every allocator's.
template <bool Reads>
void check_block(const slot& s, tally& t) noexcept {
  if (!Reads) {
    t.checksum += s.size >= sizeof s.stamp ? s.stamp : 0;
  } else if (s.size >= sizeof s.stamp) {
    std::uint64_t v = 0;
    std::memcpy(&v, s.p, sizeof v);
    if (v == s.stamp) {
      t.checksum += v;
    } else {
      ++t.errors;
    }
  }
}

/// Waits until `done` reaches `count`: spins briefly, then yields, since the replay may run more
/// threads than there are cores.
void wait_for(const std::atomic<std::uint64_t>& done, std::uint64_t count) noexcept {
  for (unsigned spins = 0; done.load(std::memory_order_acquire) < count; ++spins) {
    if (spins >= 64) {
      std::this_thread::yield();
    }
  }
}

/// The process's resident memory over a replay, sampled on a thread of its own from `begin` to
/// `end`: every millisecond at first, more coarsely as the run grows. Its points and its thread are
/// made before the replay's peak is reset, and sampling allocates nothing, so it charges the
/// allocator under test nothing.
class rss_sampler {
public:
  rss_sampler() : thread_([this] { sample(); }) {}
  rss_sampler(const rss_sampler&) = delete;
  rss_sampler& operator=(const rss_sampler&) = delete;
  ~rss_sampler() { end(); }

  /// \effects starts sampling, time 0 now, each point the KiB above `base`.
  void begin(std::size_t base) {
    const std::lock_guard<std::mutex> lock(m_);
    base_ = base;
    start_ = clock::now();
    running_ = true;
    cv_.notify_one();
  }

  /// \effects stops sampling. \returns the points taken.
  std::vector<std::array<std::uint64_t, 2>> end() {
    {
      const std::lock_guard<std::mutex> lock(m_);
      stopped_ = true;
      cv_.notify_one();
    }
    if (thread_.joinable()) {
      thread_.join();
    }
    if (running_) {
      running_ = false;
      series_.close(elapsed_us(), resident_above_base());
    }
    return series_.take();
  }

private:
  void sample() {
    std::unique_lock<std::mutex> lock(m_);
    cv_.wait(lock, [this] { return running_ || stopped_; });
    while (!stopped_) {
      const std::uint64_t us = elapsed_us();
      if (series_.due(us)) {
        series_.add(us, resident_above_base());
      }
      cv_.wait_for(lock, std::chrono::microseconds(series_.step()), [this] { return stopped_; });
    }
  }

  std::uint64_t resident_above_base() const noexcept {
    const std::size_t kib = rss_kib();
    return kib > base_ ? kib - base_ : 0;
  }

  std::uint64_t elapsed_us() const {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(clock::now() - start_).count());
  }

  std::size_t base_ = 0;
  std::mutex m_;
  std::condition_variable cv_;
  clock::time_point start_;
  bool running_ = false;
  bool stopped_ = false;
  thinned_series series_{series_limit, 1000};
  std::thread thread_; // last: it starts once the rest is made
};

/// Per stream, whether its thread has finished: its own cache line.
struct alignas(64) finish_flag {
  std::atomic<bool> set{false};
};

template <class Backend>
struct replay_run {
  const program& p;
  Backend& b;
  const replay_options& o;
  std::vector<slot> slots;
  std::vector<progress> done;
  std::vector<finish_flag> finished;
  std::vector<thread_figures> figures;
  /// The cursors of the streams that start with the others, made before the replay.
  std::vector<std::unique_ptr<stream_cursor>> cursors;
  std::atomic<bool> go{false};
  std::atomic<std::uint64_t> live{0};
  std::atomic<std::uint64_t> peak_live{0};

  replay_run(const program& prog, Backend& backend, const replay_options& opts)
      : p(prog), b(backend), o(opts), slots(prog.slots), done(prog.streams.size()),
        finished(prog.streams.size()), figures(prog.streams.size()), cursors(prog.streams.size()) {
    for (std::uint32_t s = 0; s < p.streams.size(); ++s) {
      const std::uint64_t n = p.streams[s].ops;
      figures[s].samples_ns.resize(o.sample_every == 0 ? 0 : n / o.sample_every + 1);
      if (n != 0 && p.streams[s].start_waits == 0) {
        cursors[s] = std::make_unique<stream_cursor>(p, s);
        cursors[s]->prepare();
        b.begin(s);
      }
    }
  }

  /// \effects replays `x`, the `i`th operation of stream `si`, of kind `k` (not a wait) on slot
  /// `s`; `touch`: touch_step.
  void execute(std::uint32_t si, std::uint64_t i, const op& x, op_kind k, slot& s,
               std::size_t touch, tally& t) {
    switch (k) {
    case op_kind::alloc:
      s.size = x.arg();
      b.allocate(si, s, x.arg(), x.align_log2(), x.site());
      s.stamp = stamp_of(si, i);
      write_block(s, touch);
      break;
    case op_kind::free:
      check_block<Backend::checks>(s, t);
      b.release(si, s);
      s.p = nullptr;
      break;
    case op_kind::realloc: {
      b.reallocate(si, s, x.arg(), x.site());
      const std::uint64_t old_size = s.size;
      s.size = x.arg();
      if (std::min(old_size, s.size) >= sizeof s.stamp) {
        check_block<Backend::checks>(s, t);
      }
      write_block(s, touch);
      break;
    }
    case op_kind::wait:
      break;
    }
  }

  /// \effects counts a stream's thread as live, keeping the peak.
  void enter() noexcept {
    const std::uint64_t now = live.fetch_add(1, std::memory_order_acq_rel) + 1;
    std::uint64_t peak = peak_live.load(std::memory_order_relaxed);
    while (peak < now && !peak_live.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
    }
  }

  void run_stream(std::uint32_t si) {
    while (!go.load(std::memory_order_acquire)) {
      std::this_thread::yield();
    }
    enter();
    if (!cursors[si]) {
      b.begin(si);
    }
    const std::unique_ptr<stream_cursor> cursor =
        cursors[si] ? std::move(cursors[si]) : std::make_unique<stream_cursor>(p, si);
    // What the loop reads on every operation, in locals: the blocks' writes would otherwise make
    // it load them again after each one.
    float* const samples = figures[si].samples_ns.data();
    std::size_t sampled = 0;
    std::atomic<std::uint64_t>& published = done[si].done;
    slot* const slot_of = slots.data();
    const std::uint64_t total = p.streams[si].ops;
    const std::uint32_t sample_every = o.sample_every;
    const std::size_t touch = touch_step(o.touch);
    tally t;
    std::uint32_t countdown = sample_every;
    std::uint64_t i = 0; // operations done, waits included
    const auto perform = [&](const op& x) {
      const op_kind k = x.kind();
      if (k == op_kind::wait) {
        wait_for(done[x.slot()].done, x.arg());
        return;
      }
      slot& s = slot_of[x.slot()];
      if (sample_every != 0 && --countdown == 0) {
        countdown = sample_every;
        const auto start = clock::now();
        execute(si, i, x, k, s, touch, t);
        const auto stop = clock::now();
        samples[sampled++] =
            static_cast<float>(std::chrono::duration<double, std::nano>(stop - start).count());
      } else {
        execute(si, i, x, k, s, touch, t);
      }
      ++t.ops;
    };
    std::uint32_t n = 0;
    while (const op* ops = cursor->next_chunk(n)) {
      // Only the last operation of the stream's last chunk ends the stream: the others need not
      // ask.
      const std::uint32_t before_last = n != 0 && i + n == total ? n - 1 : n;
      for (std::uint32_t j = 0; j < before_last; ++j) {
        perform(ops[j]);
        published.store(++i, std::memory_order_release);
      }
      if (before_last != n) {
        perform(ops[before_last]);
        // No longer live before its last operation shows: a thread started after this one (its
        // start waits for that operation) never counts both.
        b.end(si);
        live.fetch_sub(1, std::memory_order_acq_rel);
        published.store(++i, std::memory_order_release);
      }
    }
    figures[si].counts = t;
    figures[si].sampled = sampled;
    finished[si].set.store(true, std::memory_order_release);
  }

  /// \effects waits until stream `s`'s start waits are met (its thread's start, compile.hpp),
  /// reading them into `scratch` (room for a chunk).
  void await_start(std::uint32_t s, op* scratch) {
    std::uint32_t left = p.streams[s].start_waits;
    for (std::uint32_t c = p.streams[s].first_chunk; left != 0; c = p.chunks[c].next) {
      const std::uint32_t n = std::min(left, p.chunks[c].count);
      const op* ops = p.storage.read(p.chunks[c].offset, n, scratch);
      for (std::uint32_t j = 0; j < n; ++j) {
        wait_for(done[ops[j].slot()].done, ops[j].arg());
      }
      left -= n;
    }
  }

  replay_result run() {
    replay_result r;
    std::vector<op> scratch(max_chunk_ops); // the start waits of later threads, read back
    rss_sampler sampler;
    reset_peak_rss();
    const std::size_t rss_before = rss_kib();
    std::vector<std::thread> threads;
    std::vector<std::uint32_t> later; // streams started at their thread's start, in start order
    for (std::uint32_t s = 0; s < p.streams.size(); ++s) {
      if (p.streams[s].ops == 0) {
        continue; // nothing to do, and nothing waits for it
      }
      if (p.streams[s].start_waits == 0) {
        threads.emplace_back([this, s] { run_stream(s); });
      } else {
        later.push_back(s);
      }
    }
    const auto start = clock::now();
    sampler.begin(rss_before);
    go.store(true, std::memory_order_release);
    // Threads that started later in the program start here, each once its start waits are met,
    // in the order they started: a start waits only for streams that existed before it, so this
    // order never waits for a stream it has yet to start. Finished threads are joined as it
    // goes, so a program of many short threads holds few at a time.
    const std::size_t early = threads.size();
    std::size_t joined = early;
    for (const std::uint32_t s : later) {
      await_start(s, scratch.data());
      threads.emplace_back([this, s] { run_stream(s); });
      while (joined < threads.size() &&
             finished[later[joined - early]].set.load(std::memory_order_acquire)) {
        threads[joined++].join();
      }
    }
    for (auto& t : threads) {
      if (t.joinable()) {
        t.join();
      }
    }
    r.seconds = std::chrono::duration<double>(clock::now() - start).count();
    r.rss_over_time = sampler.end();
    const std::size_t peak = peak_rss_kib();
    r.peak_rss_kib = peak > rss_before ? peak - rss_before : 0;
    r.peak_threads = peak_live.load(std::memory_order_relaxed);
    // The blocks the trace never freed go back untimed, so a routed strategy can be destroyed.
    for (auto& s : slots) {
      if (s.p != nullptr) {
        b.release(0, s);
      }
    }
    std::vector<float> all;
    for (const auto& f : figures) {
      r.ops += f.counts.ops;
      r.content_errors += f.counts.errors;
      r.checksum += f.counts.checksum;
      all.insert(all.end(), f.samples_ns.begin(),
                 f.samples_ns.begin() + static_cast<std::ptrdiff_t>(f.sampled));
    }
    r.samples = all.size();
    if (!all.empty()) {
      const auto at = [&all](double q) {
        const auto k = static_cast<std::size_t>(q * static_cast<double>(all.size() - 1));
        std::nth_element(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(k), all.end());
        return static_cast<double>(all[k]);
      };
      r.op_p50_ns = at(0.50);
      r.op_p99_ns = at(0.99);
    }
    return r;
  }
};

} // namespace

std::string to_string(touch_mode t) {
  return t == touch_mode::none ? "none" : t == touch_mode::page ? "page" : "line";
}

std::optional<touch_mode> parse_touch(const std::string& name) {
  for (const touch_mode t : {touch_mode::none, touch_mode::page, touch_mode::line}) {
    if (to_string(t) == name) {
      return t;
    }
  }
  return std::nullopt;
}

replay_result replay_routed(const program& p, router& routes, const replay_options& o) {
  routed_backend b(routes);
  return replay_run<routed_backend>(p, b, o).run();
}

replay_result replay_null(const program& p, const replay_options& o) {
  null_backend b(p.streams.size(), p.stats.max_size);
  return replay_run<null_backend>(p, b, o).run();
}

} // namespace memkit::bench::replay
