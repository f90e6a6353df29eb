// SPDX-License-Identifier: BSL-1.0
// examples/advice_index_example.cpp: the price levels of an order book in a std::map, levels
// appearing and emptying at random, the fourth of the programs `memkit-bench advise` is checked
// against (docs/TRACE.md#advice-checked-against-the-live-program, bench/advice_proof.sh).
//
// Every map node has the same size and comes from one call site (the map's insert); levels empty
// in no order and each lives a short part of the run: the advisor proposes a pool. `malloc` keeps
// std::map's default allocator, `pool` gives the map memkit::allocator over a memkit::node_pool.
//
// Usage: advice_index_example [malloc|pool ITERATIONS] (examples/advice_main.hpp). Without
// arguments, both forms run 100000 iterations and must agree (the ctest run).
#include "advice_main.hpp"

#include <memkit/allocator.hpp>
#include <memkit/node_pool.hpp>

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <utility>

namespace {

struct level {
  std::uint64_t quantity;
  std::uint32_t orders;
};

using heap_book = std::map<std::uint32_t, level>;
using pool_book =
    std::map<std::uint32_t, level, std::less<>,
             memkit::allocator<std::pair<const std::uint32_t, level>, memkit::node_pool<>>>;

/// Each event touches one of 1024 price ticks: a level there empties, or one appears.
template <class Book>
std::uint64_t run(Book& book, long events) {
  advice::xorshift input{0x9e3779b97f4a7c15};
  std::uint64_t traded = 0;
  for (long e = 0; e < events; ++e) {
    const std::uint64_t state = input.next();
    const auto price = static_cast<std::uint32_t>(state % 1024);
    if (const auto it = book.find(price); it != book.end()) {
      traded += it->second.quantity * price;
      book.erase(it);
    } else {
      book.emplace(price, level{(state >> 20) % 500 + 1, 1});
    }
  }
  for (const auto& [price, l] : book) {
    traded += l.quantity ^ price;
  }
  return traded;
}

std::uint64_t run_heap(long events) {
  heap_book book;
  return run(book, events);
}

std::uint64_t run_pool(long events) {
  memkit::node_pool<> nodes;
  pool_book book(nodes);
  return run(book, events);
}

} // namespace

int main(int argc, char** argv) {
  return advice::main(argc, argv, "pool", 100000, run_heap, run_pool);
}
