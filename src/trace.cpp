// SPDX-License-Identifier: BSL-1.0
// src/trace.cpp: the trace recorder (MEMKIT_OPTIONS=trace:PATH, docs/TRACE.md#recording). Each
// thread encodes its calls into a buffer of its own (no lock, no shared cache line on the way);
// a full buffer joins one queue, from which a writer thread (helped, when it falls behind, by
// the threads that fill the buffers) compresses and writes each as one frame. Every byte the
// recorder uses comes from mmap, never from malloc: it runs inside malloc. Anything the recorder
// calls that allocates (starting threads, unwinding, zstd) runs with the thread's `in_recorder`
// set, so those calls are served but not recorded.
#include "trace.hpp"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <mutex>
#include <new>

#include <dlfcn.h>
#include <elf.h>
#include <execinfo.h>
#include <fcntl.h>
#include <link.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sys/file.h>
#include <sys/syscall.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "internal.hpp"
#include "memkit/detail/base/os.hpp"
#include "memkit/spin_mutex.hpp"

namespace memkit::replacement {
namespace {

namespace tr = memkit::trace;
namespace codec = memkit::detail::trace_codec;
namespace os = memkit::detail::os;

// Raw payload bytes per buffer (one frame): about 25,000 events of 4 to 6 raw bytes, so a thread
// hands a buffer over once per that many calls, and zstd sees enough to compress well (64 KiB
// frames took 4.2 bytes an event of memkit-bench larson-2t, these 3.9: bench/trace_overhead.sh).
constexpr std::size_t payload_bytes = std::size_t{128} << 10;
// Call sites a thread remembers, direct-mapped by return address: a site evicted by another is
// defined again (a few bytes) when next used.
constexpr std::size_t site_slots = 4096;
// How long the writer waits for a full buffer at most, and how often it samples the resident set
// and looks for newly loaded objects.
constexpr long writer_period_ns = 2'000'000;
constexpr std::uint64_t rss_period_ns = 10'000'000;
constexpr std::uint64_t mapping_period_ns = 1'000'000'000;
// zstd's level for the writer: bench/trace_overhead.sh's bytes per event, at its cost in the
// writer thread.
constexpr int zstd_level = 1;
constexpr std::size_t max_stack_depth = 64;

std::uint64_t monotonic_ns() noexcept {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

/// The recorder's clock, ns since recording began. clock_gettime(CLOCK_MONOTONIC) orders its TSC
/// read and checks a sequence count around it; a bare TSC read does neither: where the kernel
/// keeps time by the TSC itself (so the TSC is invariant and synchronized across cores), the
/// recorder reads it and converts it at a rate measured against CLOCK_MONOTONIC when recording
/// starts.
struct trace_clock {
  std::uint64_t mono0 = 0;    ///< CLOCK_MONOTONIC when recording began
  std::uint64_t tsc0 = 0;     ///< the TSC then, if tsc_rate is not 0
  std::uint64_t tsc_rate = 0; ///< ns per TSC tick, times 2^32; 0: CLOCK_MONOTONIC is read
};
trace_clock clk;

// A tick count times a rate overflows 64 bits after a few minutes: the product is taken in 128.
__extension__ using u128 = unsigned __int128;

// How long the TSC's rate is measured: CLOCK_MONOTONIC read at both ends within about 30 ns, so
// the rate is off by about 3e-5 (3 ms in 100 s of recording) and every thread converts alike.
constexpr std::uint64_t calibration_ns = 1'000'000;

#if defined(__x86_64__)
/// \returns whether the kernel's clock source is the TSC.
bool kernel_keeps_tsc_time() noexcept {
  const int fd = ::open("/sys/devices/system/clocksource/clocksource0/current_clocksource",
                        O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return false;
  }
  char name[8] = {};
  const ssize_t n = ::read(fd, name, sizeof name);
  ::close(fd);
  return n == 4 && std::memcmp(name, "tsc\n", 4) == 0;
}

/// A CLOCK_MONOTONIC read and the TSC at its middle.
void clock_pair(std::uint64_t& mono, std::uint64_t& tsc) noexcept {
  const std::uint64_t before = __rdtsc();
  mono = monotonic_ns();
  tsc = before + (__rdtsc() - before) / 2;
}
#endif

/// Starts the clock: CLOCK_MONOTONIC now, and the TSC's rate if the recorder can read it.
void start_clock() noexcept {
  clk.mono0 = monotonic_ns();
#if defined(__x86_64__)
  if (!kernel_keeps_tsc_time()) {
    return;
  }
  std::uint64_t m0 = 0;
  std::uint64_t t0 = 0;
  std::uint64_t m1 = 0;
  std::uint64_t t1 = 0;
  clock_pair(m0, t0);
  do {
    clock_pair(m1, t1);
  } while (m1 - m0 < calibration_ns);
  if (t1 > t0) {
    clk.mono0 = m0;
    clk.tsc0 = t0;
    clk.tsc_rate = static_cast<std::uint64_t>((static_cast<u128>(m1 - m0) << 32) / (t1 - t0));
  }
#endif
}

/// \returns ns since recording began.
MEMKIT_ALWAYS_INLINE std::uint64_t now() noexcept {
#if defined(__x86_64__)
  if (MEMKIT_LIKELY(clk.tsc_rate != 0)) {
    return static_cast<std::uint64_t>((static_cast<u128>(__rdtsc() - clk.tsc0) * clk.tsc_rate) >>
                                      32);
  }
#endif
  return monotonic_ns() - clk.mono0;
}

struct buffer {
  buffer* next = nullptr;
  std::size_t size = 0;
  std::uint8_t data[payload_bytes];
};

/// A stack of mmap'd objects behind a spin lock: taken once per buffer or thread, never per call.
template <class T>
class locked_stack {
public:
  void push(T* p) noexcept {
    std::lock_guard<spin_mutex> g(lock_);
    p->next = top_;
    top_ = p;
  }
  T* pop() noexcept {
    std::lock_guard<spin_mutex> g(lock_);
    T* p = top_;
    if (p != nullptr) {
      top_ = p->next;
    }
    return p;
  }
  /// \effects empties the stack and unlocks it, whatever its state: a forked child's, whose lock
  /// another thread of the parent may have held.
  void reset() noexcept {
    ::new (&lock_) spin_mutex;
    top_ = nullptr;
  }

private:
  spin_mutex lock_;
  T* top_ = nullptr;
};

/// A thread's recording state, mmap'd. `state` says who may touch `buf`: the owner while open,
/// the owner handing it over, the exit flush once stolen, nobody while idle (no thread).
enum record_state : int { idle, open, handing, stolen };

struct thread_record {
  thread_record* next = nullptr;     ///< the free records' stack
  thread_record* next_all = nullptr; ///< every record ever made, for the exit flush
  buffer* buf = nullptr;
  tr::frame_encoder enc{nullptr, 0, nullptr};
  std::uint32_t thread = 0;
  std::uint64_t sequence = 0;
  std::size_t preamble = 0;              ///< enc.size() with no event yet
  std::uint64_t last_call = 0;           ///< the time of the thread's last call
  std::atomic<std::size_t> committed{0}; ///< bytes of whole events in buf, for the exit flush
  std::atomic<int> state{idle};
  std::uint64_t site_keys[site_slots]; ///< the call site in each local site slot; 0: none
  tr::thread_coder coder;              ///< its blocks, from frame to frame
};

enum phase : int { off, starting, on, closed };

/// The recorder: constant-initialized, since malloc may run before any constructor.
struct recorder {
  std::atomic<int> phase{off};
  int fd = -1;
  unsigned depth = 1;
  os::thread_key key{};
  locked_stack<buffer> free_buffers;
  locked_stack<thread_record> free_records;
  std::atomic<thread_record*> all{nullptr};
  std::atomic<std::uint32_t> next_thread{1};
  std::atomic<bool> writer_running{false};
  std::atomic<bool> stop{false};
  pthread_t writer{};
  std::atomic<int> writer_waiting{0}; ///< 1 while the writer thread waits for work (a futex)
  codec::file_header header{};
  // The full buffers, oldest first. Whoever takes one (the writer thread, or a thread helping it)
  // gets the next ticket with it, and frames reach the file in ticket order: compressed side by
  // side, written one after another, so each thread's frames stay in its order.
  spin_mutex queue_lock;
  buffer* queue_head = nullptr;
  buffer* queue_tail = nullptr;
  std::atomic<std::size_t> queued{0};
  std::uint64_t next_ticket = 0;         ///< under queue_lock
  std::atomic<std::uint64_t> written{0}; ///< tickets whose frames are written
  spin_mutex helper_lock;                ///< one helping thread at a time, on helper_state
  spin_mutex mappings_lock;              ///< held while the writer lists the loaded objects
};
recorder rec;

/// The calling thread's side of the recorder, in one TLS object (one address for all three).
struct thread_side {
  thread_record* record = nullptr;
  bool in_recorder = false; ///< set while the recorder runs: calls it makes are not recorded
  bool exit_done = false;   ///< its exit was recorded: later calls are not
};
thread_local thread_side mine;

buffer* take_buffer() noexcept {
  if (buffer* b = rec.free_buffers.pop(); b != nullptr) {
    return b;
  }
  void* m = os::map(sizeof(buffer));
  return m != nullptr ? ::new (m) buffer : nullptr;
}

void futex_wake(std::atomic<int>& word) noexcept {
  ::syscall(SYS_futex, reinterpret_cast<int*>(&word), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
}

/// Waits until `word` is woken or no longer `value`, for `ns` at most.
void futex_wait(std::atomic<int>& word, int value, long ns) noexcept {
  timespec limit{0, ns};
  ::syscall(SYS_futex, reinterpret_cast<int*>(&word), FUTEX_WAIT_PRIVATE, value, &limit, nullptr,
            0);
}

/// Queues a full buffer, waking the writer thread if it waits. \returns how many wait, `b`
/// included.
std::size_t enqueue(buffer* b) noexcept {
  b->next = nullptr;
  std::size_t waiting = 0;
  {
    std::lock_guard<spin_mutex> g(rec.queue_lock);
    (rec.queue_tail != nullptr ? rec.queue_tail->next : rec.queue_head) = b;
    rec.queue_tail = b;
    waiting = rec.queued.fetch_add(1) + 1;
  }
  // Either the writer sees the buffer before it waits, or this sees it waiting (both orders of
  // the two sequentially consistent pairs of accesses).
  if (rec.writer_waiting.load() != 0 && rec.writer_waiting.exchange(0) != 0) {
    futex_wake(rec.writer_waiting);
  }
  return waiting;
}

/// \returns the oldest full buffer, with its ticket in `ticket`, or null.
buffer* dequeue(std::uint64_t& ticket) noexcept {
  std::lock_guard<spin_mutex> g(rec.queue_lock);
  buffer* b = rec.queue_head;
  if (b != nullptr) {
    rec.queue_head = b->next;
    if (rec.queue_head == nullptr) {
      rec.queue_tail = nullptr;
    }
    rec.queued.fetch_sub(1, std::memory_order_relaxed);
    ticket = rec.next_ticket++;
  }
  return b;
}

/// \returns a ticket for a frame that is not in the queue: thread 0's.
std::uint64_t take_ticket() noexcept {
  std::lock_guard<spin_mutex> g(rec.queue_lock);
  return rec.next_ticket++;
}

void begin_frame(thread_record& r, buffer* b, std::uint64_t time) noexcept {
  r.buf = b;
  r.enc = tr::frame_encoder(b->data, payload_bytes, &r.coder);
  r.enc.begin(r.thread, r.sequence, time);
  r.preamble = r.enc.size();
  r.committed.store(r.preamble, std::memory_order_release);
}

void ship(buffer* b) noexcept;

/// Pushes the owner's buffer and starts the next frame at `time`. \returns false when the exit
/// flush took the buffer or no memory is left: the event is dropped.
MEMKIT_NOINLINE bool hand_off(thread_record& r, std::uint64_t time) noexcept {
  int expected = open;
  if (!r.state.compare_exchange_strong(expected, handing, std::memory_order_acq_rel)) {
    return false;
  }
  buffer* next = take_buffer();
  if (next != nullptr) {
    r.buf->size = r.enc.size();
    ship(r.buf);
    ++r.sequence;
    begin_frame(r, next, time);
  }
  r.state.store(open, std::memory_order_release);
  return next != nullptr;
}

/// Encodes by `try_put` into the thread's buffer, handing it over first if full.
template <class TryPut>
MEMKIT_ALWAYS_INLINE void put_with(thread_record& r, std::uint64_t time,
                                   const TryPut& try_put) noexcept {
  if (MEMKIT_UNLIKELY(!try_put())) {
    // An empty buffer holds any event: the largest, a site of max_stack_depth frames, is under
    // 1 KiB.
    if (!hand_off(r, time) || !try_put()) {
      return;
    }
  }
  r.committed.store(r.enc.size(), std::memory_order_release);
}

void put(thread_record& r, const tr::event& e) noexcept {
  put_with(r, e.time_ns, [&] { return r.enc.put(e); });
}

// ---- start: the file, at the first call recorded.

/// Opens `path.<pid>` for a new trace.
int open_own_trace(const char* path) noexcept {
  char own[sizeof(chosen.trace_path) + 24];
  text_writer w{own, sizeof own};
  w.put(path);
  w.put(".");
  w.put(static_cast<std::size_t>(::getpid()));
  w.terminate();
  const int fd = ::open(own, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd >= 0) {
    ::flock(fd, LOCK_EX | LOCK_NB);
  }
  return fd;
}

/// Opens `path` for a new trace, or `path.<pid>` if a live process holds `path`'s lock (a program
/// this one was started by, which passed on its MEMKIT_OPTIONS); `parent_pid` becomes the
/// parent's pid in the second case.
int open_trace(const char* path, std::uint32_t& parent_pid) noexcept {
  const int fd = ::open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd >= 0 && ::flock(fd, LOCK_EX | LOCK_NB) == 0 && ::ftruncate(fd, 0) == 0) {
    return fd;
  }
  parent_pid = static_cast<std::uint32_t>(::getppid());
  if (fd >= 0) {
    ::close(fd);
  }
  return open_own_trace(path);
}

void write_header() noexcept {
  std::uint8_t bytes[codec::file_header_size];
  codec::put_file_header(bytes, rec.header);
  write_all(rec.fd, reinterpret_cast<const char*>(bytes), sizeof bytes);
}

void thread_exited(void* record) noexcept;

/// \returns whether recording is on, starting it if this is the first call.
bool started() noexcept {
  const int p = rec.phase.load(std::memory_order_acquire);
  if (MEMKIT_LIKELY(p == on)) {
    return true;
  }
  int expected = off;
  if (p != off ||
      !rec.phase.compare_exchange_strong(expected, starting, std::memory_order_acq_rel)) {
    return false; // another thread is starting it: its calls meanwhile go unrecorded
  }
  start_clock();
  rec.depth = chosen.stack_depth;
  codec::file_header& h = rec.header;
  rec.fd = open_trace(chosen.trace_path, h.parent_pid);
  if (rec.fd < 0) {
    write_stderr("memkit: cannot open the trace file (MEMKIT_OPTIONS trace:");
    write_stderr(chosen.trace_path);
    write_stderr("): ");
    write_stderr(std::strerror(errno));
    write_stderr("; not recording\n");
    rec.phase.store(closed, std::memory_order_release);
    return false;
  }
  timespec wall{};
  ::clock_gettime(CLOCK_REALTIME, &wall);
  h.start_wall_ns = static_cast<std::uint64_t>(wall.tv_sec) * 1'000'000'000u +
                    static_cast<std::uint64_t>(wall.tv_nsec);
  h.pid = static_cast<std::uint32_t>(::getpid());
  h.stack_depth = rec.depth;
  write_header();
  os::make_thread_key(rec.key, &thread_exited);
  rec.phase.store(on, std::memory_order_release);
  return true;
}

/// The calling thread's start, stamped now.
tr::event thread_start_event() noexcept {
  tr::event start;
  start.kind = tr::event_kind::thread_start;
  start.time_ns = now();
  start.tid = static_cast<std::uint64_t>(::syscall(SYS_gettid));
  return start;
}

/// The calling thread's record, made on its first recorded call, which records its start.
thread_record* attach() noexcept {
  thread_record* r = rec.free_records.pop();
  if (r == nullptr) {
    void* m = os::map(sizeof(thread_record));
    if (m == nullptr) {
      return nullptr;
    }
    r = ::new (m) thread_record;
    r->next_all = rec.all.load(std::memory_order_relaxed);
    while (!rec.all.compare_exchange_weak(r->next_all, r, std::memory_order_release,
                                          std::memory_order_relaxed)) {
    }
  } else {
    std::memset(r->site_keys, 0, sizeof r->site_keys);
    r->coder.restart();
  }
  buffer* b = take_buffer();
  if (b == nullptr) {
    rec.free_records.push(r);
    return nullptr;
  }
  r->thread = rec.next_thread.fetch_add(1, std::memory_order_relaxed);
  r->sequence = 0;
  const tr::event start = thread_start_event();
  begin_frame(*r, b, start.time_ns);
  r->state.store(open, std::memory_order_release);
  mine.record = r;
  os::set_thread_value(rec.key, r);
  put(*r, start);
  return r;
}

/// The thread-exit hook (the key's destructor): records the exit and hands the buffer over. Calls
/// the thread makes after it (later destructors, the C library's own teardown) go unrecorded.
void thread_exited(void* record) noexcept {
  auto* r = static_cast<thread_record*>(record);
  mine.in_recorder = true;
  if (rec.phase.load(std::memory_order_acquire) == on) {
    tr::event e;
    e.kind = tr::event_kind::thread_exit;
    e.time_ns = now();
    put(*r, e);
  }
  int expected = open;
  if (r->state.compare_exchange_strong(expected, handing, std::memory_order_acq_rel)) {
    r->buf->size = r->enc.size();
    ship(r->buf);
    r->buf = nullptr;
    r->state.store(idle, std::memory_order_release);
    rec.free_records.push(r);
  }
  mine.record = nullptr;
  mine.exit_done = true;
  mine.in_recorder = false;
}

std::uint64_t mix(std::uint64_t k) noexcept {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdu;
  k ^= k >> 33;
  return k;
}

/// \returns the slot of the call site `key` in a thread's table: return addresses differ in their
/// low bits within a page and in the page number across pages, so the two folded together spread
/// them in three instructions.
std::uint32_t site_slot(std::uint64_t key) noexcept {
  return static_cast<std::uint32_t>((key ^ (key >> 12)) & (site_slots - 1));
}

/// \returns the frames of the call site whose innermost frame is `caller`: stack:N's N of them,
/// unwound by the C library, or `caller` alone when it is not on the unwound stack.
std::size_t unwind(const void* caller, std::uint64_t* frames) noexcept {
  void* stack[max_stack_depth + 16];
  const int n = ::backtrace(stack, static_cast<int>(rec.depth) + 16);
  for (int i = 0; i < n; ++i) {
    if (stack[i] == caller) {
      std::size_t k = 0;
      for (; k < rec.depth && i + static_cast<int>(k) < n; ++k) {
        frames[k] = reinterpret_cast<std::uintptr_t>(stack[i + static_cast<int>(k)]);
      }
      return k;
    }
  }
  frames[0] = reinterpret_cast<std::uintptr_t>(caller);
  return 1;
}

/// site_of when the site is not the one in its slot, or more than one frame is recorded.
MEMKIT_NOINLINE std::uint32_t site_of_slow(thread_record& r, const void* caller,
                                           std::uint64_t time) noexcept {
  if (caller == nullptr) {
    return tr::no_site;
  }
  std::uint64_t frames[max_stack_depth];
  std::size_t n = 1;
  std::uint64_t key = reinterpret_cast<std::uintptr_t>(caller);
  frames[0] = key;
  if (rec.depth > 1) {
    n = unwind(caller, frames);
    for (std::size_t i = 1; i < n; ++i) {
      key = mix(key ^ frames[i]) | 1;
    }
  }
  const auto slot = site_slot(key);
  if (r.site_keys[slot] != key) {
    r.site_keys[slot] = key;
    tr::event s;
    s.kind = tr::event_kind::site;
    s.time_ns = time;
    s.site = slot;
    s.frames = frames;
    s.frame_count = n;
    put(r, s);
  }
  return slot;
}

/// \returns the thread's local index of the site of `caller`, defining it first if its slot
/// holds another. The common case, one frame already in its slot, stays inline.
MEMKIT_ALWAYS_INLINE std::uint32_t site_of(thread_record& r, const void* caller,
                                           std::uint64_t time) noexcept {
  const auto key = reinterpret_cast<std::uintptr_t>(caller);
  if (MEMKIT_LIKELY(rec.depth == 1 && key != 0)) {
    const auto slot = site_slot(key);
    if (MEMKIT_LIKELY(r.site_keys[slot] == key)) {
      return slot;
    }
  }
  return site_of_slow(r, caller, time);
}

/// enter() for a thread's first call, or when recording is not on.
MEMKIT_NOINLINE thread_record* enter_slow() noexcept {
  mine.in_recorder = true;
  thread_record* r = nullptr;
  if (started()) {
    r = mine.record != nullptr ? mine.record : attach();
  }
  if (r == nullptr || r->state.load(std::memory_order_relaxed) != open) {
    mine.in_recorder = false;
    return nullptr;
  }
  return r;
}

/// The calling thread's record if this call is to be recorded, with mine.in_recorder set; else
/// null.
MEMKIT_ALWAYS_INLINE thread_record* enter() noexcept {
  if (mine.in_recorder || mine.exit_done) {
    return nullptr;
  }
  thread_record* r = mine.record;
  if (MEMKIT_LIKELY(r != nullptr && rec.phase.load(std::memory_order_acquire) == on &&
                    r->state.load(std::memory_order_relaxed) == open)) {
    mine.in_recorder = true;
    return r;
  }
  return enter_slow();
}

/// \returns the time of a call of the thread of `r`: now, or 1 ns after its previous call if the
/// clock has not moved since. A TSC may advance in steps longer than a recorded malloc and free
/// are apart (the one of docs/TRACE.md#overhead's machine does: tests/trace/recorder_test.cpp's
/// RecordsThreadsAndCrossThreadFrees and ThreadsOneAfterAnotherReuseRecordsAndStayApart found
/// frees before their allocations): a thread's calls never share a time, so sorting by time keeps
/// each thread's order.
MEMKIT_ALWAYS_INLINE std::uint64_t stamp(thread_record& r) noexcept {
  const std::uint64_t t = now();
  const std::uint64_t t_min = r.last_call + 1;
  r.last_call = t < t_min ? t_min : t;
  return r.last_call;
}

/// Records the call `c` (its time already set) with the site of `caller`, and leaves the
/// recorder. The kinds most calls are, malloc's and free's fields, get an encoder of their own
/// with the tests of the fields they lack folded away, inlined here so that `c` stays in
/// registers; the other kinds' encoder takes a copy of it, so that its address does not escape
/// either (a spilled `c` and an encoder called out of line cost 38 instructions a malloc and 16 a
/// free, callgrind of bench/malloc_loop.c recorded).
MEMKIT_ALWAYS_INLINE void commit(thread_record& r, tr::call_fields& c,
                                 const void* caller) noexcept {
  c.site = site_of(r, caller, c.time_ns);
  const int f = tr::kind_fields(static_cast<std::uint8_t>(c.kind));
  if (f == tr::fields::alloc) {
    put_with(
        r, c.time_ns, [&]() __attribute__((always_inline)) {
          return r.enc.put_call(c, tr::fields::alloc);
        });
  } else if (f == tr::fields::free) {
    put_with(
        r, c.time_ns, [&]() __attribute__((always_inline)) {
          return r.enc.put_call(c, tr::fields::free);
        });
  } else {
    put_with(r, c.time_ns, [&r, c, f] { return r.enc.put_call(c, f); });
  }
  mine.in_recorder = false;
}

/// Records a call of kind `k` from `caller` on `block`, stamped now. Inlined into the two slow
/// paths that call it, which saves one function's entry and exit a call.
MEMKIT_ALWAYS_INLINE void record_call(trace_kind k, const void* caller, void* block,
                                      std::size_t size, std::size_t alignment) noexcept {
  if (thread_record* r = enter(); r != nullptr) {
    tr::call_fields c{
        k, stamp(*r), tr::no_site, 0, size, alignment, reinterpret_cast<std::uintptr_t>(block)};
    commit(*r, c, caller);
  }
}

// In trace mode alone (not with stats or debug, whose checks and counts live on the slow paths),
// a recorded call is served as the fast paths serve it, from the calling thread's heap, rather
// than through allocate_slow and free_slow: their own work (making the heap, the failure
// handling, the mode tests, a heap found again for the free) cost about 70 instructions a call
// (callgrind, bench/instructions.sh), a quarter of what recording a call cost.

/// allocate_slow(bytes, alignment), from the thread's heap where it can.
void* allocate_recorded(std::size_t bytes, std::size_t alignment) noexcept {
  process_heap* h = the_process_heap.load(std::memory_order_acquire);
  if (the_mode == mode_trace && h != nullptr && alignment <= malloc_alignment) {
    if (thread_heap* t = h->current_heap(); MEMKIT_LIKELY(t != nullptr)) {
      if (void* p = process_heap::pop_small(*t, bytes); MEMKIT_LIKELY(p != nullptr)) {
        return p;
      }
    }
  }
  return allocate_slow(bytes, alignment);
}

/// Frees `p` as free_slow does if it is a block of the heap's chunks and no other mode is on.
/// \returns whether it did.
bool release_recorded(void* p) noexcept {
  process_heap* h = the_process_heap.load(std::memory_order_acquire);
  if (the_mode != mode_trace || h == nullptr || p == nullptr) {
    return false;
  }
  detail::thread::chunk* const c = h->find(p);
  if (c == nullptr) {
    return false;
  }
  if (thread_heap* t = h->current_heap(); MEMKIT_LIKELY(t != nullptr)) {
    h->free_from(p, c, t);
  } else {
    h->free_found(p, c);
  }
  if (MEMKIT_UNLIKELY(--me.frees_until_tick == 0)) {
    tick_slow(*h);
  }
  return true;
}

bool is_sized(trace_kind k) noexcept {
  return k == trace_kind::operator_delete_sized || k == trace_kind::operator_delete_array_sized ||
         k == trace_kind::operator_delete_sized_aligned ||
         k == trace_kind::operator_delete_array_sized_aligned;
}

// ---- the writer thread: compression, the file, RSS samples and the loaded objects.

/// libzstd's functions, loaded when the writer starts (the libraries link no compression
/// library, so a program that never records never loads it). Without it, frames are stored
/// uncompressed.
struct zstd_api {
  void* (*create)() = nullptr;
  std::size_t (*set_parameter)(void*, ZSTD_cParameter, int) = nullptr;
  std::size_t (*compress_stream)(void*, ZSTD_outBuffer*, ZSTD_inBuffer*,
                                 ZSTD_EndDirective) = nullptr;
  std::size_t (*reset)(void*, ZSTD_ResetDirective) = nullptr;
  unsigned (*is_error)(std::size_t) = nullptr;
  bool tried = false;
};
zstd_api zstd;

void load_zstd() noexcept {
  if (zstd.tried) {
    return;
  }
  zstd.tried = true;
  void* lib = ::dlopen("libzstd.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    write_stderr("memkit: libzstd.so.1 not found; the trace is written uncompressed\n");
    return;
  }
  zstd.set_parameter =
      reinterpret_cast<decltype(zstd.set_parameter)>(::dlsym(lib, "ZSTD_CCtx_setParameter"));
  zstd.compress_stream =
      reinterpret_cast<decltype(zstd.compress_stream)>(::dlsym(lib, "ZSTD_compressStream2"));
  zstd.reset = reinterpret_cast<decltype(zstd.reset)>(::dlsym(lib, "ZSTD_CCtx_reset"));
  zstd.is_error = reinterpret_cast<decltype(zstd.is_error)>(::dlsym(lib, "ZSTD_isError"));
  const bool all = zstd.set_parameter != nullptr && zstd.compress_stream != nullptr &&
                   zstd.reset != nullptr && zstd.is_error != nullptr;
  zstd.create =
      all ? reinterpret_cast<decltype(zstd.create)>(::dlsym(lib, "ZSTD_createCCtx")) : nullptr;
}

/// One compression context: tr::write_frame's `compress`.
struct compressor {
  void* cctx = nullptr;

  std::size_t operator()(std::uint8_t* dst, std::size_t capacity, const std::uint8_t* src,
                         std::size_t n) const noexcept {
    if (cctx == nullptr || zstd.is_error(zstd.reset(cctx, ZSTD_reset_session_only)) != 0) {
      return 0;
    }
    return tr::compress_parts(dst, capacity, src, n,
                              [&](ZSTD_outBuffer* out, ZSTD_inBuffer* in, ZSTD_EndDirective end) {
                                const std::size_t left = zstd.compress_stream(cctx, out, in, end);
                                return zstd.is_error(left) == 0 && left == 0;
                              });
  }
};

/// What the writer keeps: mmap'd when it starts (or by the exit flush, if it never ran).
struct writer_state {
  compressor zstd;
  std::uint8_t streams[tr::streams_bound(payload_bytes)];
  std::uint8_t scratch[tr::streams_scratch(payload_bytes)]; ///< to_streams': 1 MiB, touched as used
  std::uint8_t out[tr::frame_bound(tr::streams_bound(payload_bytes))];
  thread_record own; ///< thread 0: RSS samples and mappings
  std::uint64_t last_rss = 0;
  std::uint64_t last_mappings = 0;
  std::size_t mapped_count = 0;
  std::uint64_t mapped[1024]; ///< load addresses of the objects already written
  char exe[4096];
};

/// Writes the rows [raw, raw + size) of a thread's buffer as one frame (in streams, compressed)
/// once every frame of an earlier ticket is written.
void write_frame(writer_state& w, const std::uint8_t* raw, std::size_t size,
                 std::uint64_t ticket) noexcept {
  const std::size_t n =
      tr::write_frame(w.streams, tr::to_streams(raw, size, w.streams, w.scratch), w.out, w.zstd);
  while (rec.written.load(std::memory_order_acquire) != ticket) {
    ::sched_yield(); // the frame before is being compressed on another thread
  }
  write_all(rec.fd, reinterpret_cast<const char*>(w.out), n);
  rec.written.store(ticket + 1, std::memory_order_release);
}

/// Writes the oldest full buffer, if one waits, with `w`. \returns whether one did.
bool write_oldest(writer_state& w) noexcept {
  std::uint64_t ticket = 0;
  buffer* const b = dequeue(ticket);
  if (b == nullptr) {
    return false;
  }
  write_frame(w, b->data, b->size, ticket);
  rec.free_buffers.push(b);
  return true;
}

/// Writes every buffer that waits, those queued meanwhile included.
void drain(writer_state& w) noexcept {
  while (write_oldest(w)) {
  }
}

/// Writes thread 0's frame if it holds an event, and begins the next.
void flush_own(writer_state& w) noexcept {
  thread_record& r = w.own;
  if (r.enc.size() != r.preamble) {
    write_frame(w, r.enc.data(), r.enc.size(), take_ticket());
    ++r.sequence;
    r.enc.begin(0, r.sequence, now());
    r.preamble = r.enc.size();
  }
}

void put_own(writer_state& w, const tr::event& e) noexcept {
  if (!w.own.enc.put(e)) {
    flush_own(w);
    w.own.enc.put(e);
  }
}

void sample_rss(writer_state& w) noexcept {
  const int fd = ::open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return;
  }
  char text[128];
  const ssize_t n = ::read(fd, text, sizeof text - 1);
  ::close(fd);
  if (n <= 0) {
    return;
  }
  text[n] = '\0';
  // "size resident shared ...", in pages.
  const char* p = std::strchr(text, ' ');
  std::uint64_t pages = 0;
  for (p = p != nullptr ? p + 1 : text + n; *p >= '0' && *p <= '9'; ++p) {
    pages = pages * 10 + static_cast<std::uint64_t>(*p - '0');
  }
  tr::event e;
  e.kind = tr::event_kind::rss_sample;
  e.time_ns = now();
  e.size = pages * os::page_size();
  put_own(w, e);
}

/// \returns the GNU build id among the notes of the object `info`, or an empty view.
std::string_view build_id(const dl_phdr_info& info) noexcept {
  for (int i = 0; i < info.dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info.dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) {
      continue;
    }
    const auto* p = reinterpret_cast<const unsigned char*>(info.dlpi_addr + ph.p_vaddr);
    const unsigned char* const end = p + ph.p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      ElfW(Nhdr) note;
      std::memcpy(&note, p, sizeof note);
      const unsigned char* name = p + sizeof note;
      const unsigned char* desc = name + ((note.n_namesz + 3) & ~3u);
      if (desc + note.n_descsz > end) {
        break;
      }
      if (note.n_type == NT_GNU_BUILD_ID && note.n_namesz == 4 &&
          std::memcmp(name, "GNU", 4) == 0 && note.n_descsz <= codec::max_build_id_bytes) {
        return {reinterpret_cast<const char*>(desc), note.n_descsz};
      }
      p = desc + ((note.n_descsz + 3) & ~3u);
    }
  }
  return {};
}

