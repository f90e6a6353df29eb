// SPDX-License-Identifier: BSL-1.0
// memkit/detail/guard.hpp: the one guard layout of memkit's checked blocks, shared by
// debug_resource (debug_resource.hpp) and the global replacement's debug mode (src/debug.cpp):
// the fill bytes, the guard size, where the header and the guards lie, and the check that finds
// the first damaged guard byte.
#pragma once

#include <cstddef>
#include <cstring>

#include "../config.hpp"
#include "base/align.hpp"

namespace memkit {
inline namespace MEMKIT_ABI {
namespace detail {
namespace guard {

/// MSVC's debug heap's values, familiar to many: written into a fresh block, so reading
/// uninitialised memory shows a recognisable value ...
inline constexpr unsigned char fresh_byte = 0xCD;
/// ... into a freed block, so a read after free shows it ...
inline constexpr unsigned char freed_byte = 0xDD;
/// ... and into every guard byte around a block.
inline constexpr unsigned char guard_byte = 0xFD;

/// \returns `requested` guard bytes rounded up to a multiple of `word` (a power of two, the
/// header's alignment), and at least one word.
constexpr std::size_t size_for(std::size_t requested, std::size_t word) noexcept {
  const std::size_t g = round_up(requested, word);
  return g < word ? word : g;
}

/// \returns the offset from `p` of the first of its `n` bytes that is not guard_byte, or `n`.
inline std::size_t first_bad_byte(const char* p, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i) {
    if (static_cast<unsigned char>(p[i]) != guard_byte) {
      return i;
    }
  }
  return n;
}

/// Where the parts of a checked block lie in the memory that holds it, from its start `base`:
///
///     [guard][header][guard][the caller's bytes][guard]
///     ^base  ^header_at     ^front              ^front + size, `back` bytes
///
/// Every byte before the caller's but the header's is a guard byte; the header has a check of its
/// own (each user's: a registry entry's copy, a hash of its fields). The caller's size is at
/// least 1 (a request of 0 gets 1 byte), so an offset of 0 never names a guard byte.
struct layout {
  std::size_t header_at;
  std::size_t header_size;
  std::size_t front; ///< where the caller's bytes start
  std::size_t back;  ///< guard bytes after them

  /// \effects writes the guard bytes before the caller's.
  void paint_front(char* base) const noexcept {
    std::memset(base, guard_byte, header_at);
    const std::size_t tail = header_at + header_size;
    std::memset(base + tail, guard_byte, front - tail);
  }

  /// \effects writes the guard bytes after the caller's `size` bytes.
  void paint_back(char* base, std::size_t size) const noexcept {
    std::memset(base + front + size, guard_byte, back);
  }

  /// \returns the offset from the caller's first byte of the first damaged guard byte before it
  /// (negative), or 0 if every one is intact.
  std::ptrdiff_t first_bad_before(const char* base) const noexcept {
    std::size_t at = first_bad_byte(base, header_at);
    if (at == header_at) {
      const std::size_t tail = header_at + header_size;
      at = tail + first_bad_byte(base + tail, front - tail);
    }
    return at == front ? 0 : static_cast<std::ptrdiff_t>(at) - static_cast<std::ptrdiff_t>(front);
  }

  /// \returns the offset from the caller's first byte of the first damaged guard byte after its
  /// `size` bytes (at least `size`), or 0 if every one is intact.
  std::ptrdiff_t first_bad_after(const char* base, std::size_t size) const noexcept {
    const std::size_t at = first_bad_byte(base + front + size, back);
    return at == back ? 0 : static_cast<std::ptrdiff_t>(size + at);
  }
};

} // namespace guard
} // namespace detail
} // namespace MEMKIT_ABI
} // namespace memkit
