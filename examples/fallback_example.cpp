// SPDX-License-Identifier: BSL-1.0
// A fixed 4 KiB buffer for the common small messages, overflowing to malloc for the rare large
// one; frees are routed back by ownership, never guessed.
#include <memkit/arena.hpp>
#include <memkit/fallback.hpp>
#include <memkit/upstream.hpp>

#include <cstdio>
#include <cstring>
#include <tuple>
#include <vector>

int main() {
  alignas(64) static std::byte buffer[4096];
  // The arena's null upstream makes it fail instead of growing, so the fallback takes over.
  memkit::fallback<memkit::arena<memkit::null_resource>, memkit::malloc_resource> messages(
      std::piecewise_construct, std::forward_as_tuple(buffer, sizeof buffer),
      std::forward_as_tuple());

  struct message {
    char* text;
    std::size_t size;
  };
  std::size_t total = 0;
  std::size_t in_buffer = 0;
  bool intact = true;
  for (std::size_t batch = 0; batch < 10; ++batch) {
    std::vector<message> inbox;
    for (std::size_t i = 0; i < 10; ++i, ++total) {
      const std::size_t size = total % 25 == 24 ? 6000 : 16 + total % 48; // every 25th is large
      auto* text = static_cast<char*>(messages.allocate(size, 1));
      std::memset(text, 'a' + static_cast<int>(i), size);
      inbox.push_back({text, size});
      in_buffer += messages.primary().owns(text) ? 1 : 0;
    }
    for (std::size_t i = 0; i < inbox.size(); ++i) {
      for (std::size_t j = 0; j < inbox[i].size; ++j) {
        intact = intact && inbox[i].text[j] == 'a' + static_cast<int>(i);
      }
      messages.deallocate(inbox[i].text, inbox[i].size, 1); // to malloc only if it came from there
    }
    messages.primary().reset(); // the batch is done: the whole buffer is free again
  }

  std::printf("%zu of %zu messages served from the 4 KiB buffer, %zu from malloc\n", in_buffer,
              total, total - in_buffer);
  return intact && in_buffer == 96 ? 0 : 1;
}