/// Records each executable segment of every loaded object not recorded yet.
int record_object(dl_phdr_info* info, std::size_t, void* state) noexcept {
  auto& w = *static_cast<writer_state*>(state);
  for (std::size_t i = 0; i < w.mapped_count; ++i) {
    if (w.mapped[i] == info->dlpi_addr) {
      return 0;
    }
  }
  if (w.mapped_count == sizeof w.mapped / sizeof w.mapped[0]) {
    return 1;
  }
  w.mapped[w.mapped_count++] = info->dlpi_addr;
  std::string_view path = info->dlpi_name != nullptr ? info->dlpi_name : "";
  if (path.empty()) { // the program itself
    const ssize_t n = ::readlink("/proc/self/exe", w.exe, sizeof w.exe);
    path = std::string_view(w.exe, n > 0 ? static_cast<std::size_t>(n) : 0);
  }
  if (path.size() > codec::max_path_bytes) {
    path = path.substr(0, codec::max_path_bytes);
  }
  const std::string_view id = build_id(*info);
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X) != 0) {
      tr::event e;
      e.kind = tr::event_kind::mapping;
      e.time_ns = now();
      e.block = info->dlpi_addr + ph.p_vaddr;
      e.size = ph.p_memsz;
      e.offset = ph.p_vaddr;
      e.path = path;
      e.build_id = id;
      put_own(w, e);
    }
  }
  return 0;
}

