// SPDX-License-Identifier: BSL-1.0
// memkit/detail/trace_codec.hpp: the byte level of the allocation trace format (docs/TRACE.md):
// varints, zigzag deltas, the fixed little-endian headers, the payload checksum, the payload's
// streams, the size classes and block state blocks are coded against, and the limits a reader
// enforces. No allocation and no I/O, so the recorder inside malloc can use it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "../config.hpp"

namespace memkit {
inline namespace MEMKIT_ABI {
namespace detail {
namespace trace_codec {

/// The first 8 bytes of every trace file.
inline constexpr std::uint8_t file_magic[8] = {'M', 'K', 'T', 'R', 'A', 'C', 'E', 0x1a};
/// The format version this code writes and the only one it reads; any change to the bytes
/// (docs/TRACE.md#format) increments it.
inline constexpr std::uint32_t format_version = 2;
/// File header: magic, version, header size, start wall-clock time, pid, parent pid, stack
/// frames per site, reserved (all little-endian).
inline constexpr std::size_t file_header_size = 40;
/// "MKFR" read as a little-endian 32-bit word: the start of every frame.
inline constexpr std::uint32_t frame_magic = 0x52464b4du;
/// Frame header: magic, stored size, raw size, checksum, codec, 3 reserved bytes.
inline constexpr std::size_t frame_header_size = 20;
/// A frame's payload as stored: as is, or one zstd frame.
enum class frame_codec : std::uint8_t { stored = 0, zstd = 1 };

/// Limits that bound what a corrupted or hostile file can make a reader allocate.
inline constexpr std::uint32_t max_raw_size = std::uint32_t{1} << 24;
inline constexpr std::uint32_t max_stored_size = max_raw_size + (max_raw_size >> 7) + 4096;
inline constexpr std::uint64_t max_site_frames = 256;
inline constexpr std::uint64_t max_path_bytes = 4096;
inline constexpr std::uint64_t max_build_id_bytes = 64;
inline constexpr std::uint64_t max_thread = (std::uint64_t{1} << 24) - 1;
inline constexpr std::uint64_t max_local_site = std::uint64_t{1} << 16;
inline constexpr std::size_t max_varint_bytes = 10;

/// How far back a release may name the allocation it frees (docs/TRACE.md#blocks): the
/// encoder's table of recent allocations and the reader's ring hold this many. 16384 reaches
/// most frees of a thread with up to about 5,000 random live blocks (memkit-bench's larson).
inline constexpr std::uint64_t max_reference_age = std::uint64_t{1} << 14;
/// Set on an event's tag byte when its released block is a reference to an earlier allocation
/// of the thread, not an address.
inline constexpr std::uint8_t reference_flag = 0x80;
/// Set on an event's tag byte when its allocated block is one of its size class's recently
/// released blocks (block_state::freed), named by its place there.
inline constexpr std::uint8_t reuse_flag = 0x40;
/// The tag's bits that are its kind.
inline constexpr std::uint8_t kind_mask = 0x3f;
/// Released blocks remembered per size class, most recent first: an allocator hands out a
/// class's last freed block first more often than not (LIFO free lists).
inline constexpr std::size_t freed_depth = 8;
/// Size classes whose last block an allocation's address is taken from (size_class).
inline constexpr std::size_t block_classes = 64;

/// The class of a request of `size` bytes: 16-byte steps up to 128 bytes, then four classes a
/// doubling, as memkit's and jemalloc's size classes, the last one taking every larger size. An
/// allocation's address is written as a delta from the last block of its class, where the next
/// block of a class usually lies. Part of the format: changing it changes the version.
inline std::size_t size_class(std::uint64_t size) noexcept {
  const std::uint64_t n = size == 0 ? 1 : size;
  if (n <= 128) {
    return static_cast<std::size_t>((n - 1) >> 4);
  }
  const auto k = static_cast<unsigned>(63 - __builtin_clzll(n - 1));
  const std::uint64_t c = 4 * std::uint64_t{k} - 24 + ((n - 1) >> (k - 2));
  return c < block_classes ? static_cast<std::size_t>(c) : block_classes - 1;
}

/// The streams a frame's payload holds its fields in, in this order (docs/TRACE.md#frames): each
/// kind of field apart, which zstd compresses far better than events written whole.
enum stream : std::uint8_t {
  s_tag,          ///< one byte an event: its kind and flags
  s_time,         ///< time deltas
  s_site,         ///< sites
  s_size,         ///< sizes, but a release's
  s_release_size, ///< a sized release's size: mostly 0, a delta from its allocation's
  s_released,     ///< released blocks (a release's block, a realloc's old block)
  s_allocated,    ///< allocated blocks (an allocation's block, a realloc's new block)
  s_other,        ///< alignments, thread ids, site definitions, mappings
  stream_count,
};

inline std::uint64_t zigzag(std::int64_t v) noexcept {
  return (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63);
}
inline std::int64_t unzigzag(std::uint64_t v) noexcept {
  return static_cast<std::int64_t>(v >> 1) ^ -static_cast<std::int64_t>(v & 1);
}
/// The zigzag varint of `to - from` (wrapping): how addresses and frames are stored.
inline std::uint64_t delta(std::uint64_t from, std::uint64_t to) noexcept {
  return zigzag(static_cast<std::int64_t>(to - from));
}
inline std::uint64_t undelta(std::uint64_t from, std::uint64_t d) noexcept {
  return from + static_cast<std::uint64_t>(unzigzag(d));
}

/// Writes `v` as LEB128 (7 bits a byte, low first, high bit = more follows) at `out`.
/// \returns the position after it: at most max_varint_bytes later.
inline std::uint8_t* put_varint(std::uint8_t* out, std::uint64_t v) noexcept {
  if (v < 0x80) { // most fields: one to three bytes, without a loop
    *out = static_cast<std::uint8_t>(v);
    return out + 1;
  }
  if (v < 0x4000) {
    out[0] = static_cast<std::uint8_t>(v | 0x80);
    out[1] = static_cast<std::uint8_t>(v >> 7);
    return out + 2;
  }
  if (v < 0x20'0000) {
    out[0] = static_cast<std::uint8_t>(v | 0x80);
    out[1] = static_cast<std::uint8_t>((v >> 7) | 0x80);
    out[2] = static_cast<std::uint8_t>(v >> 14);
    return out + 3;
  }
  while (v >= 0x80) {
    *out++ = static_cast<std::uint8_t>(v | 0x80);
    v >>= 7;
  }
  *out++ = static_cast<std::uint8_t>(v);
  return out;
}

/// Reads a LEB128 varint from [*p, end). \returns false, leaving *p unchanged, when the bytes end
/// first, it is longer than max_varint_bytes or it overflows 64 bits.
inline bool get_varint(const std::uint8_t** p, const std::uint8_t* end, std::uint64_t* v) noexcept {
  std::uint64_t r = 0;
  const std::uint8_t* q = *p;
  for (unsigned shift = 0; shift < 70; shift += 7) {
    if (q == end) {
      return false;
    }
    const std::uint8_t b = *q++;
    if (shift == 63 && b > 1) {
      return false;
    }
    r |= static_cast<std::uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) {
      *v = r;
      *p = q;
      return true;
    }
  }
  return false;
}

template <class T>
inline void put_le(std::uint8_t* out, T v) noexcept {
  for (std::size_t i = 0; i < sizeof(T); ++i) {
    out[i] = static_cast<std::uint8_t>(static_cast<std::uint64_t>(v) >> (8 * i));
  }
}
template <class T>
inline T get_le(const std::uint8_t* in) noexcept {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i) {
    v |= static_cast<std::uint64_t>(in[i]) << (8 * i);
  }
  return static_cast<T>(v);
}

/// The checksum of a frame's payload as stored (compressed or not), so a flipped bit anywhere in it
/// is caught before decompression: 64-bit words multiplied and rotated (a word a step
/// keeps the writer thread's cost per event small), folded to 32 bits.
inline std::uint32_t checksum(const std::uint8_t* p, std::size_t n) noexcept {
  constexpr std::uint64_t k = 0x9e3779b97f4a7c15u;
  std::uint64_t h = n * k;
  for (; n >= 8; p += 8, n -= 8) {
    std::uint64_t w;
    std::memcpy(&w, p, 8);
    h = ((h ^ w) * k);
    h = (h << 29) | (h >> 35);
  }
  std::uint64_t tail = 0;
  if (n != 0) {
    std::memcpy(&tail, p, n);
  }
  h = (h ^ tail) * k;
  h ^= h >> 32;
  return static_cast<std::uint32_t>(h);
}

struct file_header {
  std::uint32_t version = format_version;
  std::uint64_t start_wall_ns = 0; ///< CLOCK_REALTIME at the start of recording
  std::uint32_t pid = 0;
  std::uint32_t parent_pid = 0;  ///< the recording parent's pid in a forked child's trace, else 0
  std::uint32_t stack_depth = 1; ///< frames recorded per call site (MEMKIT_OPTIONS stack:N)
};

inline void put_file_header(std::uint8_t* out, const file_header& h) noexcept {
  std::memcpy(out, file_magic, sizeof file_magic);
  put_le<std::uint32_t>(out + 8, h.version);
  put_le<std::uint32_t>(out + 12, static_cast<std::uint32_t>(file_header_size));
  put_le<std::uint64_t>(out + 16, h.start_wall_ns);
  put_le<std::uint32_t>(out + 24, h.pid);
  put_le<std::uint32_t>(out + 28, h.parent_pid);
  put_le<std::uint32_t>(out + 32, h.stack_depth);
  put_le<std::uint32_t>(out + 36, 0);
}

struct frame_header {
  std::uint32_t stored_size = 0;
  std::uint32_t raw_size = 0;
  std::uint32_t checksum = 0;
  frame_codec codec = frame_codec::stored;
};

inline void put_frame_header(std::uint8_t* out, const frame_header& h) noexcept {
  put_le<std::uint32_t>(out, frame_magic);
  put_le<std::uint32_t>(out + 4, h.stored_size);
  put_le<std::uint32_t>(out + 8, h.raw_size);
  put_le<std::uint32_t>(out + 12, h.checksum);
  out[16] = static_cast<std::uint8_t>(h.codec);
  out[17] = out[18] = out[19] = 0;
}

/// Fields an event kind carries in the payload, in this order after the time delta
/// (docs/TRACE.md#events).
enum field : std::uint8_t {
  f_site = 1,      ///< varint: the thread's local site index, 0 = unknown
  f_old_block = 2, ///< zigzag delta to the previous block address of the frame
  f_size = 4,      ///< varint
  f_alignment = 8, ///< varint
  f_block = 16,    ///< zigzag delta to the previous block address of the frame
  f_tid = 32,      ///< varint: the OS thread id
  f_frames = 64,   ///< site definition: local index, frame count, frames as deltas
  f_mapping = 128, ///< start, length, file offset, path, build id
};
/// Not a field: set for the kinds whose f_block is a block released (free, operator delete).
inline constexpr int f_releases = 256;

/// The delta state of one frame's payload, reset at each frame.
struct delta_state {
  std::uint64_t time = 0;
  std::uint64_t frame = 0;
};

/// The block state of one thread, carried from each of its frames to the next: what encoder and
/// reader both know (docs/TRACE.md#blocks).
struct block_state {
  std::uint64_t serial = 0;                 ///< the thread's allocations numbered so far
  std::uint64_t released = 0;               ///< the last released block written as an address
  std::uint64_t recent[block_classes] = {}; ///< the last block of each size class
  /// Each class's last freed_depth blocks released by reference and not allocated again, most
  /// recent first (0: none): place i of class k is freed[k][(freed_top[k] + i) % freed_depth], a
  /// ring, so that the usual push and take of place 0 move no block.
  std::uint64_t freed[block_classes][freed_depth] = {};
  std::uint8_t freed_top[block_classes] = {};

  static_assert((freed_depth & (freed_depth - 1)) == 0, "a ring indexed by masking");
  /// \returns class `k`'s released block at place `i` (0: none).
  std::uint64_t freed_at(std::size_t k, std::size_t i) const noexcept {
    return freed[k][(freed_top[k] + i) & (freed_depth - 1)];
  }
  /// \effects remembers `block`, released, as the most recent of class `k` (the oldest goes).
  void push_freed(std::size_t k, std::uint64_t block) noexcept {
    freed_top[k] = static_cast<std::uint8_t>((freed_top[k] - 1) & (freed_depth - 1));
    freed[k][freed_top[k]] = block;
  }
  /// \returns the place of `block` (not 0) among class `k`'s released blocks, or freed_depth.
  std::size_t find_freed(std::size_t k, std::uint64_t block) const noexcept {
    std::size_t i = 0;
    while (i < freed_depth && freed_at(k, i) != block) {
      ++i;
    }
    return i;
  }
  /// \effects forgets class `k`'s released block at place `i`, allocated again: the blocks after
  /// it move up one place, and the last place is empty.
  void take_freed(std::size_t k, std::size_t i) noexcept {
    const unsigned top = freed_top[k];
    for (std::size_t j = i; j != 0; --j) { // the blocks before it move back one, the top on one
      freed[k][(top + j) & (freed_depth - 1)] = freed[k][(top + j - 1) & (freed_depth - 1)];
    }
    freed[k][top] = 0;
    freed_top[k] = static_cast<std::uint8_t>((top + 1) & (freed_depth - 1));
  }
};

} // namespace trace_codec
} // namespace detail
} // namespace MEMKIT_ABI
} // namespace memkit
