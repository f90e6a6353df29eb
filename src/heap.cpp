// src/heap.cpp: the global replacement's heap, its options, its counters and its debug mode
// (heap.hpp, docs/REPLACEMENT.md).
#include "heap.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <thread>

#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include "memkit/detail/base/poison.hpp"
#include "memkit/error.hpp"
#include "memkit/replacement.h"

namespace memkit::replacement {

std::atomic<global_heap*> the_heap{nullptr};
unsigned the_mode = mode_fast;
std::atomic<std::uintptr_t> fast_arena{no_arena};
alignas(global_heap) unsigned char heap_storage[sizeof(global_heap)];

namespace {

const char* const heap_name = "memkit::malloc";

thread_cached_options heap_options() noexcept {
  thread_cached_options o;
  o.max_class_size = detail::thread::max_class_size;
  return o;
}

// ---- Options ---------------------------------------------------------------------------------

void write_all(int fd, const char* s, std::size_t n) noexcept {
  while (n != 0) {
    const ssize_t w = ::write(fd, s, n);
    if (w <= 0) {
      if (w < 0 && errno == EINTR) {
        continue;
      }
      return;
    }
    s += w;
    n -= static_cast<std::size_t>(w);
  }
}

void write_stderr(const char* s) noexcept { write_all(STDERR_FILENO, s, std::strlen(s)); }

// Reports an option it does not know rather than ignoring it: a typo would otherwise leave the
// user believing a check ran.
void complain(const char* what, const char* item, std::size_t length) noexcept {
  write_stderr("memkit: ");
  write_stderr(what);
  write_stderr(" \"");
  write_all(STDERR_FILENO, item, length);
  write_stderr("\" in MEMKIT_OPTIONS (known: stats:0|1|PATH, debug:0|1, "
               "quarantine:BYTES[k|m|g]); ignored\n");
}

// ---- Counters (stats:1) ----------------------------------------------------------------------

// Threads count into one of these by a slot taken on their first call: no line is written by two
// threads unless more threads than slots run, and then the atomics keep the sums exact.
struct alignas(cache_line_size) counter_slot {
  std::atomic<std::size_t> allocations{0};
  std::atomic<std::size_t> deallocations{0};
  std::atomic<std::size_t> bytes_allocated{0};
  std::atomic<std::size_t> bytes_freed{0};
  std::atomic<std::size_t> large{0};
};
constexpr std::size_t counter_slots = 64;
counter_slot counters[counter_slots];
std::atomic<std::size_t> next_counter_slot{0};
std::atomic<std::size_t> foreign_frees{0};
thread_local std::size_t my_counter_slot = counter_slots;

counter_slot& my_counters() noexcept {
  if (my_counter_slot == counter_slots) {
    my_counter_slot = next_counter_slot.fetch_add(1, std::memory_order_relaxed) % counter_slots;
  }
  return counters[my_counter_slot];
}

void count_allocation(std::size_t usable) noexcept {
  counter_slot& s = my_counters();
  s.allocations.fetch_add(1, std::memory_order_relaxed);
  s.bytes_allocated.fetch_add(usable, std::memory_order_relaxed);
  if (usable > detail::thread::max_class_size) {
    s.large.fetch_add(1, std::memory_order_relaxed);
  }
}

void count_deallocation(std::size_t usable) noexcept {
  counter_slot& s = my_counters();
  s.deallocations.fetch_add(1, std::memory_order_relaxed);
  s.bytes_freed.fetch_add(usable, std::memory_order_relaxed);
}

// Appends without allocating: the stats line is written at exit, when malloc may be anywhere.
struct line_writer {
  char* out;
  std::size_t size;
  std::size_t length = 0;

