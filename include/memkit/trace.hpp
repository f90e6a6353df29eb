// SPDX-License-Identifier: BSL-1.0
// memkit/trace.hpp: the allocation trace the global replacement records (MEMKIT_OPTIONS=trace:PATH)
// and memkit-bench replays: its events, an encoder, a builder for hand-written traces and a reader
// that reports bad input by byte offset. The format is docs/TRACE.md#format. Link libzstd
// (Debian's libzstd-dev) where this header is used.
#pragma once

#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "config.hpp"
#include "detail/trace_codec.hpp"

namespace memkit {
inline namespace MEMKIT_ABI {
namespace trace {

namespace codec = detail::trace_codec;

namespace fields {
using namespace detail::trace_codec;
inline constexpr int alloc = f_site | f_size | f_block;
inline constexpr int aligned_alloc = alloc | f_alignment;
inline constexpr int free = f_site | f_block | f_releases;
inline constexpr int sized_free = free | f_size;
inline constexpr int aligned_free = free | f_alignment;
inline constexpr int sized_aligned_free = free | f_size | f_alignment;
inline constexpr int realloc = f_site | f_old_block | f_size | f_block;
} // namespace fields

/// Every event kind: name, its tag byte in the format (never reused), the fields it carries and
/// its role for a replayer.
#define MEMKIT_TRACE_KINDS(X)                                                                      \
  X(malloc, 1, fields::alloc, allocation)                                                          \
  X(calloc, 2, fields::alloc, allocation)                                                          \
  X(realloc, 3, fields::realloc, reallocation)                                                     \
  X(reallocarray, 4, fields::realloc, reallocation)                                                \
  X(free, 5, fields::free, release)                                                                \
  X(aligned_alloc, 6, fields::aligned_alloc, allocation)                                           \
  X(posix_memalign, 7, fields::aligned_alloc, allocation)                                          \
  X(memalign, 8, fields::aligned_alloc, allocation)                                                \
  X(valloc, 9, fields::alloc, allocation)                                                          \
  X(pvalloc, 10, fields::alloc, allocation)                                                        \
  X(operator_new, 16, fields::alloc, allocation)                                                   \
  X(operator_new_array, 17, fields::alloc, allocation)                                             \
  X(operator_new_nothrow, 18, fields::alloc, allocation)                                           \
  X(operator_new_array_nothrow, 19, fields::alloc, allocation)                                     \
  X(operator_new_aligned, 20, fields::aligned_alloc, allocation)                                   \
  X(operator_new_array_aligned, 21, fields::aligned_alloc, allocation)                             \
  X(operator_new_aligned_nothrow, 22, fields::aligned_alloc, allocation)                           \
  X(operator_new_array_aligned_nothrow, 23, fields::aligned_alloc, allocation)                     \
  X(operator_delete, 32, fields::free, release)                                                    \
  X(operator_delete_array, 33, fields::free, release)                                              \
  X(operator_delete_nothrow, 34, fields::free, release)                                            \
  X(operator_delete_array_nothrow, 35, fields::free, release)                                      \
  X(operator_delete_sized, 36, fields::sized_free, release)                                        \
  X(operator_delete_array_sized, 37, fields::sized_free, release)                                  \
  X(operator_delete_aligned, 38, fields::aligned_free, release)                                    \
  X(operator_delete_array_aligned, 39, fields::aligned_free, release)                              \
  X(operator_delete_aligned_nothrow, 40, fields::aligned_free, release)                            \
  X(operator_delete_array_aligned_nothrow, 41, fields::aligned_free, release)                      \
  X(operator_delete_sized_aligned, 42, fields::sized_aligned_free, release)                        \
  X(operator_delete_array_sized_aligned, 43, fields::sized_aligned_free, release)                  \
  X(thread_start, 48, codec::f_tid, other)                                                         \
  X(thread_exit, 49, 0, other)                                                                     \
  X(rss_sample, 50, codec::f_size, other)                                                          \
  X(site, 51, codec::f_frames, other)                                                              \
  X(mapping, 52, codec::f_mapping, other)

enum class event_kind : std::uint8_t {
#define MEMKIT_TRACE_ENUM(name, code, f, role) name = code,
  MEMKIT_TRACE_KINDS(MEMKIT_TRACE_ENUM)
#undef MEMKIT_TRACE_ENUM
};

/// \returns the kind's name as spelled in event_kind, or nullptr for a code that is no kind.
inline const char* kind_name(event_kind k) noexcept {
  switch (k) {
#define MEMKIT_TRACE_NAME(name, code, f, role)                                                     \
  case event_kind::name:                                                                           \
    return #name;
    MEMKIT_TRACE_KINDS(MEMKIT_TRACE_NAME)
#undef MEMKIT_TRACE_NAME
  }
  return nullptr;
}

/// \returns the codec::field bits the kind with tag `code` carries (and codec::f_releases for the
/// kinds that release their block), or -1 for a code that is no kind.
inline int kind_fields(std::uint8_t code) noexcept {
  // A table rather than a switch: one load on the recorder's path.
  struct table {
    std::int16_t fields[256];
    constexpr table() : fields() {
      for (std::int16_t& f : fields) {
        f = -1;
      }
#define MEMKIT_TRACE_FIELDS(name, c, f, role) fields[c] = f;
      MEMKIT_TRACE_KINDS(MEMKIT_TRACE_FIELDS)
#undef MEMKIT_TRACE_FIELDS
    }
  };
  static constexpr table t{};
  return t.fields[code];
}

/// Every kind, in tag order: what a test or a tool iterates.
inline constexpr event_kind all_kinds[] = {
#define MEMKIT_TRACE_LIST(name, code, f, role) event_kind::name,
    MEMKIT_TRACE_KINDS(MEMKIT_TRACE_LIST)
#undef MEMKIT_TRACE_LIST
};

/// What an event does to blocks: allocation (returns a new block), reallocation (realloc,
/// reallocarray: releases old_block, returns block), release (free, every operator delete), or
/// other (threads, samples, sites, mappings).
enum class kind_role : std::uint8_t { allocation, reallocation, release, other };

inline kind_role role(event_kind k) noexcept {
  switch (k) {
#define MEMKIT_TRACE_ROLE(name, code, f, r)                                                        \
  case event_kind::name:                                                                           \
    return kind_role::r;
    MEMKIT_TRACE_KINDS(MEMKIT_TRACE_ROLE)
#undef MEMKIT_TRACE_ROLE
  }
  return kind_role::other;
}

inline constexpr std::uint32_t no_site = 0xffffffffu;

/// One decoded event. Which fields a kind uses is docs/TRACE.md#events; the others are zero.
struct event {
  event_kind kind = event_kind::malloc;
  /// The trace's thread number: 1, 2, ... in the order threads first recorded; 0 for the
  /// recorder's own events (rss_sample, mapping).
  std::uint32_t thread = 0;
  /// Nanoseconds since the start of recording (docs/TRACE.md#timestamps), strictly increasing
  /// within a thread. An allocation's time is taken after it returned, a release's before it
  /// began, so a block's reuse never precedes its free.
  std::uint64_t time_ns = 0;
  /// The block's address: what an allocation returned (0: it failed), what a release or realloc
  /// was given or, for realloc, what it returned; a mapping's start address.
  std::uint64_t block = 0;
  /// realloc, reallocarray: the block passed in (0 for realloc(NULL, n)).
  std::uint64_t old_block = 0;
  /// Bytes asked for (calloc and reallocarray: count × size); the size given
  /// to a sized delete; rss_sample: resident bytes; mapping: its length.
  std::uint64_t size = 0;
  /// The aligned entry points' alignment: as the call passed it (operator new and delete,
  /// posix_memalign, aligned_alloc), or as the allocator used it (memalign and aligned_alloc
  /// round up to a power of two, and to at least 16); 0 where the call takes none.
  std::uint64_t alignment = 0;
  /// The call site: decoded, an id into reader::site_frames (no_site when the recorder had
  /// none); given to the encoder, the thread's local site index of a prior site event.
  std::uint32_t site = no_site;
  /// thread_start: the OS thread id (gettid).
  std::uint64_t tid = 0;
  /// mapping: the segment's address in its file (ELF p_vaddr), so that a site's address there,
  /// what addr2line takes, is site - block + offset.
  std::uint64_t offset = 0;
  /// site: return addresses, innermost first.
  const std::uint64_t* frames = nullptr;
  std::size_t frame_count = 0;
  /// mapping: the file's path and its GNU build id (raw bytes, empty if it has none). Decoded,
  /// they stay valid until the next call to reader::next.
  std::string_view path;
  std::string_view build_id;
};

/// \returns the most bytes `encode` writes for `e`.
inline std::size_t encoded_bound(const event& e) noexcept {
  return 1 + 8 * codec::max_varint_bytes + e.frame_count * codec::max_varint_bytes + e.path.size() +
         e.build_id.size();
}

/// The fields every call (a kind whose role is not `other`) may carry, as encode writes them.
struct call_fields {
  event_kind kind;
  std::uint64_t time_ns;
  std::uint32_t site;
  std::uint64_t old_block;
  std::uint64_t size;
  std::uint64_t alignment;
  std::uint64_t block;
};

/// The most bytes encode_call writes.
inline constexpr std::size_t max_call_bytes = 1 + 6 * codec::max_varint_bytes;

/// The encoder's side of one thread's blocks (docs/TRACE.md#blocks): the block state the reader
/// mirrors, and a table of the thread's recent allocations by address, from which a release
/// names the allocation it frees. About 400 KiB: the recorder maps one a thread (its pages are
/// touched as the thread allocates), the builder allocates one a thread.
struct thread_coder {
  struct allocation {
    std::uint64_t block;
    std::uint64_t serial; ///< of state.serial's count, which never restarts
    std::uint64_t size;
  };
  static constexpr unsigned table_bits = 14;
  static_assert((std::uint64_t{1} << table_bits) <= codec::max_reference_age,
                "every allocation the table holds must be within reach of a reference");

  /// state.serial counts every allocation this coder numbered, for every thread it served; the
  /// reader's count starts at 0 for each thread: at `first`.
  codec::block_state state;
  std::uint64_t first = 0;
  allocation table[std::size_t{1} << table_bits];

  /// Starts a new thread (a reused record, a forked child's) on this coder: what a reader knows
  /// of no other thread, the encoder forgets.
  void restart() noexcept {
    first = state.serial;
    state.released = 0;
    std::memset(state.recent, 0, sizeof state.recent);
    std::memset(state.freed, 0, sizeof state.freed);
    std::memset(state.freed_top, 0, sizeof state.freed_top);
  }
  static std::size_t slot(std::uint64_t block) noexcept {
    return static_cast<std::size_t>((block * 0x9e3779b97f4a7c15u) >> (64 - table_bits));
  }
};

/// Encodes the tag, the time delta and the fields `f` (kind_fields) of `c`'s kind at `out`, against
/// the frame's delta state and the thread's blocks `t`: every event's start, and all of a call.
/// \returns the position after.
MEMKIT_ALWAYS_INLINE std::uint8_t* encode_call(const call_fields& c, int f, codec::delta_state& s,
                                               thread_coder& t, std::uint8_t* out) noexcept {
  using namespace codec;
  std::uint8_t* const tag = out++;
  std::uint8_t flag = 0;
  out = put_varint(out, c.time_ns - s.time);
  s.time = c.time_ns;
  if ((f & f_site) != 0) {
    out = put_varint(out, c.site == no_site ? 0 : std::uint64_t{c.site} + 1);
  }
  // The released block (a release's block, a realloc's old one), found first: a reference to its
  // allocation also gives the size a sized release is written against.
  std::uint64_t released = 0;
  std::uint64_t size = c.size;
  if ((f & (f_old_block | f_releases)) != 0) {
    const std::uint64_t b = (f & f_old_block) != 0 ? c.old_block : c.block;
    thread_coder::allocation& a = t.table[thread_coder::slot(b)];
    if (b != 0 && a.block == b && a.serial >= t.first &&
        t.state.serial - a.serial <= max_reference_age) {
      flag = reference_flag;
      released = t.state.serial - a.serial - 1;
      if ((f & f_releases) != 0) {
        size = delta(a.size, c.size);
      }
      const std::size_t k = size_class(a.size);
      t.state.recent[k] = b;
      t.state.push_freed(k, b);
      a.block = 0;
    } else {
      released = delta(t.state.released, b);
      t.state.released = b;
    }
  }
  if ((f & f_old_block) != 0) {
    out = put_varint(out, released);
  }
  if ((f & f_size) != 0) {
    out = put_varint(out, size);
  }
  if ((f & f_alignment) != 0) {
    out = put_varint(out, c.alignment);
  }
  if ((f & f_releases) != 0) {
    out = put_varint(out, released);
  } else if ((f & f_block) != 0) {
    const std::size_t k = size_class(c.size);
    const std::size_t i = c.block != 0 ? t.state.find_freed(k, c.block) : freed_depth;
    if (i < freed_depth) {
      flag |= reuse_flag;
      out = put_varint(out, i);
      t.state.take_freed(k, i);
    } else {
      out = put_varint(out, delta(t.state.recent[k], c.block));
    }
    t.state.recent[k] = c.block;
    if (c.block != 0) {
      t.table[thread_coder::slot(c.block)] = {c.block, t.state.serial, c.size};
      ++t.state.serial;
    }
  }
  *tag = static_cast<std::uint8_t>(static_cast<std::uint8_t>(c.kind) | flag);
  return out;
}

/// Encodes `e` at `out` (encoded_bound(e) bytes available) against the frame's delta state and
/// the thread's blocks. \returns the position after it.
inline std::uint8_t* encode(const event& e, codec::delta_state& s, thread_coder& t,
                            std::uint8_t* out) noexcept {
  using namespace codec;
  const int f = kind_fields(static_cast<std::uint8_t>(e.kind));
  out = encode_call({e.kind, e.time_ns, e.site, e.old_block, e.size, e.alignment, e.block}, f, s, t,
                    out);
  if ((f & f_tid) != 0) {
    out = put_varint(out, e.tid);
  }
  if ((f & f_frames) != 0) {
    out = put_varint(out, e.site);
    out = put_varint(out, e.frame_count);
    for (std::size_t i = 0; i < e.frame_count; ++i) {
      out = put_varint(out, delta(s.frame, e.frames[i]));
      s.frame = e.frames[i];
    }
  }
  if ((f & f_mapping) != 0) {
    out = put_varint(out, e.block);
    out = put_varint(out, e.size);
    out = put_varint(out, e.offset);
    out = put_varint(out, e.path.size());
    std::memcpy(out, e.path.data(), e.path.size());
    out += e.path.size();
    out = put_varint(out, e.build_id.size());
    std::memcpy(out, e.build_id.data(), e.build_id.size());
    out += e.build_id.size();
  }
  if (e.kind == event_kind::thread_exit) {
    t.restart(); // as the reader's block state starts afresh
  }
  return out;
}

/// Encodes one thread's events, whole, one after another (its *rows*), into a caller's buffer
/// without allocating: what the recorder fills per thread. to_streams turns the rows into the
/// frame payload the format stores.
class frame_encoder {
public:
  frame_encoder(std::uint8_t* buffer, std::size_t capacity, thread_coder* coder) noexcept
      : begin_(buffer), end_(buffer + capacity), p_(buffer), coder_(coder) {}

  /// Starts a payload: thread number, its frame sequence number (0, 1, ... per thread) and the
  /// time the delta of its first event is taken from.
  void begin(std::uint32_t thread, std::uint64_t sequence, std::uint64_t time_ns) noexcept {
    p_ = begin_;
    state_ = {};
    state_.time = time_ns;
    p_ = codec::put_varint(p_, thread);
    p_ = codec::put_varint(p_, sequence);
    p_ = codec::put_varint(p_, time_ns);
    events_ = 0;
  }
  /// \returns false, writing nothing, when `e` might not fit: the caller ships the frame and
  /// begins another.
  bool put(const event& e) noexcept {
    if (static_cast<std::size_t>(end_ - p_) < encoded_bound(e)) {
      return false;
    }
    p_ = encode(e, state_, *coder_, p_);
    ++events_;
    return true;
  }
  /// put() for a call, without an event: the recorder's path for every call it records. `f` is
  /// kind_fields of its kind: a constant where the caller knows it, so the tests of the fields
  /// the kind lacks fold away.
  MEMKIT_ALWAYS_INLINE bool put_call(const call_fields& c, int f) noexcept {
    if (MEMKIT_UNLIKELY(static_cast<std::size_t>(end_ - p_) < max_call_bytes)) {
      return false;
    }
    p_ = encode_call(c, f, state_, *coder_, p_);
    ++events_;
    return true;
  }
  bool put_call(const call_fields& c) noexcept {
    return put_call(c, kind_fields(static_cast<std::uint8_t>(c.kind)));
  }
  const std::uint8_t* data() const noexcept { return begin_; }
  std::size_t size() const noexcept { return static_cast<std::size_t>(p_ - begin_); }
  std::size_t events() const noexcept { return events_; }

private:
  std::uint8_t* begin_;
  std::uint8_t* end_;
  std::uint8_t* p_;
  thread_coder* coder_;
  codec::delta_state state_{};
  std::size_t events_ = 0;
};

/// The most bytes to_streams writes for `n` bytes of rows.
inline constexpr std::size_t streams_bound(std::size_t n) noexcept {
  return n + codec::stream_count * codec::max_varint_bytes;
}

/// The scratch bytes to_streams needs for `n` bytes of rows: room for each stream to hold them all.
inline constexpr std::size_t streams_scratch(std::size_t n) noexcept {
  return codec::stream_count * n;
}

/// Writes the frame payload of the rows [rows, rows + n) (frame_encoder's) at `out`, which has
/// streams_bound(n) bytes: the preamble, each stream's length, then the streams
/// (docs/TRACE.md#frames). The rows are walked once, each field's bytes gathered in its stream's
/// part of `scratch` (streams_scratch(n) bytes), which are then copied whole: the writer thread's
/// cost per event, which bounds how fast a program's calls can be recorded. \returns the bytes
/// written, 0 for rows that do not parse.
inline std::size_t to_streams(const std::uint8_t* rows, std::size_t n, std::uint8_t* out,
                              std::uint8_t* scratch) noexcept {
  using namespace codec;
  const std::uint8_t* p = rows;
  const std::uint8_t* const end = rows + n;
  std::uint8_t* at[stream_count];
  for (std::size_t s = 0; s < stream_count; ++s) {
    at[s] = scratch + s * n;
  }
  // Copies one varint to `to`: false if the rows end inside it or it is too long.
  auto copy = [&p, end](std::uint8_t*& to) {
    for (std::size_t i = 0; i < max_varint_bytes && p != end; ++i) {
      const std::uint8_t b = *p++;
      *to++ = b;
      if (b < 0x80) {
        return true;
      }
    }
    return false;
  };
  // copy(), with the varint's value to `v`.
  auto value = [&p, end](std::uint8_t*& to, std::uint64_t* v) {
    const std::uint8_t* const from = p;
    if (!get_varint(&p, end, v)) {
      return false;
    }
    std::memcpy(to, from, static_cast<std::size_t>(p - from));
    to += p - from;
    return true;
  };
  std::uint8_t* q = out;
  for (int i = 0; i < 3; ++i) { // the preamble
    if (!copy(q)) {
      return 0;
    }
  }
  while (p != end) {
    const int f = kind_fields(*p & kind_mask);
    if (f < 0) {
      return 0;
    }
    *at[s_tag]++ = *p++;
    bool ok = copy(at[s_time]);
    // Most events are malloc's and free's: their fields without a test each.
    if (f == fields::alloc) {
      ok = ok && copy(at[s_site]) && copy(at[s_size]) && copy(at[s_allocated]);
    } else if (f == fields::free) {
      ok = ok && copy(at[s_site]) && copy(at[s_released]);
    } else {
      const bool releases = (f & f_releases) != 0;
      ok = ok && ((f & f_site) == 0 || copy(at[s_site])) &&
           ((f & f_old_block) == 0 || copy(at[s_released])) &&
           ((f & f_size) == 0 || copy(at[releases ? s_release_size : s_size])) &&
           ((f & f_alignment) == 0 || copy(at[s_other])) &&
           ((f & f_block) == 0 || copy(at[releases ? s_released : s_allocated])) &&
           ((f & f_tid) == 0 || copy(at[s_other]));
      std::uint64_t k = 0;
      if (ok && (f & f_frames) != 0) {
        ok = copy(at[s_other]) && value(at[s_other], &k) && k <= max_site_frames;
        for (std::uint64_t i = 0; ok && i < k; ++i) {
          ok = copy(at[s_other]);
        }
      }
      if (ok && (f & f_mapping) != 0) {
        ok = copy(at[s_other]) && copy(at[s_other]) && copy(at[s_other]);
        for (int i = 0; ok && i < 2; ++i) { // the path, the build id: a length and bytes
          ok = value(at[s_other], &k) && k <= static_cast<std::uint64_t>(end - p);
          if (ok) {
            std::memcpy(at[s_other], p, static_cast<std::size_t>(k));
            at[s_other] += k;
            p += k;
          }
        }
      }
    }
    if (!ok) {
      return 0;
    }
  }
  for (std::size_t s = 0; s < stream_count; ++s) {
    q = put_varint(q, static_cast<std::size_t>(at[s] - (scratch + s * n)));
  }
  for (std::size_t s = 0; s < stream_count; ++s) {
    const auto k = static_cast<std::size_t>(at[s] - (scratch + s * n));
    if (k != 0) {
      std::memcpy(q, scratch + s * n, k);
    }
    q += k;
  }
  return static_cast<std::size_t>(q - out);
}

/// \returns the most bytes write_frame writes for a payload of `raw` bytes.
inline constexpr std::size_t frame_bound(std::size_t raw) noexcept {
  // compress_parts' blocks: a block header more for each part.
  return codec::frame_header_size + ZSTD_COMPRESSBOUND(raw) + 8 * (codec::stream_count + 1);
}

/// Calls `part(bytes, n, last)` for each part of the frame payload [p, p + n), in order: the
/// preamble with the stream lengths, then each stream; or once for the whole of a payload that
/// does not parse. \returns false as soon as `part` does.
template <class Part>
bool for_each_part(const std::uint8_t* p, std::size_t n, Part&& part) {
  using namespace codec;
  const std::uint8_t* q = p;
  const std::uint8_t* const end = p + n;
  std::uint64_t length[stream_count];
  bool ok = true;
  for (int i = 0; ok && i < 3; ++i) {
    ok = get_varint(&q, end, &length[0]);
  }
  std::uint64_t total = 0;
  for (std::uint64_t& l : length) {
    ok = ok && get_varint(&q, end, &l);
    total += ok ? l : 0;
  }
  if (!ok || total != static_cast<std::uint64_t>(end - q)) {
    return part(p, n, true);
  }
  if (!part(p, static_cast<std::size_t>(q - p), false)) {
    return false;
  }
  for (std::size_t i = 0; i < stream_count; ++i) {
    if (!part(q, static_cast<std::size_t>(length[i]), i + 1 == stream_count)) {
      return false;
    }
    q += length[i];
  }
  return true;
}

/// Compresses the frame payload [src, src + n) into one zstd frame of `capacity` bytes at `dst`,
/// each of its parts (for_each_part) in zstd blocks of its own, so each stream gets entropy
/// tables of its own: 8 to 13 % fewer bytes than the payload compressed whole (the traces of
/// bench/trace_overhead.sh). `stream(out, in, end)` calls ZSTD_compressStream2 on a context set
/// to its level (ZSTD_e_end for the last part, ZSTD_e_flush before) and returns whether it
/// succeeded and flushed everything. \returns the bytes written, 0 when it cannot.
template <class Stream>
std::size_t compress_parts(std::uint8_t* dst, std::size_t capacity, const std::uint8_t* src,
                           std::size_t n, Stream&& stream) {
  ZSTD_outBuffer out{dst, capacity, 0};
  const bool ok = for_each_part(src, n, [&](const std::uint8_t* p, std::size_t k, bool last) {
    ZSTD_inBuffer in{p, k, 0};
    return stream(&out, &in, last ? ZSTD_e_end : ZSTD_e_flush) && in.pos == k;
  });
  return ok ? out.pos : 0;
}

/// Writes one frame (header and payload) at `out`, which has frame_bound(size) bytes: the payload
/// compressed by `compress(dst, capacity, src, size)` (which returns the compressed size, or 0 when
/// it cannot), or stored when that fails or does not shrink it. \returns the bytes written, 0 when
/// `size` exceeds codec::max_raw_size.
template <class Compress>
std::size_t write_frame(const std::uint8_t* raw, std::size_t size, std::uint8_t* out,
                        Compress&& compress) noexcept {
  if (size > codec::max_raw_size) {
    return 0;
  }
  codec::frame_header h;
  h.raw_size = static_cast<std::uint32_t>(size);
  std::uint8_t* payload = out + codec::frame_header_size;
  std::size_t stored = compress(payload, ZSTD_COMPRESSBOUND(size), raw, size);
  if (stored != 0 && stored < size) {
    h.codec = codec::frame_codec::zstd;
  } else {
    stored = size;
    if (size != 0) {
      std::memcpy(payload, raw, size);
    }
  }
  h.checksum = codec::checksum(payload, stored);
  h.stored_size = static_cast<std::uint32_t>(stored);
  codec::put_frame_header(out, h);
  return codec::frame_header_size + stored;
}

/// write_frame compressed by `cctx` at `level`, or stored when `cctx` is null.
inline std::size_t write_frame(const std::uint8_t* raw, std::size_t size, std::uint8_t* out,
                               ZSTD_CCtx* cctx, int level) noexcept {
  return write_frame(
      raw, size, out,
      [&](std::uint8_t* dst, std::size_t capacity, const std::uint8_t* src,
          std::size_t n) -> std::size_t {
        if (cctx == nullptr || ZSTD_isError(ZSTD_CCtx_reset(cctx, ZSTD_reset_session_only)) != 0 ||
            ZSTD_isError(ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, level)) != 0) {
          return 0;
        }
        return compress_parts(dst, capacity, src, n,
                              [&](ZSTD_outBuffer* o, ZSTD_inBuffer* i, ZSTD_EndDirective e) {
                                const std::size_t left = ZSTD_compressStream2(cctx, o, i, e);
                                return ZSTD_isError(left) == 0 && left == 0;
                              });
      });
}

using header = codec::file_header;

/// Builds a whole trace in memory: hand-written traces for tests, and the fuzzer's seeds.
class builder {
public:
  explicit builder(const header& h = {}, bool compress = true) : cctx_(nullptr, &ZSTD_freeCCtx) {
    if (compress) {
      cctx_.reset(ZSTD_createCCtx());
    }
    bytes_.resize(codec::file_header_size);
    codec::put_file_header(bytes_.data(), h);
  }
  /// Appends one frame of `thread` holding `events` (their `thread` fields are ignored; `site`
  /// is the thread's local index), numbered in sequence per thread, its base time the first
  /// event's; blocks are coded against the thread's earlier frames.
  void frame(std::uint32_t thread, const std::vector<event>& events) {
    std::size_t raw_bound = 3 * codec::max_varint_bytes;
    for (const event& e : events) {
      raw_bound += encoded_bound(e);
    }
    std::unique_ptr<thread_coder>& coder = coders_[thread];
    if (!coder) {
      coder = std::make_unique<thread_coder>();
    }
    std::vector<std::uint8_t> raw(raw_bound);
    frame_encoder enc(raw.data(), raw.size(), coder.get());
    enc.begin(thread, sequence_[thread]++, events.empty() ? 0 : events.front().time_ns);
    for (const event& e : events) {
      enc.put(e);
    }
    std::vector<std::uint8_t> payload(streams_bound(enc.size()));
    std::vector<std::uint8_t> scratch(streams_scratch(enc.size()));
    payload.resize(to_streams(enc.data(), enc.size(), payload.data(), scratch.data()));
    const std::size_t at = bytes_.size();
    bytes_.resize(at + frame_bound(payload.size()));
    bytes_.resize(at +
                  write_frame(payload.data(), payload.size(), bytes_.data() + at, cctx_.get(), 3));
  }
  const std::vector<std::uint8_t>& bytes() const noexcept { return bytes_; }

private:
  std::unique_ptr<ZSTD_CCtx, std::size_t (*)(ZSTD_CCtx*)> cctx_;
  std::vector<std::uint8_t> bytes_;
  std::map<std::uint32_t, std::uint64_t> sequence_;
  std::map<std::uint32_t, std::unique_ptr<thread_coder>> coders_;
};

/// Reads a trace from a file (frame by frame) or from memory, one event at a time. Bad input never
/// crashes it: it stops, and state(), message() and offset() say why and where.
class reader {
public:
  enum class status {
    ok,        ///< more events may follow
    end,       ///< the trace ended after a complete frame
    truncated, ///< the trace was cut inside a frame (or its header): the events before it were read
    error,     ///< corrupted or not this version: the events before the bad one were read
  };

  /// Reads the trace in `bytes`.
  explicit reader(std::vector<std::uint8_t> bytes) : memory_(std::move(bytes)) { read_header(); }
  /// Reads the trace in the file at `path`; a file that cannot be opened is an error at byte 0.
  explicit reader(const std::string& path) : file_(std::fopen(path.c_str(), "rb"), &std::fclose) {
    if (!file_) {
      fail(status::error, 0, "cannot open " + path + ": " + std::strerror(errno));
      return;
    }
    read_header();
  }

  /// Decodes the next event into `e`. \returns false at the end of the trace or at bad input.
  bool next(event& e) {
    while (state_ == status::ok) {
      if (at_[codec::s_tag] != end_[codec::s_tag]) {
        if (decode(e)) {
          return true;
        }
      } else if (frame_left()) {
        fail(status::error, frame_at_,
             "the frame's streams hold more than its events (payload byte " +
                 std::to_string(first_left() - payload_.data()) + ")");
      } else {
        load_frame();
      }
    }
    return false;
  }

  status state() const noexcept { return state_; }
  /// Why reading stopped, naming the byte offset; empty while ok and at a clean end.
  const std::string& message() const noexcept { return message_; }
  /// Where reading stopped: the start of the cut or bad frame (where the intact prefix ends), or
  /// the end of the trace.
  std::uint64_t offset() const noexcept { return offset_; }
  const header& file_header() const noexcept { return header_; }
  /// Complete frames read so far.
  std::uint64_t frames() const noexcept { return frames_; }
  /// The return addresses of site `id` (innermost first), ids from 0 in order of first use.
  const std::vector<std::uint64_t>& site_frames(std::uint32_t id) const { return sites_.at(id); }
  std::size_t site_count() const noexcept { return sites_.size(); }

private:
  struct thread_state {
    std::uint64_t next_sequence = 0;
    std::vector<std::uint32_t> sites; ///< local index -> site id, no_site where undefined
    codec::block_state blocks;
    /// The last max_reference_age allocations (block, size), allocation n at n % that.
    std::vector<std::pair<std::uint64_t, std::uint64_t>> allocations;
  };

  std::size_t read(std::uint8_t* out, std::size_t n) {
    if (file_) {
      const std::size_t got = std::fread(out, 1, n, file_.get());
      pos_ += got;
      return got;
    }
    const std::size_t got = std::min<std::size_t>(n, memory_.size() - pos_);
    if (got != 0) {
      std::memcpy(out, memory_.data() + pos_, got);
    }
    pos_ += got;
    return got;
  }

  void fail(status s, std::uint64_t at, std::string why) {
    state_ = s;
    offset_ = at;
    message_ = (s == status::truncated ? "memkit trace truncated at byte "
                                       : "memkit trace unreadable at byte ") +
               std::to_string(at) + ": " + std::move(why);
    for (std::size_t i = 0; i < codec::stream_count; ++i) {
      at_[i] = end_[i] = nullptr;
    }
  }

  /// Whether a stream of the current frame has bytes left.
  bool frame_left() const noexcept { return first_left() != nullptr; }
  const std::uint8_t* first_left() const noexcept {
    for (std::size_t i = 0; i < codec::stream_count; ++i) {
      if (at_[i] != end_[i]) {
        return at_[i];
      }
    }
    return nullptr;
  }

  void read_header() {
    std::uint8_t h[codec::file_header_size];
    const std::size_t got = read(h, sizeof h);
    if (std::memcmp(h, codec::file_magic, std::min(got, sizeof codec::file_magic)) != 0) {
      fail(status::error, 0, "not a memkit trace (its first 8 bytes are not the trace magic)");
      return;
    }
    if (got >= 12 && codec::get_le<std::uint32_t>(h + 8) != codec::format_version) {
      fail(status::error, 8,
           "format version " + std::to_string(codec::get_le<std::uint32_t>(h + 8)) +
               ", this reader reads version " + std::to_string(codec::format_version));
      return;
    }
    if (got < sizeof h) {
      fail(status::truncated, 0,
           "the file header needs " + std::to_string(sizeof h) + " bytes, the trace has " +
               std::to_string(got));
      return;
    }
    if (codec::get_le<std::uint32_t>(h + 12) != codec::file_header_size) {
      fail(status::error, 12,
           "header size " + std::to_string(codec::get_le<std::uint32_t>(h + 12)) + ", expected " +
               std::to_string(codec::file_header_size));
      return;
    }
    header_.version = codec::format_version;
    header_.start_wall_ns = codec::get_le<std::uint64_t>(h + 16);
    header_.pid = codec::get_le<std::uint32_t>(h + 24);
    header_.parent_pid = codec::get_le<std::uint32_t>(h + 28);
    header_.stack_depth = codec::get_le<std::uint32_t>(h + 32);
    offset_ = pos_;
  }

  void load_frame() {
    const std::uint64_t at = pos_;
    std::uint8_t h[codec::frame_header_size];
    const std::size_t got = read(h, sizeof h);
    if (got == 0) {
      state_ = status::end;
      offset_ = at;
      return;
    }
    if (got < sizeof h) {
      fail(status::truncated, at, "a frame header cut after " + std::to_string(got) + " bytes");
      return;
    }
    if (codec::get_le<std::uint32_t>(h) != codec::frame_magic) {
      fail(status::error, at, "no frame starts here (bad frame magic)");
      return;
    }
    const std::uint32_t stored = codec::get_le<std::uint32_t>(h + 4);
    const std::uint32_t raw = codec::get_le<std::uint32_t>(h + 8);
    const std::uint32_t sum = codec::get_le<std::uint32_t>(h + 12);
    const std::uint8_t kind = h[16];
    if (kind > static_cast<std::uint8_t>(codec::frame_codec::zstd) ||
        (h[17] | h[18] | h[19]) != 0) {
      fail(status::error, at, "unknown frame codec " + std::to_string(kind));
      return;
    }
    if (raw > codec::max_raw_size || stored > codec::max_stored_size ||
        (kind == 0 && stored != raw)) {
      fail(status::error, at,
           "impossible frame sizes (stored " + std::to_string(stored) + ", raw " +
               std::to_string(raw) + ")");
      return;
    }
    stored_.resize(stored);
    const std::size_t body = read(stored_.data(), stored);
    if (body < stored) {
      fail(status::truncated, at,
           "the frame needs " + std::to_string(stored) + " payload bytes, the trace has " +
               std::to_string(body));
      return;
    }
    if (codec::checksum(stored_.data(), stored) != sum) {
      fail(status::error, at, "checksum mismatch: the frame is corrupted");
      return;
    }
    if (kind == static_cast<std::uint8_t>(codec::frame_codec::zstd)) {
      if (!dctx_) {
        dctx_.reset(ZSTD_createDCtx());
      }
      payload_.resize(raw);
      const std::size_t n =
          ZSTD_decompressDCtx(dctx_.get(), payload_.data(), raw, stored_.data(), stored);
      if (ZSTD_isError(n) != 0 || n != raw) {
        fail(status::error, at,
             std::string("the compressed payload does not decode: ") +
                 (ZSTD_isError(n) != 0 ? ZSTD_getErrorName(n) : "wrong raw size"));
        return;
      }
    } else {
      payload_.swap(stored_);
    }
    frame_at_ = at;
    const std::uint8_t* p = payload_.data();
    const std::uint8_t* const end = p + raw;
    std::uint64_t thread = 0;
    std::uint64_t sequence = 0;
    state_d_ = {};
    if (!codec::get_varint(&p, end, &thread) || thread > codec::max_thread ||
        !codec::get_varint(&p, end, &sequence) || !codec::get_varint(&p, end, &state_d_.time)) {
      fail(status::error, at, "bad frame preamble (thread, sequence, time)");
      return;
    }
    std::uint64_t length[codec::stream_count];
    for (std::uint64_t& n : length) {
      if (!codec::get_varint(&p, end, &n)) {
        fail(status::error, at, "bad stream lengths");
        return;
      }
    }
    for (std::size_t i = 0; i < codec::stream_count; ++i) {
      if (length[i] > static_cast<std::uint64_t>(end - p)) {
        fail(status::error, at, "the stream lengths exceed the payload");
        return;
      }
      at_[i] = p;
      end_[i] = p += length[i];
    }
    if (p != end) {
      fail(status::error, at, "the stream lengths do not add up to the payload");
      return;
    }
    thread_ = &threads_[static_cast<std::uint32_t>(thread)];
    if (sequence != thread_->next_sequence) {
      fail(status::error, at,
           "frame " + std::to_string(sequence) + " of thread " + std::to_string(thread) +
               " where frame " + std::to_string(thread_->next_sequence) + " was due");
      return;
    }
    ++thread_->next_sequence;
    thread_number_ = static_cast<std::uint32_t>(thread);
    ++frames_;
    offset_ = pos_;
  }

  bool bad_event(const std::uint8_t* at, const std::string& why) {
    fail(status::error, frame_at_,
         "in the frame starting here, payload byte " + std::to_string(at - payload_.data()) + ": " +
             why);
    return false;
  }

  /// Decodes one event from the streams; false when it is bad (state error) or a site event
  /// that repeats a known site (nothing to report).
  bool decode(event& e) {
    using namespace codec;
    const std::uint8_t* const start = at_[s_tag];
    const std::uint8_t tag = *at_[s_tag]++;
    const std::uint8_t code = tag & kind_mask;
    const int f = kind_fields(code);
    if (f < 0) {
      return bad_event(start, "unknown event kind " + std::to_string(code));
    }
    const bool reference = (tag & reference_flag) != 0;
    if (reference && (f & (f_old_block | f_releases)) == 0) {
      return bad_event(start, "a reference flag on a kind that releases no block");
    }
    const bool reuse = (tag & reuse_flag) != 0;
    if (reuse && ((f & f_block) == 0 || (f & f_releases) != 0)) {
      return bad_event(start, "a reuse flag on a kind that allocates no block");
    }
    e = event{};
    e.kind = static_cast<event_kind>(code);
    e.thread = thread_number_;
    std::uint64_t v = 0;
    auto field = [&](stream s, std::uint64_t* out) { return get_varint(&at_[s], end_[s], out); };
    if (!field(s_time, &v)) {
      return bad_event(start, "bad time delta");
    }
    state_d_.time += v;
    e.time_ns = state_d_.time;
    if ((f & f_site) != 0) {
      if (!field(s_site, &v)) {
        return bad_event(start, "bad site");
      }
      if (v != 0) {
        if (v > thread_->sites.size() || thread_->sites[v - 1] == no_site) {
          return bad_event(start, "site " + std::to_string(v - 1) + " used before its definition");
        }
        e.site = thread_->sites[v - 1];
      }
    }
    block_state& b = thread_->blocks;
    std::uint64_t released_size = 0;
    // The released block (docs/TRACE.md#blocks): a reference to an allocation, or an address.
    auto released = [&](std::uint64_t* out) {
      if (!field(s_released, &v)) {
        return bad_event(start, "bad block");
      }
      if (!reference) {
        b.released = *out = undelta(b.released, v);
        return true;
      }
      if (v >= b.serial || v >= max_reference_age) {
        return bad_event(start, "a reference to allocation " + std::to_string(v + 1) +
                                    " back, where the thread made " + std::to_string(b.serial));
      }
      const auto& a = thread_->allocations[(b.serial - 1 - v) % max_reference_age];
      *out = a.first;
      released_size = a.second;
      const std::size_t k = size_class(a.second);
      b.recent[k] = a.first;
      b.push_freed(k, a.first);
      return true;
    };
    if ((f & f_old_block) != 0 && !released(&e.old_block)) {
      return false;
    }
    if ((f & f_releases) != 0 && !released(&e.block)) {
      return false;
    }
    if ((f & f_size) != 0) {
      if (!field((f & f_releases) != 0 ? s_release_size : s_size, &e.size)) {
        return bad_event(start, "bad size");
      }
      if (reference && (f & f_releases) != 0) {
        e.size = undelta(released_size, e.size);
      }
    }
    if ((f & f_alignment) != 0 && !field(s_other, &e.alignment)) {
      return bad_event(start, "bad alignment");
    }
    if ((f & f_block) != 0 && (f & f_releases) == 0) {
      if (!field(s_allocated, &v)) {
        return bad_event(start, "bad block");
      }
      const std::size_t k = size_class(e.size);
      if (!reuse) {
        e.block = undelta(b.recent[k], v);
      } else if (v >= freed_depth || b.freed_at(k, static_cast<std::size_t>(v)) == 0) {
        return bad_event(start, "a reuse of released block " + std::to_string(v) +
                                    " of a size class that has none there");
      } else {
        e.block = b.freed_at(k, static_cast<std::size_t>(v));
        b.take_freed(k, static_cast<std::size_t>(v));
      }
      b.recent[k] = e.block;
      if (e.block != 0) {
        if (thread_->allocations.size() < max_reference_age) {
          thread_->allocations.emplace_back(e.block, e.size);
        } else {
          thread_->allocations[b.serial % max_reference_age] = {e.block, e.size};
        }
        ++b.serial;
      }
    }
    if ((f & f_tid) != 0 && !field(s_other, &e.tid)) {
      return bad_event(start, "bad thread id");
    }
    if (e.kind == event_kind::thread_exit) {
      // The block state starts afresh (docs/TRACE.md#blocks): a trace of many threads holds the
      // allocations of the live ones only.
      thread_->blocks = {};
      std::vector<std::pair<std::uint64_t, std::uint64_t>>().swap(thread_->allocations);
    }
    bool report = true;
    if ((f & f_frames) != 0) {
      std::uint64_t local = 0;
      std::uint64_t count = 0;
      if (!field(s_other, &local) || local >= max_local_site || !field(s_other, &count) ||
          count > max_site_frames) {
        return bad_event(start, "bad site definition");
      }
      scratch_.clear();
      for (std::uint64_t i = 0; i < count; ++i) {
        if (!field(s_other, &v)) {
          return bad_event(start, "bad site frame");
        }
        state_d_.frame = undelta(state_d_.frame, v);
        scratch_.push_back(state_d_.frame);
      }
      const auto [it, added] =
          site_ids_.emplace(scratch_, static_cast<std::uint32_t>(sites_.size()));
      if (added) {
        sites_.push_back(scratch_);
      }
      if (thread_->sites.size() <= local) {
        thread_->sites.resize(local + 1, no_site);
      }
      thread_->sites[local] = it->second;
      e.site = it->second;
      e.frames = sites_[it->second].data();
      e.frame_count = sites_[it->second].size();
      report = added;
    }
    if ((f & f_mapping) != 0) {
      std::uint64_t length = 0;
      const std::uint8_t*& p = at_[s_other];
      const std::uint8_t* const end = end_[s_other];
      if (!field(s_other, &e.block) || !field(s_other, &e.size) || !field(s_other, &e.offset) ||
          !field(s_other, &length) || length > max_path_bytes ||
          static_cast<std::uint64_t>(end - p) < length) {
        return bad_event(start, "bad mapping");
      }
      e.path = std::string_view(reinterpret_cast<const char*>(p), length);
      p += length;
      if (!field(s_other, &length) || length > max_build_id_bytes ||
          static_cast<std::uint64_t>(end - p) < length) {
        return bad_event(start, "bad mapping build id");
      }
      e.build_id = std::string_view(reinterpret_cast<const char*>(p), length);
      p += length;
    }
    return report;
  }

  std::vector<std::uint8_t> memory_;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file_{nullptr, &std::fclose};
  std::unique_ptr<ZSTD_DCtx, std::size_t (*)(ZSTD_DCtx*)> dctx_{nullptr, &ZSTD_freeDCtx};
  std::uint64_t pos_ = 0;
  header header_{};
  status state_ = status::ok;
  std::string message_;
  std::uint64_t offset_ = 0;
  std::uint64_t frames_ = 0;
  std::vector<std::uint8_t> stored_;
  std::vector<std::uint8_t> payload_;
  const std::uint8_t* at_[codec::stream_count] = {}; ///< each stream's next byte in payload_
  const std::uint8_t* end_[codec::stream_count] = {};
  std::uint64_t frame_at_ = 0;
  codec::delta_state state_d_{};
  std::unordered_map<std::uint32_t, thread_state> threads_;
  thread_state* thread_ = nullptr;
  std::uint32_t thread_number_ = 0;
  std::vector<std::vector<std::uint64_t>> sites_;
  std::map<std::vector<std::uint64_t>, std::uint32_t> site_ids_;
  std::vector<std::uint64_t> scratch_;
};

} // namespace trace
} // namespace MEMKIT_ABI
} // namespace memkit