void record_mappings(writer_state& w) noexcept {
  {
    // Not across a fork: dl_iterate_phdr's lock, held by this thread when another forked, would
    // stay held in the child (see before_fork).
    std::lock_guard<spin_mutex> g(rec.mappings_lock);
    ::dl_iterate_phdr(&record_object, &w);
  }
  w.last_mappings = now();
}

/// A writer's state, mmap'd, with its compression context and thread 0's first frame begun.
writer_state* new_writer_state() noexcept {
  void* m = os::map(sizeof(writer_state));
  if (m == nullptr) {
    return nullptr;
  }
  auto* w = ::new (m) writer_state;
  load_zstd();
  w->zstd.cctx = zstd.create != nullptr ? zstd.create() : nullptr;
  if (w->zstd.cctx != nullptr &&
      zstd.is_error(zstd.set_parameter(w->zstd.cctx, ZSTD_c_compressionLevel, zstd_level)) != 0) {
    w->zstd.cctx = nullptr; // stored frames, as without libzstd
  }
  buffer* b = take_buffer();
  if (b == nullptr) {
    return nullptr;
  }
  w->own.thread = 0;
  begin_frame(w->own, b, now());
  return w;
}

/// The state of the thread helping the writer (rec.helper_lock), made when one first helps.
writer_state* helper_state = nullptr;