  void put(const char* s) noexcept {
    for (; *s != '\0'; ++s) {
      if (length + 1 < size) {
        out[length] = *s;
      }
      ++length;
    }
  }
  void put(std::size_t v) noexcept {
    char digits[24];
    std::size_t n = 0;
    do {
      digits[n++] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v != 0);
    char text[24];
    for (std::size_t i = 0; i < n; ++i) {
      text[i] = digits[n - 1 - i];
    }
    text[n] = '\0';
    put(text);
  }
  void field(const char* name, std::size_t v, bool first = false) noexcept {
    put(first ? "\"" : ",\"");
    put(name);
    put("\":");
    put(v);
  }
};

// ---- Debug mode (debug:1) --------------------------------------------------------------------

// A debug block, laid out in the engine's block at `base`:
//   [guard][header][guard up to the caller's pointer][the caller's bytes][canary to the block end]
// The caller's pointer is `offset` (at least debug_prefix, or the alignment) after `base`, and at
// least trailing_guard bytes of canary follow the caller's bytes. free finds `base` from the
// pointer through the chunk's block grid, never from the bytes before the pointer, and the header
// carries a check over its fields and its own address: a byte written into the header is found
// before any field of it is used, and reported as the underrun it is. The header starts
// header_at bytes in, past the words the engine links a free block through, so a block the
// quarantine gave back still says FREE to a later double free.
constexpr std::uint32_t state_live = 0x4556494c;  // "LIVE"
constexpr std::uint32_t state_freed = 0x45455246; // "FREE"
constexpr unsigned char guard_byte = 0xfb;
constexpr unsigned char canary_byte = 0xfd;
constexpr unsigned char fresh_byte = 0xcd;
constexpr unsigned char dead_byte = 0xdd;

struct debug_header {
  std::size_t size;
  std::uint32_t offset;
  std::uint32_t state;
  std::uint64_t check;
};
// 64 bytes before and after every block are checked (docs/REPLACEMENT.md, "Options").
constexpr std::size_t debug_prefix = 64;
constexpr std::size_t trailing_guard = 64;
constexpr std::size_t header_at = 16;
constexpr std::size_t header_end = header_at + sizeof(debug_header);
static_assert(debug_prefix % malloc_alignment == 0 && debug_prefix > header_end);

// A bijection of `x` (splitmix64's finalizer): inputs that differ give checks that differ.
std::uint64_t mix(std::uint64_t x) noexcept {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9U;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebU;
  return x ^ (x >> 31);
}

// Any one field changed changes the mixed value (the multiplier is odd), so a write of any byte
// of the header, the check included, is found.
std::uint64_t header_check(const debug_header& hd, const char* base) noexcept {
  const std::uint64_t fields = (std::uint64_t{hd.offset} << 32) | hd.state;
  return mix(hd.size ^ (fields * 0x9e3779b97f4a7c15U) ^ detail::address(base));
}

void write_header(char* base, std::size_t size, std::uint32_t offset,
                  std::uint32_t state) noexcept {
  debug_header hd{size, offset, state, 0};
  hd.check = header_check(hd, base);
  std::memcpy(base + header_at, &hd, sizeof hd);
}

// \returns the start of the engine's block that holds `q`, an address of chunk or region `c` at
// or after its first block.
char* block_base(const detail::thread::chunk* c, const char* q) noexcept {
  if (c->cls == detail::thread::large_class) {
    return c->blocks;
  }
  const auto index = static_cast<std::size_t>(q - c->blocks) / c->block_size;
  return c->blocks + index * c->block_size;
}

// Freed debug blocks wait here before the engine may hand them out again, so a second free of
// the same pointer finds its header still saying FREE: at most quarantine_slots blocks and
// runtime_options::quarantine_bytes bytes (the newest block is kept even if it alone is larger).
// A large block's whole pages are given back to the OS and made inaccessible while it waits, so
// it costs no memory and a use after free faults.
constexpr std::size_t quarantine_slots = 1024;
struct quarantined {
  char* base;
  std::size_t bytes;     // the engine's block
  char* protected_begin; // whole pages made inaccessible, or null
  std::size_t protected_bytes;
};
std::mutex quarantine_mutex;
quarantined quarantine[quarantine_slots];
std::size_t quarantine_first = 0; // the oldest
std::size_t quarantine_count = 0;
std::size_t quarantine_bytes = 0;
std::size_t quarantine_limit = default_quarantine_bytes;

// Gives the oldest block of the quarantine to the engine. \requires quarantine_mutex is held.
void evict_oldest(global_heap& h) noexcept {
  const quarantined q = quarantine[quarantine_first];
  quarantine_first = (quarantine_first + 1) % quarantine_slots;
  --quarantine_count;
  quarantine_bytes -= q.bytes;
  if (q.protected_begin != nullptr) {
    detail::os::commit(q.protected_begin, q.protected_bytes); // read-write again, zero-filled
  }
  h.free_found(q.base, h.find(q.base));
}

void drain_quarantine(global_heap& h) noexcept {
  const std::lock_guard<std::mutex> lock(quarantine_mutex);
  while (quarantine_count != 0) {
    evict_oldest(h);
  }
}

void* debug_allocate(global_heap& h, std::size_t bytes, std::size_t alignment) noexcept {
  const std::size_t offset = alignment > debug_prefix ? alignment : debug_prefix;
  const std::size_t n = bytes == 0 ? 1 : bytes;
  if (offset > UINT32_MAX || n > h.max_size() - offset - trailing_guard) {
    return nullptr;
  }
  auto* base = static_cast<char*>(h.allocate_any(offset + n + trailing_guard, alignment));
  if (base == nullptr) {
    return nullptr;
  }
  char* const q = base + offset;
  write_header(base, n, static_cast<std::uint32_t>(offset), state_live);
  std::memset(base, guard_byte, header_at);
  std::memset(base + header_end, guard_byte, offset - header_end);
  std::memset(q, fresh_byte, n);
  const std::size_t block = global_heap::usable(h.find(base));
  std::memset(q + n, canary_byte, block - offset - n);
  return q;
}

bool all_bytes(const char* p, std::size_t n, unsigned char b) noexcept {
  for (std::size_t i = 0; i < n; ++i) {
    if (static_cast<unsigned char>(p[i]) != b) {
      return false;
    }
  }
  return true;
}

// \returns the engine block of the debug block at `q` and its header in `hd`, once the header is
// known to be one debug_allocate wrote for `q` (live or freed since); reports the misuse (default:
// print it and abort) and returns null otherwise. Nothing at `q` or before it is read first.
char* debug_block_of(global_heap& h, void* q, debug_header& hd) noexcept {
  detail::thread::chunk* const c = h.find(q);
  auto* const cq = static_cast<char*>(q);
  if (c == nullptr || cq < c->blocks) {
    report_misuse(misuse::foreign_pointer, heap_name, q, 0, 0);
    return nullptr;
  }
  char* const base = block_base(c, cq);
  if (static_cast<std::size_t>(cq - base) < debug_prefix) {
    report_misuse(misuse::foreign_pointer, heap_name, q, 0, 0);
    return nullptr;
  }
  if (c->cls != detail::thread::large_class && c->owner == nullptr) {
    // A chunk with no live block, in the depot, whose pages may be given back (unreadable): the
    // block was freed and the quarantine has given it back since.
    report_misuse(misuse::double_free, heap_name, q, 0, 0);
    return nullptr;
  }
  // The block may be one the engine holds free (the quarantine gave it back), whose bytes a
  // sanitizer build keeps poisoned: read through the poisoning, and poisoned again only where
  // they are what a freed block's header should be.
  hd = detail::load_hidden<debug_header>(base + header_at);
  const bool valid = hd.check == header_check(hd, base);
  if (!valid || hd.state != state_freed) {
    detail::unpoison_kept(base + header_at, sizeof hd);
  }
  if (!valid) {
    // Bytes no debug block wrote (a pointer to memory never handed out: screen reports it,
    // naming the engine's block), or a header written over: an underrun.
    if (h.screen(base)) {
      report_misuse(misuse::underrun, heap_name, q, 0, 0);
    }
    return nullptr;
  }
  if (base + hd.offset != cq || (hd.state != state_live && hd.state != state_freed)) {
    report_misuse(misuse::foreign_pointer, heap_name, q, 0, 0);
    return nullptr;
  }
  return base;
}

// \returns the engine block of the live debug block at `q`, after checking its header, guard and
// canary, in that order, each before anything it vouches for is used; reports the misuse and
// returns null otherwise. `hd` receives the header.
char* debug_check(global_heap& h, void* q, debug_header& hd) noexcept {
  char* const base = debug_block_of(h, q, hd);
  if (base == nullptr) {
    return nullptr;
  }
  if (hd.state == state_freed) {
    report_misuse(misuse::double_free, heap_name, q, hd.size, 0);
    return nullptr;
  }
  auto* const cq = static_cast<char*>(q);
  if (!all_bytes(base, header_at, guard_byte) ||
      !all_bytes(base + header_end, hd.offset - header_end, guard_byte)) {
    report_misuse(misuse::underrun, heap_name, q, hd.size, 0);
    return nullptr;
  }
  const std::size_t block = global_heap::usable(h.find(base));
  if (!all_bytes(cq + hd.size, block - hd.offset - hd.size, canary_byte)) {
    report_misuse(misuse::overrun, heap_name, q, hd.size, 0);
    return nullptr;
  }
  return base;
}

void debug_free(global_heap& h, void* q) noexcept {
  debug_header hd{};
  char* const base = debug_check(h, q, hd);
  if (base == nullptr) {
    return;
  }
  detail::thread::chunk* const c = h.find(base);
  quarantined entry{base, global_heap::usable(c), nullptr, 0};
  auto* const begin = static_cast<char*>(q);
  char* const end = begin + hd.size;
  if (c->cls == detail::thread::large_class) {
    // A region of its own: its whole pages within the caller's bytes go back to the OS.
    char* const first = begin + detail::padding_for(begin, page_size);
    char* const last = end - detail::address(end) % page_size;
    if (first < last) {
      entry.protected_begin = first;
      entry.protected_bytes = static_cast<std::size_t>(last - first);
    }
  }
  if (entry.protected_begin != nullptr &&
      detail::os::release(entry.protected_begin, entry.protected_bytes)) {
    std::memset(begin, dead_byte, static_cast<std::size_t>(entry.protected_begin - begin));
    char* const after = entry.protected_begin + entry.protected_bytes;
    std::memset(after, dead_byte, static_cast<std::size_t>(end - after));
  } else {
    entry.protected_begin = nullptr;
    std::memset(begin, dead_byte, hd.size);
  }
  write_header(base, hd.size, hd.offset, state_freed);
  const std::lock_guard<std::mutex> lock(quarantine_mutex);
  while (quarantine_count == quarantine_slots ||
         (quarantine_count != 0 && quarantine_bytes + entry.bytes > quarantine_limit)) {
    evict_oldest(h);
  }
  quarantine[(quarantine_first + quarantine_count) % quarantine_slots] = entry;
  ++quarantine_count;
  quarantine_bytes += entry.bytes;
}

// ---- fork(2) ---------------------------------------------------------------------------------

// Every lock the heap has, taken before fork and released after it in both processes, so the
// child never inherits one held by a thread it does not have. The child keeps the other threads'
// heaps as they were: their blocks stay valid and free normally; what those threads cached is
// not reused in the child.
void before_fork() noexcept {
  quarantine_mutex.lock();
  detail::thread::registry::get().prepare_fork();
  the_heap.load(std::memory_order_relaxed)->lock_all();
}

void after_fork() noexcept {
  the_heap.load(std::memory_order_relaxed)->unlock_all();
  detail::thread::registry::get().after_fork();
  quarantine_mutex.unlock();
}

std::atomic<int> heap_state{0}; // 0: none, 1: being made, 2: made

std::size_t stats_json(char* out, std::size_t size) noexcept {
  std::size_t allocations = 0;
  std::size_t deallocations = 0;
  std::size_t bytes_allocated = 0;
  std::size_t bytes_freed = 0;
  std::size_t large = 0;
  for (const counter_slot& s : counters) {
    allocations += s.allocations.load(std::memory_order_relaxed);
    deallocations += s.deallocations.load(std::memory_order_relaxed);
    bytes_allocated += s.bytes_allocated.load(std::memory_order_relaxed);
    bytes_freed += s.bytes_freed.load(std::memory_order_relaxed);
    large += s.large.load(std::memory_order_relaxed);
  }
  std::size_t heaps = 0;
  std::size_t mapped = 0;
  std::size_t peak_mapped = 0;
  if (global_heap* h = the_heap.load(std::memory_order_acquire); h != nullptr) {
    heaps = h->heap_count();
    h->lock_all(); // the upstream's lock
    mapped = h->upstream().mapped();
    peak_mapped = h->upstream().peak_mapped();
    h->unlock_all();
  }
  line_writer w{out, size};
  w.put("{\"memkit\":{");
  w.field("allocations", allocations, true);
  w.field("deallocations", deallocations);
  w.field("bytes_in_use", bytes_allocated - bytes_freed);
  w.field("large_allocations", large);
  w.field("foreign_frees", foreign_frees.load(std::memory_order_relaxed));
  w.field("heaps", heaps);
  w.field("mapped_bytes", mapped);
  w.field("peak_mapped_bytes", peak_mapped);
  w.put("}}");
  if (size != 0) {
    out[w.length < size ? w.length : size - 1] = '\0';
  }
  return w.length;
}

// The options the heap was made with.
runtime_options chosen;

// Which file descriptor 2 was when the program started (its first allocation, or this library's
// constructor if that came first): the stats line goes there only while descriptor 2 is still
// that file, never into one the program opened after closing its stderr.
std::atomic<bool> stderr_remembered{false};
bool stderr_known = false;
dev_t stderr_device = 0;
ino_t stderr_inode = 0;

void remember_stderr() noexcept {
  if (stderr_remembered.exchange(true, std::memory_order_acq_rel)) {
    return;
  }
  struct stat st {};
  if (::fstat(STDERR_FILENO, &st) == 0) {
    stderr_device = st.st_dev;
    stderr_inode = st.st_ino;
    stderr_known = true;
  }
}

__attribute__((constructor)) void remember_stderr_at_start() noexcept { remember_stderr(); }

bool stderr_is_the_programs() noexcept {
  struct stat st {};
  return stderr_known && ::fstat(STDERR_FILENO, &st) == 0 && st.st_dev == stderr_device &&
         st.st_ino == stderr_inode;
}

// Runs after the program's own exit handlers and static destructors (this library's destructor
// runs last, as it was loaded or linked first), so their frees are counted.
__attribute__((destructor)) void print_stats_at_exit() noexcept {
  if ((the_mode & mode_stats) == 0) {
    return;
  }
  char line[512];
  const std::size_t n = stats_json(line, sizeof(line) - 1);
  const std::size_t length = n < sizeof(line) - 2 ? n : sizeof(line) - 2;
  line[length] = '\n';
  if (chosen.stats_path[0] != '\0') {
    // O_APPEND: each process of a program that forks or runs others adds its own line.
    const int fd = ::open(chosen.stats_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0) {
      write_all(fd, line, length + 1);
      ::close(fd);
    }
  } else if (stderr_is_the_programs()) {
    write_all(STDERR_FILENO, line, length + 1);
  }
}

// \returns whether `value` (`length` bytes) is a size: digits and an optional k, m or g (KiB,
// MiB, GiB), stored in `out`, overflow refused.
bool parse_size(const char* value, std::size_t length, std::size_t& out) noexcept {
  std::size_t n = 0;
  std::size_t i = 0;
  for (; i < length && value[i] >= '0' && value[i] <= '9'; ++i) {
    if (__builtin_mul_overflow(n, 10, &n) ||
        __builtin_add_overflow(n, static_cast<std::size_t>(value[i] - '0'), &n)) {
      return false;
    }
  }
  if (i == 0) {
    return false;
  }
  unsigned shift = 0;
  if (i + 1 == length) {
    const char unit = static_cast<char>(value[i] | 0x20); // lower case
    shift = unit == 'k' ? 10 : unit == 'm' ? 20 : unit == 'g' ? 30 : 64;
  } else if (i != length) {
    return false;
  }
  if (shift == 64 || (shift != 0 && n > (SIZE_MAX >> shift))) {
    return false;
  }
  out = n << shift;
  return true;
}

bool is_named(const char* item, std::size_t name_length, const char* name) noexcept {
  return name_length == std::strlen(name) && std::strncmp(item, name, name_length) == 0;
}

} // namespace

runtime_options parse_options(const char* text) noexcept {
  runtime_options o;
  for (const char* p = text; p != nullptr && *p != '\0';) {
    const char* end = std::strchr(p, ',');
    const std::size_t length = end == nullptr ? std::strlen(p) : static_cast<std::size_t>(end - p);
    const char* colon = static_cast<const char*>(std::memchr(p, ':', length));
    const std::size_t name_length = colon == nullptr ? length : static_cast<std::size_t>(colon - p);
    const char* value = colon == nullptr ? "" : colon + 1;
    const std::size_t value_length = colon == nullptr ? 0 : length - name_length - 1;
    const bool flag = value_length == 1 && (*value == '0' || *value == '1');
    // stats takes a path too: any value with a slash ("/tmp/stats.json", "./stats.json").
    const bool path = std::memchr(value, '/', value_length) != nullptr;
    if (length == 0) {
      // an empty item ("a,,b" or a trailing comma) says nothing
    } else if (is_named(p, name_length, "quarantine")) {
      if (!parse_size(value, value_length, o.quarantine_bytes)) {
        complain("bad value (bytes, with k, m or g: KiB, MiB, GiB) in", p, length);
      }
    } else if (is_named(p, name_length, "stats") && path && !flag) {
      if (value_length < sizeof(o.stats_path)) {
        std::memcpy(o.stats_path, value, value_length);
        o.stats_path[value_length] = '\0';
        o.mode |= mode_stats;
      } else {
        complain("path too long in", p, length);
      }
    } else if (is_named(p, name_length, "stats") || is_named(p, name_length, "debug")) {
      const unsigned bit = *p == 's' ? mode_stats : mode_debug;
      if (flag) {
        o.mode = *value == '1' ? (o.mode | bit) : (o.mode & ~bit);
        o.stats_path[0] = bit == mode_stats ? '\0' : o.stats_path[0];
      } else {
        complain("bad value (0 or 1; stats: or a path with a '/') in", p, length);
      }
    } else {
      complain("unknown option", p, length);
    }
    p = end == nullptr ? nullptr : end + 1;
  }
  return o;
}

global_heap::global_heap() noexcept : thread_cached(os_upstream{}, heap_options()) {}

global_heap* make_heap() noexcept {
  int expected = 0;
  if (heap_state.compare_exchange_strong(expected, 1, std::memory_order_acquire)) {
    // The first call of all. getenv allocates nothing.
    chosen = parse_options(std::getenv("MEMKIT_OPTIONS"));
    the_mode = chosen.mode;
    quarantine_limit = chosen.quarantine_bytes;
    remember_stderr();
    auto* h = ::new (heap_storage) global_heap;
    h->on_detach([]() noexcept { me.heap = nullptr; });
    char* const arena = h->upstream().reserve_arena();
    the_heap.store(h, std::memory_order_release);
    if (the_mode == mode_fast && arena != nullptr) {
      fast_arena.store(detail::address(arena), std::memory_order_relaxed);
    }
    heap_state.store(2, std::memory_order_release);
    // Registering may allocate: the heap is published first, so that call is served normally.
    ::pthread_atfork(&before_fork, &after_fork, &after_fork);
    return h;
  }
  while (heap_state.load(std::memory_order_acquire) != 2) {
    std::this_thread::yield();
  }
  return the_heap.load(std::memory_order_acquire);
}

namespace {

void* allocate_in(global_heap& h, std::size_t bytes, std::size_t alignment) noexcept {
  return (the_mode & mode_debug) != 0 ? debug_allocate(h, bytes, alignment)
                                      : h.allocate_any(bytes, alignment);
}

} // namespace

void* allocate_slow(std::size_t bytes, std::size_t alignment) noexcept {
  global_heap* h = the_heap.load(std::memory_order_acquire);
  if (h == nullptr) {
    h = make_heap();
  }
  void* p = allocate_in(*h, bytes, alignment);
  if (p == nullptr && bytes <= h->max_size()) {
    // Before a request fails (and operator new calls the new_handler), what memkit holds for
    // later goes back: the quarantine, and the free chunks' and kept regions' address space,
    // which a limit (RLIMIT_AS) may be what refused it.
    if ((the_mode & mode_debug) != 0) {
      drain_quarantine(*h);
    }
    h->trim();
    p = allocate_in(*h, bytes, alignment);
  }
  if (the_mode == mode_fast) {
    // The engine has bound a heap to this thread now, unless its exit began.
    me.heap = h->current_heap();
  }
  if (p != nullptr && (the_mode & mode_stats) != 0) {
    count_allocation(usable_size_of(p));
  }
  return p;
}

void free_slow(void* p) noexcept {
  global_heap* h = the_heap.load(std::memory_order_acquire);
  if (p == nullptr) {
    return;
  }
  detail::thread::chunk* c = h != nullptr ? h->find(p) : nullptr;
  if (c == nullptr) {
    free_foreign(p);
    return;
  }
  if ((the_mode & mode_stats) != 0) {
    count_deallocation(usable_size_of(p));
  }
  if ((the_mode & mode_debug) != 0) {
    debug_free(*h, p);
  } else {
    h->free_found(p, c);
  }
  if (--me.frees_until_tick == 0) {
    tick_slow(*h);
  }
}

void free_sized_slow(void* p, std::size_t bytes) noexcept {
  global_heap* h = the_heap.load(std::memory_order_acquire);
  if ((the_mode & mode_debug) != 0 && p != nullptr && h != nullptr && h->find(p) != nullptr) {
    debug_header hd{};
    if (debug_check(*h, p, hd) == nullptr) {
      return;
    }
    if (hd.size != (bytes == 0 ? 1 : bytes)) {
      report_misuse(misuse::size_mismatch, heap_name, p, bytes, 0);
      return;
    }
  }
  free_slow(p);
}

std::size_t trim() noexcept {
  global_heap* h = the_heap.load(std::memory_order_acquire);
  if (h == nullptr) {
    return 0;
  }
  return h->trim();
}

void free_unbound(global_heap& h, void* p, detail::thread::chunk* c) noexcept {
  h.free_found(p, c);
  me.heap = h.current_heap();
}

void tick_slow(global_heap& h) noexcept {
  me.frees_until_tick = frees_per_tick;
  h.tick();
}

void free_foreign(void* p) noexcept {
  foreign_frees.fetch_add(1, std::memory_order_relaxed);
  release_foreign(p);
}

// A program linked with memkit::new_delete may run under a preloaded malloc (memkit's own,
// jemalloc's): glibc's __libc_free would abort on that malloc's blocks.
__attribute__((weak)) void release_foreign(void* p) noexcept { ::free(p); }

std::size_t usable_size_of(const void* p) noexcept {
  global_heap& h = *the_heap.load(std::memory_order_relaxed);
  if ((the_mode & mode_debug) != 0) {
    // The header is checked before its size is believed: realloc copies that many bytes.
    debug_header hd{};
    return debug_block_of(h, const_cast<void*>(p), hd) != nullptr ? hd.size : 0;
  }
  return global_heap::usable(h.find(p));
}

} // namespace memkit::replacement

using memkit::replacement::the_heap;

extern "C" __attribute__((visibility("default"))) int memkit_owns(const void* p) {
  memkit::replacement::global_heap* h = the_heap.load(std::memory_order_acquire);
  return h != nullptr && h->owns(p) ? 1 : 0;
}

extern "C" __attribute__((visibility("default"))) size_t memkit_stats_json(char* buffer,
                                                                           size_t size) {
  return memkit::replacement::stats_json(buffer, size);
}
