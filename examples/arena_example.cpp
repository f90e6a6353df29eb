// SPDX-License-Identifier: BSL-1.0
// Request-scoped scratch memory: every request's words live in one arena, freed wholesale by
// reset(); a speculative parse is undone with a marker.
#include <memkit/arena.hpp>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <new>
#include <string_view>

namespace {

struct word {
  std::string_view text;
  word* next;
};

/// Copies the words of `line` into the arena, as a list.
word* split(memkit::arena<>& a, std::string_view line) {
  word* head = nullptr;
  word** tail = &head;
  for (std::size_t i = 0; i < line.size();) {
    const std::size_t end = std::min(line.find(' ', i), line.size());
    if (end > i) {
      char* text = static_cast<char*>(a.allocate(end - i, 1));
      std::memcpy(text, line.data() + i, end - i);
      *tail = ::new (a.allocate(sizeof(word), alignof(word))) word{{text, end - i}, nullptr};
      tail = &(*tail)->next;
    }
    i = end + 1;
  }
  return head;
}

/// \returns the number of words, or 0 if any is not a number; the words are kept only on success.
std::size_t count_numbers(memkit::arena<>& a, std::string_view line) {
  const memkit::arena_marker before = a.marker();
  std::size_t n = 0;
  for (const word* w = split(a, line); w != nullptr; w = w->next, ++n) {
    if (!std::isdigit(static_cast<unsigned char>(w->text[0]))) {
      a.rollback(before);
      return 0;
    }
  }
  return n;
}

} // namespace

int main() {
  const char* requests[] = {"GET /index.html HTTP/1.1", "7 11 13 17 19", "POST /api/v1/items 42",
                            "1 2 3 x 5", "the quick brown fox jumps over the lazy dog"};
  memkit::arena<> scratch;
  std::size_t words = 0;
  std::size_t numbers = 0;
  std::size_t peak = 0;
  for (int i = 0; i < 5000; ++i) {
    const char* request = requests[i % 5];
    for (const word* w = split(scratch, request); w != nullptr; w = w->next, ++words) {
    }
    numbers += count_numbers(scratch, request);
    peak = std::max(peak, scratch.used());
    scratch.reset(); // the request is done: all its memory is free, the blocks are kept
  }
  std::printf("%zu words and %zu numbers in 5000 requests, at most %zu arena bytes each\n", words,
              numbers, peak);
  return words == 1000 * 25 && numbers == 1000 * 5 ? 0 : 1;
}