/// The writer's queue holds more full buffers than this when a thread queues another: the writer
/// is behind (it is woken when the queue gets its first), and that thread helps.
constexpr std::size_t writer_lead = 1;

/// Queues a full buffer. A thread that finds the writer behind compresses and writes the oldest
/// waiting buffer itself, one a buffer it fills: both cores compress, and the queue, what an
/// _exit loses, stays short. With no writer thread (a forked child that could not start one), it
/// writes every waiting buffer.
void ship(buffer* b) noexcept {
  const std::size_t waiting = enqueue(b);
  const bool alone = !rec.writer_running.load(std::memory_order_acquire);
  if (alone) {
    rec.helper_lock.lock();
  } else if (waiting <= writer_lead || !rec.helper_lock.try_lock()) {
    return;
  }
  int cancel = 0;
  ::pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel); // write() is a cancellation point
  if (helper_state == nullptr) {
    helper_state = new_writer_state();
  }
  if (helper_state != nullptr) {
    if (alone) {
      drain(*helper_state);
    } else {
      write_oldest(*helper_state);
    }
  }
  ::pthread_setcancelstate(cancel, nullptr);
  rec.helper_lock.unlock();
}

writer_state* make_writer() noexcept {
  writer_state* w = new_writer_state();
  if (w == nullptr) {
    return nullptr;
  }
  record_mappings(*w);
  sample_rss(*w);
  flush_own(*w);
  return w;
}

