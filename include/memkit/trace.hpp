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
inline constexpr std::uint8_t alloc = f_site | f_size | f_block;
inline constexpr std::uint8_t aligned_alloc = alloc | f_alignment;
inline constexpr std::uint8_t free = f_site | f_block;
inline constexpr std::uint8_t sized_free = free | f_size;
inline constexpr std::uint8_t aligned_free = free | f_alignment;
inline constexpr std::uint8_t sized_aligned_free = free | f_size | f_alignment;
inline constexpr std::uint8_t realloc = f_site | f_old_block | f_size | f_block;
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

/// \returns the codec::field bits the kind with tag `code` carries, or -1 for a code that is no
/// kind.
inline int kind_fields(std::uint8_t code) noexcept {
  switch (code) {
#define MEMKIT_TRACE_FIELDS(name, c, f, role)                                                      \
  case c:                                                                                          \
    return f;
    MEMKIT_TRACE_KINDS(MEMKIT_TRACE_FIELDS)
#undef MEMKIT_TRACE_FIELDS
  default:
    return -1;
  }
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
  /// Nanoseconds since the start of recording (CLOCK_MONOTONIC). An allocation's time is taken
  /// after it returned, a release's before it began, so a block's reuse never precedes its free.
  std::uint64_t time_ns = 0;
  /// The block's address: what an allocation returned (0: it failed), what a release or realloc
  /// was given or, for realloc, what it returned; a mapping's start address.
  std::uint64_t block = 0;
  /// realloc, reallocarray: the block passed in (0 for realloc(NULL, n)).
  std::uint64_t old_block = 0;
  /// Bytes asked for (calloc and reallocarray: count × size, saturated at 2^64 - 1); the size given
  /// to a sized delete; rss_sample: resident bytes; mapping: its length.
  std::uint64_t size = 0;
  /// Alignment asked for by the aligned entry points; 0 where the call takes none.
  std::uint64_t alignment = 0;
  /// The call site: decoded, an id into reader::site_frames (no_site when the recorder had
  /// none); given to the encoder, the thread's local site index of a prior site event.
  std::uint32_t site = no_site;
  /// thread_start: the OS thread id (gettid).
  std::uint64_t tid = 0;
  /// mapping: the offset in its file.
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

/// Encodes `e` at `out` (encoded_bound(e) bytes available) against the frame's delta state.
/// \returns the position after it.
inline std::uint8_t* encode(const event& e, codec::delta_state& s, std::uint8_t* out) noexcept {
  using namespace codec;
  const int f = kind_fields(static_cast<std::uint8_t>(e.kind));
  *out++ = static_cast<std::uint8_t>(e.kind);
  out = put_varint(out, e.time_ns - s.time);
  s.time = e.time_ns;
  if ((f & f_site) != 0) {
    out = put_varint(out, e.site == no_site ? 0 : std::uint64_t{e.site} + 1);
  }
  if ((f & f_old_block) != 0) {
    out = put_varint(out, delta(s.block, e.old_block));
    s.block = e.old_block;
  }
  if ((f & f_size) != 0) {
    out = put_varint(out, e.size);
  }
  if ((f & f_alignment) != 0) {
    out = put_varint(out, e.alignment);
  }
  if ((f & f_block) != 0) {
    out = put_varint(out, delta(s.block, e.block));
    s.block = e.block;
  }
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
  return out;
}

/// Encodes one thread's events into a frame payload in a caller's buffer, without allocating:
/// what the recorder fills per thread.
class frame_encoder {
public:
  frame_encoder(std::uint8_t* buffer, std::size_t capacity) noexcept
      : begin_(buffer), end_(buffer + capacity), p_(buffer) {}

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
    p_ = encode(e, state_, p_);
    ++events_;
    return true;
  }
  const std::uint8_t* data() const noexcept { return begin_; }
  std::size_t size() const noexcept { return static_cast<std::size_t>(p_ - begin_); }
  std::size_t events() const noexcept { return events_; }

private:
  std::uint8_t* begin_;
  std::uint8_t* end_;
  std::uint8_t* p_;
  codec::delta_state state_{};
  std::size_t events_ = 0;
};

/// \returns the most bytes write_frame writes for a payload of `raw` bytes.
inline std::size_t frame_bound(std::size_t raw) noexcept {
  return codec::frame_header_size + ZSTD_COMPRESSBOUND(raw);
}

