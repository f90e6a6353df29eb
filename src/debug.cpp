// SPDX-License-Identifier: BSL-1.0
// src/debug.cpp: debug:1 (docs/REPLACEMENT.md, "Debug mode"): guarded blocks whose every byte
// around the caller's is checked at free, and a quarantine of freed blocks bounded in count and
// bytes.
#include <cstdint>
#include <cstring>
#include <mutex>

#include "internal.hpp"
#include "memkit/detail/base/os.hpp"
#include "memkit/detail/base/poison.hpp"
#include "memkit/detail/guard.hpp"
#include "memkit/error.hpp"

namespace memkit::replacement {

namespace {

// A debug block, laid out in the engine's block at `base` as debug_resource's are (the shared
// guard layout and fill bytes of detail/guard.hpp):
//   [guard][header][guard up to the caller's pointer][the caller's bytes][guard to the block end]
// The caller's pointer is `offset` (at least debug_prefix, or the alignment) after `base`, and at
// least trailing_guard guard bytes follow the caller's bytes. free finds `base` from the
// pointer through the chunk's block grid, never from the bytes before the pointer, and the header
// carries a check over its fields and its own address: a byte written into the header is found
// before any field of it is used, and reported as the underrun it is. The header starts
// header_at bytes in, past the words the engine links a free block through, so a block the
// quarantine gave back still says FREE to a later double free.
constexpr std::uint32_t state_live = 0x4556494c;  // "LIVE"
constexpr std::uint32_t state_freed = 0x45455246; // "FREE"

struct debug_header {
  std::size_t size;
  std::uint32_t offset;
  std::uint32_t state;
  std::uint64_t check;
};
// 64 bytes before and after every block are checked (docs/REPLACEMENT.md, "Options").
constexpr std::size_t debug_prefix = 64;
constexpr std::size_t trailing_guard = detail::guard::size_for(64, malloc_alignment);
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

// \returns the guard layout of the debug block whose caller's bytes start `offset` after the
// engine's block's start and fill it to its end, `block` bytes.
detail::guard::layout guard_layout(std::size_t offset, std::size_t size,
                                   std::size_t block) noexcept {
  return {header_at, sizeof(debug_header), offset, block - offset - size};
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

// Gives the oldest block of the quarantine to the engine. \requires quarantine_mutex is held.
void evict_oldest(process_heap& h) noexcept {
  const quarantined q = quarantine[quarantine_first];
  quarantine_first = (quarantine_first + 1) % quarantine_slots;
  --quarantine_count;
  quarantine_bytes -= q.bytes;
  if (q.protected_begin != nullptr) {
    detail::os::commit(q.protected_begin, q.protected_bytes); // read-write again, zero-filled
  }
  h.free_found(q.base, h.find(q.base));
}

} // namespace

void drain_quarantine(process_heap& h) noexcept {
  const std::lock_guard<std::mutex> lock(quarantine_mutex);
  while (quarantine_count != 0) {
    evict_oldest(h);
  }
}

void* debug_allocate(process_heap& h, std::size_t bytes, std::size_t alignment) noexcept {
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
  const detail::guard::layout g = guard_layout(offset, n, process_heap::usable(h.find(base)));
  g.paint_front(base);
  std::memset(q, detail::guard::fresh_byte, n);
  g.paint_back(base, n);
  return q;
}

namespace {

// \returns the engine block of the debug block at `q` and its header in `hd`, once the header is
// known to be one debug_allocate wrote for `q` (live or freed since); reports the misuse (default:
// print it and abort) and returns null otherwise. Nothing at `q` or before it is read first.
char* debug_block_of(process_heap& h, void* q, debug_header& hd) noexcept {
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

// \returns the engine block of the live debug block at `q`, after checking its header, the guard
// before it and the guard after it, in that order, each before anything it vouches for is used;
// reports the misuse and returns null otherwise. `hd` receives the header.
char* checked_block(process_heap& h, void* q, debug_header& hd) noexcept {
  char* const base = debug_block_of(h, q, hd);
  if (base == nullptr) {
    return nullptr;
  }
  if (hd.state == state_freed) {
    report_misuse(misuse::double_free, heap_name, q, hd.size, 0);
    return nullptr;
  }
  const detail::guard::layout g =
      guard_layout(hd.offset, hd.size, process_heap::usable(h.find(base)));
  if (g.first_bad_before(base) != 0) {
    report_misuse(misuse::underrun, heap_name, q, hd.size, 0);
    return nullptr;
  }
  if (g.first_bad_after(base, hd.size) != 0) {
    report_misuse(misuse::overrun, heap_name, q, hd.size, 0);
    return nullptr;
  }
  return base;
}

} // namespace

void debug_free(process_heap& h, void* q) noexcept {
  debug_header hd{};
  char* const base = checked_block(h, q, hd);
  if (base == nullptr) {
    return;
  }
  detail::thread::chunk* const c = h.find(base);
  quarantined entry{base, process_heap::usable(c), nullptr, 0};
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
    std::memset(begin, detail::guard::freed_byte,
                static_cast<std::size_t>(entry.protected_begin - begin));
    char* const after = entry.protected_begin + entry.protected_bytes;
    std::memset(after, detail::guard::freed_byte, static_cast<std::size_t>(end - after));
  } else {
    entry.protected_begin = nullptr;
    std::memset(begin, detail::guard::freed_byte, hd.size);
  }
  write_header(base, hd.size, hd.offset, state_freed);
  const std::lock_guard<std::mutex> lock(quarantine_mutex);
  while (quarantine_count == quarantine_slots ||
         (quarantine_count != 0 && quarantine_bytes + entry.bytes > chosen.quarantine_bytes)) {
    evict_oldest(h);
  }
  quarantine[(quarantine_first + quarantine_count) % quarantine_slots] = entry;
  ++quarantine_count;
  quarantine_bytes += entry.bytes;
}

bool debug_check(process_heap& h, void* q, std::size_t& size) noexcept {
  debug_header hd{};
  const bool ok = checked_block(h, q, hd) != nullptr;
  size = hd.size;
  return ok;
}

std::size_t debug_size(process_heap& h, void* q) noexcept {
  debug_header hd{};
  return debug_block_of(h, q, hd) != nullptr ? hd.size : 0;
}

void lock_quarantine() noexcept { quarantine_mutex.lock(); }
void unlock_quarantine() noexcept { quarantine_mutex.unlock(); }

} // namespace memkit::replacement