/// The last frames: every buffer handed over, then thread 0's, with the objects loaded since the
/// last look and a final RSS sample.
void finish_writing(writer_state& w) noexcept {
  drain(w);
  record_mappings(w);
  sample_rss(w);
  flush_own(w);
}

void* writer_main(void*) noexcept {
  mine.in_recorder = true;
  sigset_t all;
  ::sigfillset(&all);
  ::pthread_sigmask(SIG_BLOCK, &all, nullptr); // the program's signals are not for this thread
  writer_state* w = make_writer();
  while (!rec.stop.load(std::memory_order_acquire)) {
    if (w != nullptr) {
      // The buffers that wait now, not those queued meanwhile: the samples below keep their
      // period however fast buffers come.
      for (std::size_t n = rec.queued.load(std::memory_order_relaxed); n != 0 && write_oldest(*w);
           --n) {
      }
      const std::uint64_t t = now();
      if (t - w->last_rss >= rss_period_ns) {
        w->last_rss = t;
        sample_rss(*w);
      }
      if (t - w->last_mappings >= mapping_period_ns) {
        record_mappings(*w);
        flush_own(*w);
      }
    }
    rec.writer_waiting.store(1);
    if ((w == nullptr || rec.queued.load() == 0) && !rec.stop.load()) {
      futex_wait(rec.writer_waiting, 1, writer_period_ns);
    }
    rec.writer_waiting.store(0, std::memory_order_relaxed);
  }
  if (w != nullptr) {
    finish_writing(*w);
  }
  return nullptr;
}

