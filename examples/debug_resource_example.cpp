// SPDX-License-Identifier: BSL-1.0
// A parser's token buffer with an off-by-one, caught by memkit::debug_resource around the pool the
// buffers come from: the guard byte after the block is found damaged when the block is freed.
#include <memkit/debug_resource.hpp>
#include <memkit/pool.hpp>

#include <cstdio>
#include <cstring>
#include <vector>

namespace {

constexpr std::size_t token_capacity = 16;

// Copies `word` into a fresh token buffer with its terminating zero. The bug: the length check
// forgets the terminator, so a 16-letter word writes one byte past the buffer.
char* make_token(memkit::debug_resource<memkit::pool<>>& r, const char* word) {
  char* token = static_cast<char*>(r.allocate(token_capacity, 1));
  if (std::strlen(word) <= token_capacity) {
    std::memcpy(token, word, std::strlen(word) + 1);
  }
  return token;
}

} // namespace

int main() {
  std::vector<memkit::misuse_report> found;
  memkit::debug_options options;
  options.reaction = memkit::debug_reaction::handler;
  options.handler = [&found](const memkit::misuse_report& r) { found.push_back(r); };
  // The pool's blocks hold the token plus the debug header and guards.
  memkit::debug_resource<memkit::pool<>> tokens(options,
                                                memkit::debug_block_size(token_capacity, 1));

  const char* words[] = {"allocate", "deallocate", "characteristics", "incomprehensible"};
  std::vector<char*> live;
  for (const char* w : words) {
    live.push_back(make_token(tokens, w));
  }
  for (char* t : live) {
    tokens.deallocate(t, token_capacity, 1);
  }

  for (const auto& r : found) {
    char line[256];
    std::printf("found: %s\n", memkit::format(r, line, sizeof(line)));
  }
  // Exactly the 16-letter word overran its buffer.
  return found.size() == 1 && found[0].kind == memkit::misuse::overrun &&
                 found[0].pointer == live[3]
             ? 0
             : 1;
}
