// SPDX-License-Identifier: BSL-1.0
// src/internal.hpp: what the global replacement's files share beyond the fast paths of heap.hpp:
// one declaration per job, defined in the file named beside it.
#pragma once

#include <cstddef>

#include <unistd.h>

#include "heap.hpp"
#include "memkit/detail/text_writer.hpp"

#pragma GCC visibility push(hidden)

namespace memkit::replacement {

using detail::text_writer;

/// The name misuse reports give the replacement's heap.
inline constexpr const char* heap_name = "memkit::malloc";

// ---- options.cpp: MEMKIT_OPTIONS, one table.

/// One option: its name, the values it takes and its default as the docs write them, what it does
/// (a docs/options.md cell), and its parser, which returns null or what is wrong with the value.
struct option {
  const char* name;
  const char* values;
  const char* default_value;
  const char* doc;
  const char* (*parse)(const char* value, std::size_t length, runtime_options& o) noexcept;
};
extern const option options[];
extern const std::size_t option_count;
/// The table as docs/options.md's Markdown rows, header included, into `out` (NUL-terminated if
/// `size` != 0). \returns the whole length.
std::size_t write_options_table(char* out, std::size_t size) noexcept;

// ---- init.cpp: start-up, the options chosen, fork.

/// The options the heap was made with (MEMKIT_OPTIONS, read once).
extern runtime_options chosen;

// ---- stats.cpp: the counters of stats:1 and the line written at exit.

/// Writes all of `s` to `fd`, retrying interrupted writes; allocates nothing.
void write_all(int fd, const char* s, std::size_t n) noexcept;
void write_stderr(const char* s) noexcept;
void count_allocation(std::size_t usable) noexcept;
void count_deallocation(std::size_t usable) noexcept;
void count_foreign_free() noexcept;
/// Remembers which file descriptor 2 is, once: the stats line goes only there (or to stats:PATH).
void remember_stderr() noexcept;
/// The stats line's JSON into `out` (`size` bytes, NUL-terminated if size != 0). \returns its
/// whole length.
std::size_t stats_json(char* out, std::size_t size) noexcept;

// ---- debug.cpp: debug:1's guarded blocks and quarantine.

void* debug_allocate(process_heap& h, std::size_t bytes, std::size_t alignment) noexcept;
void debug_free(process_heap& h, void* q) noexcept;
/// \returns whether the live debug block at `q` passes every check (header, the guards before and
/// after it), reporting the misuse otherwise; its size in `size`.
bool debug_check(process_heap& h, void* q, std::size_t& size) noexcept;
/// \returns the caller's size of the debug block at `q` once its header is checked, or 0 with
/// the misuse reported.
std::size_t debug_size(process_heap& h, void* q) noexcept;
/// \effects gives every quarantined block back to the engine.
void drain_quarantine(process_heap& h) noexcept;
/// The quarantine's lock, for fork.
void lock_quarantine() noexcept;
void unlock_quarantine() noexcept;

} // namespace memkit::replacement

#pragma GCC visibility pop
