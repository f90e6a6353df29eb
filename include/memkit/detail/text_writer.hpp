// SPDX-License-Identifier: BSL-1.0
// memkit/detail/text_writer.hpp: text into a caller's buffer without allocating.
#pragma once

#include <cstddef>

#include "../config.hpp"

namespace memkit {
inline namespace MEMKIT_ABI {
namespace detail {

/// Appends text to a caller's buffer without allocating, counting what did not fit: `length` is
/// the whole text's, so a caller can retry with a buffer that large. What statistics are written
/// with (stats.hpp's to_json and write_json, the global replacement's exit line, which runs when
/// malloc may be anywhere).
struct text_writer {
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
  /// put for a Markdown table cell: `|` escaped, so it does not end the cell.
  void put_cell(const char* s) noexcept {
    for (; *s != '\0'; ++s) {
      const char c[3] = {'\\', *s, '\0'};
      put(*s == '|' ? c : c + 1);
    }
  }
  /// `v` in decimal.
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
  /// A JSON member `"name":v`, after a comma unless `first`.
  void field(const char* name, std::size_t v, bool first = false) noexcept {
    put(first ? "\"" : ",\"");
    put(name);
    put("\":");
    put(v);
  }
  /// \effects ends the text with a NUL within the buffer (truncating if it did not fit).
  void terminate() noexcept {
    if (size != 0) {
      out[length < size ? length : size - 1] = '\0';
    }
  }
};

} // namespace detail
} // namespace MEMKIT_ABI
} // namespace memkit