// ---- start-up, fork and exit.

/// Starts the writer thread, its own allocations unrecorded. \returns whether it runs.
bool start_writer_thread() noexcept {
  const bool was_in_recorder = mine.in_recorder;
  mine.in_recorder = true;
  const bool running = ::pthread_create(&rec.writer, nullptr, &writer_main, nullptr) == 0;
  rec.writer_running.store(running, std::memory_order_release);
  mine.in_recorder = was_in_recorder;
  return running;
}

// A forked child records to PATH.<pid> (docs/TRACE.md#recording), from the fork on: the threads
// that did not survive the fork leave their records and buffers behind (the parent writes what they
// held), the forking thread goes on as thread 1 of the new trace, and a writer thread of its own
// writes its buffers (if none can start, each full buffer is compressed and written by the thread
// that filled it).
void before_fork() noexcept { rec.mappings_lock.lock(); }
void parent_after_fork() noexcept { rec.mappings_lock.unlock(); }

void child_after_fork() noexcept {
  ::new (&rec.mappings_lock) spin_mutex;
  if (rec.phase.load(std::memory_order_relaxed) != on) {
    rec.phase.store(closed, std::memory_order_relaxed);
    return;
  }
  for (thread_record* r = rec.all.load(std::memory_order_relaxed); r != nullptr; r = r->next_all) {
    if (r != mine.record) {
      r->state.store(idle, std::memory_order_relaxed);
    }
  }
  ::new (&rec.queue_lock) spin_mutex;
  rec.queue_head = rec.queue_tail = nullptr;
  rec.queued.store(0, std::memory_order_relaxed);
  rec.next_ticket = 0;
  rec.written.store(0, std::memory_order_relaxed);
  ::new (&rec.helper_lock) spin_mutex;
  helper_state = nullptr;
  rec.free_buffers.reset();
  rec.free_records.reset();
  rec.writer_running.store(false, std::memory_order_relaxed);
  rec.writer_waiting.store(0, std::memory_order_relaxed);
  rec.stop.store(false, std::memory_order_relaxed);
  ::close(rec.fd);
  rec.fd = open_own_trace(chosen.trace_path);
  if (rec.fd < 0) {
    rec.phase.store(closed, std::memory_order_relaxed);
    return;
  }
  rec.header.parent_pid = rec.header.pid;
  rec.header.pid = static_cast<std::uint32_t>(::getpid());
  write_header();
  rec.next_thread.store(1, std::memory_order_relaxed);
  if (thread_record* r = mine.record; r != nullptr && r->buf != nullptr) {
    std::memset(r->site_keys, 0, sizeof r->site_keys);
    r->coder.restart();
    r->thread = rec.next_thread.fetch_add(1, std::memory_order_relaxed);
    r->sequence = 0;
    const tr::event start = thread_start_event();
    begin_frame(*r, r->buf, start.time_ns);
    r->state.store(open, std::memory_order_relaxed);
    mine.in_recorder = true;
    put(*r, start);
    mine.in_recorder = false;
  }
  // The C library has reset its loader and thread-stack locks before it runs this handler, so the
  // child can start a thread here: its own writer, as the parent has.
  start_writer_thread();
}

