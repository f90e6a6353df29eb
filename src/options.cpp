// SPDX-License-Identifier: BSL-1.0
// src/options.cpp: MEMKIT_OPTIONS (docs/REPLACEMENT.md, "Options"): one table of every option, from
// which the parser, the "unknown option" message and the rows of docs/options.md all come.
#include <cstdint>
#include <cstring>

#include "internal.hpp"

namespace memkit::replacement {

namespace {

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

// \returns whether `value` is a flag, 0 or 1, stored in `on`.
bool parse_flag(const char* value, std::size_t length, bool& on) noexcept {
  if (length != 1 || (*value != '0' && *value != '1')) {
    return false;
  }
  on = *value == '1';
  return true;
}

// Each parser takes an option's value and returns null, or what is wrong with it.
// A path: any value with a slash ("/tmp/stats.json", "./stats.json"), so that `0` or `1` cannot
// name a file by mistake. Stored in `path`, turning `mode` on; `not_a_path` is the complaint.
template <std::size_t N>
const char* take_path(const char* value, std::size_t length, char (&path)[N], runtime_options& o,
                      unsigned mode, const char* not_a_path) noexcept {
  if (std::memchr(value, '/', length) == nullptr) {
    return not_a_path;
  }
  if (length >= N) {
    return "path too long in";
  }
  std::memcpy(path, value, length);
  path[length] = '\0';
  o.mode |= mode;
  return nullptr;
}

const char* parse_stats(const char* value, std::size_t length, runtime_options& o) noexcept {
  bool on = false;
  if (parse_flag(value, length, on)) {
    o.mode = on ? (o.mode | mode_stats) : (o.mode & ~mode_stats);
    o.stats_path[0] = '\0';
    return nullptr;
  }
  return take_path(value, length, o.stats_path, o, mode_stats,
                   "bad value (0 or 1; stats: or a path with a '/') in");
}

const char* parse_debug(const char* value, std::size_t length, runtime_options& o) noexcept {
  bool on = false;
  if (!parse_flag(value, length, on)) {
    return "bad value (0 or 1) in";
  }
  o.mode = on ? (o.mode | mode_debug) : (o.mode & ~mode_debug);
  return nullptr;
}

const char* parse_quarantine(const char* value, std::size_t length, runtime_options& o) noexcept {
  return parse_size(value, length, o.quarantine_bytes)
             ? nullptr
             : "bad value (bytes, with k, m or g: KiB, MiB, GiB) in";
}

const char* parse_trace(const char* value, std::size_t length, runtime_options& o) noexcept {
  if (length == 1 && *value == '0') {
    o.mode &= ~mode_trace;
    o.trace_path[0] = '\0';
    return nullptr;
  }
  return take_path(value, length, o.trace_path, o, mode_trace,
                   "bad value (0, or a path with a '/') in");
}

// The deepest stack a site records: the trace format's limit on a site's frames is far above it.
constexpr std::size_t max_stack_depth = 64;

const char* parse_stack(const char* value, std::size_t length, runtime_options& o) noexcept {
  std::size_t n = 0;
  if (!parse_size(value, length, n) || n == 0 || n > max_stack_depth) {
    return "bad value (frames, 1 to 64) in";
  }
  o.stack_depth = static_cast<unsigned>(n);
  return nullptr;
}

// decay: takes at most an hour: a larger value is more likely a unit mistaken (microseconds) than
// a wish.
constexpr std::size_t max_decay_ms = 3'600'000;

const char* parse_decay(const char* value, std::size_t length, runtime_options& o) noexcept {
  std::size_t ms = 0;
  const bool unitless = length != 0 && value[length - 1] >= '0' && value[length - 1] <= '9';
  if (!unitless || !parse_size(value, length, ms) || ms > max_decay_ms) {
    return "bad value (milliseconds, 0 to 3600000) in";
  }
  o.decay_ms = ms;
  return nullptr;
}

} // namespace

const option options[] = {
    {"stats", "0|1|PATH", "0",
     "count every call; at exit, one JSON line to the program's stderr, or appended to PATH "
     "(any value with a `/`)",
     parse_stats},
    {"debug", "0|1", "0",
     "guarded blocks and a quarantine: double and invalid frees, overruns, underruns and wrong "
     "sized deletes reported, then abort",
     parse_debug},
    {"quarantine", "BYTES[k|m|g]", "64m",
     "the most bytes of freed blocks `debug:1` keeps before reuse (and at most 1,024 blocks)",
     parse_quarantine},
    {"trace", "0|PATH", "0",
     "record every allocation call, thread, RSS sample and loaded object to the trace file PATH "
     "(any value with a `/`; docs/TRACE.md); a program started while another records to PATH "
     "writes `PATH.<pid>`",
     parse_trace},
    {"stack", "1..64", "1",
     "return addresses recorded per call site in a trace (1: the caller of the entry point; more "
     "unwind the stack, at a cost per call)",
     parse_stack},
    {"decay", "0..3600000", "100",
     "milliseconds a wholly free chunk or free region stays unused before its pages go back to "
     "the OS (0: as it is freed, which costs page faults when memory is reused; "
     "docs/REPLACEMENT.md)",
     parse_decay},
};
const std::size_t option_count = sizeof options / sizeof options[0];

namespace {

// Reports an item it cannot take rather than ignoring it: a typo would otherwise leave the user
// believing a check ran. The options it knows come from the table.
void complain(const char* what, const char* item, std::size_t length) noexcept {
  write_stderr("memkit: ");
  write_stderr(what);
  write_stderr(" \"");
  write_all(STDERR_FILENO, item, length);
  write_stderr("\" in MEMKIT_OPTIONS (known:");
  for (std::size_t i = 0; i < option_count; ++i) {
    write_stderr(i == 0 ? " " : ", ");
    write_stderr(options[i].name);
    write_stderr(":");
    write_stderr(options[i].values);
  }
  write_stderr("); ignored\n");
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
    if (length != 0) { // an empty item ("a,,b" or a trailing comma) says nothing
      const option* known = nullptr;
      for (const option& candidate : options) {
        known = is_named(p, name_length, candidate.name) ? &candidate : known;
      }
      if (known == nullptr) {
        complain("unknown option", p, length);
      } else if (const char* wrong = known->parse(value, value_length, o); wrong != nullptr) {
        complain(wrong, p, length);
      }
    }
    p = end == nullptr ? nullptr : end + 1;
  }
  return o;
}

std::size_t write_options_table(char* out, std::size_t size) noexcept {
  text_writer w{out, size};
  w.put("| option | values | default | what it does |\n|---|---|---|---|\n");
  for (const option& o : options) {
    w.put("| `");
    w.put(o.name);
    w.put("` | `");
    w.put_cell(o.values);
    w.put("` | `");
    w.put(o.default_value);
    w.put("` | ");
    w.put(o.doc);
    w.put(" |\n");
  }
  w.terminate();
  return w.length;
}

} // namespace memkit::replacement