/// Writes one frame (header and payload) at `out`, which has frame_bound(size) bytes: the payload
/// compressed by `cctx` at `level`, or stored when `cctx` is null or compression fails or does not
/// shrink it. \returns the bytes written, 0 when `size` exceeds codec::max_raw_size.
inline std::size_t write_frame(const std::uint8_t* raw, std::size_t size, std::uint8_t* out,
                               ZSTD_CCtx* cctx, int level) noexcept {
  if (size > codec::max_raw_size) {
    return 0;
  }
  codec::frame_header h;
  h.raw_size = static_cast<std::uint32_t>(size);
  std::uint8_t* payload = out + codec::frame_header_size;
  std::size_t stored = 0;
  if (cctx != nullptr) {
    stored = ZSTD_compressCCtx(cctx, payload, ZSTD_COMPRESSBOUND(size), raw, size, level);
  }
  if (cctx != nullptr && ZSTD_isError(stored) == 0 && stored < size) {
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
  /// event's.
  void frame(std::uint32_t thread, const std::vector<event>& events) {
    std::size_t raw_bound = 3 * codec::max_varint_bytes;
    for (const event& e : events) {
      raw_bound += encoded_bound(e);
    }
    std::vector<std::uint8_t> raw(raw_bound);
    frame_encoder enc(raw.data(), raw.size());
    enc.begin(thread, sequence_[thread]++, events.empty() ? 0 : events.front().time_ns);
    for (const event& e : events) {
      enc.put(e);
    }
    const std::size_t at = bytes_.size();
    bytes_.resize(at + frame_bound(enc.size()));
    bytes_.resize(at + write_frame(enc.data(), enc.size(), bytes_.data() + at, cctx_.get(), 3));
  }
  const std::vector<std::uint8_t>& bytes() const noexcept { return bytes_; }

private:
  std::unique_ptr<ZSTD_CCtx, std::size_t (*)(ZSTD_CCtx*)> cctx_;
  std::vector<std::uint8_t> bytes_;
  std::map<std::uint32_t, std::uint64_t> sequence_;
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
      if (p_ != payload_end_) {
        if (decode(e)) {
          return true;
        }
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
    p_ = payload_end_ = nullptr;
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
    p_ = payload_.data();
    payload_end_ = p_ + raw;
    std::uint64_t thread = 0;
    std::uint64_t sequence = 0;
    state_d_ = {};
    if (!codec::get_varint(&p_, payload_end_, &thread) || thread > codec::max_thread ||
        !codec::get_varint(&p_, payload_end_, &sequence) ||
        !codec::get_varint(&p_, payload_end_, &state_d_.time)) {
      fail(status::error, at, "bad frame preamble (thread, sequence, time)");
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

  /// Decodes one event from the payload; false when it is bad (state error) or a site event
  /// that repeats a known site (nothing to report).
  bool decode(event& e) {
    using namespace codec;
    const std::uint8_t* const start = p_;
    const std::uint8_t* p = p_;
    const std::uint8_t* const end = payload_end_;
    const std::uint8_t code = *p++;
    const int f = kind_fields(code);
    if (f < 0) {
      return bad_event(start, "unknown event kind " + std::to_string(code));
    }
    e = event{};
    e.kind = static_cast<event_kind>(code);
    e.thread = thread_number_;
    std::uint64_t v = 0;
    auto field = [&](std::uint64_t* out) { return get_varint(&p, end, out); };
    if (!field(&v)) {
      return bad_event(start, "bad time delta");
    }
    state_d_.time += v;
    e.time_ns = state_d_.time;
    if ((f & f_site) != 0) {
      if (!field(&v)) {
        return bad_event(start, "bad site");
      }
      if (v != 0) {
        if (v > thread_->sites.size() || thread_->sites[v - 1] == no_site) {
          return bad_event(start, "site " + std::to_string(v - 1) + " used before its definition");
        }
        e.site = thread_->sites[v - 1];
      }
    }
    if ((f & f_old_block) != 0) {
      if (!field(&v)) {
        return bad_event(start, "bad block");
      }
      state_d_.block = e.old_block = undelta(state_d_.block, v);
    }
    if ((f & f_size) != 0 && !field(&e.size)) {
      return bad_event(start, "bad size");
    }
    if ((f & f_alignment) != 0 && !field(&e.alignment)) {
      return bad_event(start, "bad alignment");
    }
    if ((f & f_block) != 0) {
      if (!field(&v)) {
        return bad_event(start, "bad block");
      }
      state_d_.block = e.block = undelta(state_d_.block, v);
    }
    if ((f & f_tid) != 0 && !field(&e.tid)) {
      return bad_event(start, "bad thread id");
    }
    bool report = true;
    if ((f & f_frames) != 0) {
      std::uint64_t local = 0;
      std::uint64_t count = 0;
      if (!field(&local) || local >= max_local_site || !field(&count) || count > max_site_frames) {
        return bad_event(start, "bad site definition");
      }
      scratch_.clear();
      for (std::uint64_t i = 0; i < count; ++i) {
        if (!field(&v)) {
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
      if (!field(&e.block) || !field(&e.size) || !field(&e.offset) || !field(&length) ||
          length > max_path_bytes || static_cast<std::uint64_t>(end - p) < length) {
        return bad_event(start, "bad mapping");
      }
      e.path = std::string_view(reinterpret_cast<const char*>(p), length);
      p += length;
      if (!field(&length) || length > max_build_id_bytes ||
          static_cast<std::uint64_t>(end - p) < length) {
        return bad_event(start, "bad mapping build id");
      }
      e.build_id = std::string_view(reinterpret_cast<const char*>(p), length);
      p += length;
    }
    p_ = p;
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
  const std::uint8_t* p_ = nullptr;
  const std::uint8_t* payload_end_ = nullptr;
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