// The writer starts here, outside any malloc (pthread_create takes locks a malloc caller may hold),
// before main; calls recorded before it wait in their buffers.
__attribute__((constructor)) void start_writer() noexcept {
  if (the_process_heap.load(std::memory_order_acquire) == nullptr) {
    make_process_heap();
  }
  if ((the_mode & mode_trace) == 0) {
    return;
  }
  mine.in_recorder = true;
  if (started() && start_writer_thread()) {
    ::pthread_atfork(&before_fork, &parent_after_fork, &child_after_fork);
  }
  mine.in_recorder = false;
}

/// At exit: every thread's buffer up to its last whole event goes out, then the writer's last
/// frames; calls made after go unrecorded.
__attribute__((destructor)) void finish_at_exit() noexcept {
  int expected = on;
  if (!rec.phase.compare_exchange_strong(expected, closed, std::memory_order_acq_rel)) {
    return;
  }
  mine.in_recorder = true;
  for (thread_record* r = rec.all.load(std::memory_order_acquire); r != nullptr; r = r->next_all) {
    int state = open;
    while (!r->state.compare_exchange_weak(state, stolen, std::memory_order_acq_rel)) {
      if (state != open && state != handing) {
        break;
      }
      state = open; // its owner is handing the buffer over: wait for the next one
    }
    if (state != open) {
      continue;
    }
    const std::size_t n = r->committed.load(std::memory_order_acquire);
    buffer* b = n != r->preamble ? take_buffer() : nullptr;
    if (b != nullptr) {
      std::memcpy(b->data, r->buf->data, n);
      b->size = n;
      enqueue(b);
    }
  }
  if (rec.writer_running.load(std::memory_order_acquire)) {
    rec.stop.store(true);
    rec.writer_waiting.store(0);
    futex_wake(rec.writer_waiting);
    ::pthread_join(rec.writer, nullptr);
  } else if (writer_state* w = make_writer(); w != nullptr) {
    finish_writing(*w);
  }
  ::close(rec.fd);
}

} // namespace

