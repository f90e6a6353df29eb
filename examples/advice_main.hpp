// SPDX-License-Identifier: BSL-1.0
// examples/advice_main.hpp: the command line of the advice_*_example programs, each of which runs
// its hot call site under malloc or under the strategy `memkit-bench advise` proposed for it
// (bench/advice_proof.sh).
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace advice {

/// The programs' deterministic input: xorshift64, so both forms see the same events.
struct xorshift {
  std::uint64_t state;
  std::uint64_t next() noexcept {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  }
};

/// `PROGRAM malloc N` runs `heap(N)`, `PROGRAM STRATEGY N` runs `advised(N)`, each printing its
/// digest; without arguments both run `test_size` iterations and must agree (the ctest run).
/// \returns main's exit status: 0, 1 if the two forms disagree, 2 on a bad command line.
template <class Heap, class Advised>
int main(int argc, char** argv, const char* strategy, long test_size, Heap heap, Advised advised) {
  if (argc == 3) {
    const std::string how = argv[1];
    const long n = std::atol(argv[2]);
    if ((how == "malloc" || how == strategy) && n > 0) {
      const std::uint64_t digest = how == "malloc" ? heap(n) : advised(n);
      std::printf("%ld iterations under %s: digest %016llx\n", n, how.c_str(),
                  static_cast<unsigned long long>(digest));
      return 0;
    }
  }
  if (argc != 1) {
    std::fprintf(stderr, "usage: %s [malloc|%s ITERATIONS]\n", argv[0], strategy);
    return 2;
  }
  const std::uint64_t from_heap = heap(test_size);
  const std::uint64_t from_strategy = advised(test_size);
  std::printf("%ld iterations: digest %016llx under malloc, %016llx under %s\n", test_size,
              static_cast<unsigned long long>(from_heap),
              static_cast<unsigned long long>(from_strategy), strategy);
  return from_heap == from_strategy ? 0 : 1;
}

} // namespace advice