void* allocate_slow_at(std::size_t bytes, std::size_t alignment, trace_kind k,
                       const void* caller) noexcept {
  if (MEMKIT_LIKELY((the_mode & mode_trace) == 0) || k == untraced) {
    return allocate_slow(bytes, alignment);
  }
  void* p = allocate_recorded(bytes, alignment);
  record_call(k, caller, p, bytes, alignment);
  return p;
}

void release_slow_at(void* p, std::size_t size, std::size_t alignment, trace_kind k,
                     const void* caller) noexcept {
  if (MEMKIT_UNLIKELY((the_mode & mode_trace) != 0) && k != untraced) {
    record_call(k, caller, p, size, alignment);
    if (release_recorded(p)) {
      return;
    }
  }
  if (is_sized(k)) {
    free_sized_slow(p, size);
  } else {
    free_slow(p);
  }
}

void* record_realloc(void* (*impl)(void*, std::size_t) noexcept, void* p, std::size_t bytes,
                     trace_kind k, const void* caller) noexcept {
  thread_record* r = enter();
  if (r == nullptr) {
    return impl(p, bytes);
  }
  // Stamped when it begins, as a release: the block it gives up is free from then on.
  tr::call_fields c{k, stamp(*r), tr::no_site, reinterpret_cast<std::uintptr_t>(p), bytes, 0, 0};
  void* q = impl(p, bytes);
  c.block = reinterpret_cast<std::uintptr_t>(q);
  commit(*r, c, caller);
  return q;
}

} // namespace memkit::replacement
