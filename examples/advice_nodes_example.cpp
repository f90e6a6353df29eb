// SPDX-License-Identifier: BSL-1.0
// examples/advice_nodes_example.cpp: a table of open connections, each a node of one size opened
// and closed at random, the third of the programs `memkit-bench advise` is checked against
// (docs/TRACE.md#advice-checked-against-the-live-program, bench/advice_proof.sh).
//
// Connections come and go in no order (neither LIFO nor in bulk) and each lives a short part of
// the run, and every node has the same size: the advisor proposes memkit::pool. `malloc` takes
// each node from the heap, `pool` from one memkit::pool of node-sized blocks.
//
// Usage: advice_nodes_example [malloc|pool ITERATIONS] (examples/advice_main.hpp). Without
// arguments, both forms run 100000 iterations and must agree (the ctest run).
#include "advice_main.hpp"

#include <memkit/pool.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <vector>

namespace {

struct connection {
  std::uint64_t id;
  std::uint64_t bytes_in;
  std::uint64_t bytes_out;
  std::uint32_t peer;
  std::uint16_t port;
  std::uint16_t state;
  connection* next_in_bucket; ///< the table's chain
};

/// The heap: each node its own block.
struct heap_nodes {
  void* allocate() {
    void* p = std::malloc(sizeof(connection));
    if (p == nullptr) {
      throw std::bad_alloc();
    }
    return p;
  }
  void deallocate(void* p) noexcept { std::free(p); }
};

/// The advice applied: every node from one pool of node-sized blocks.
class pool_nodes {
public:
  pool_nodes() : pool_(sizeof(connection), alignof(connection)) {}
  void* allocate() { return pool_.allocate(sizeof(connection), alignof(connection)); }
  void deallocate(void* p) noexcept {
    pool_.deallocate(p, sizeof(connection), alignof(connection));
  }

private:
  memkit::pool<> pool_;
};

/// Open connections, by id in a chained table, and in a vector from which one closes at random.
template <class Nodes>
class table {
public:
  table() : buckets_(4096, nullptr) { open_.reserve(8192); }
  table(const table&) = delete;
  table& operator=(const table&) = delete;
  ~table() {
    while (!open_.empty()) {
      close(0);
    }
  }

  void open(std::uint64_t id) {
    auto* c = ::new (nodes_.allocate()) connection{id,
                                                   0,
                                                   0,
                                                   static_cast<std::uint32_t>(id * 2654435761u),
                                                   static_cast<std::uint16_t>(id),
                                                   1,
                                                   buckets_[id % buckets_.size()]};
    buckets_[id % buckets_.size()] = c;
    open_.push_back(c);
  }

  /// Closes the open connection at `index` of the vector; \returns its traffic.
  std::uint64_t close(std::size_t index) {
    connection* c = open_[index];
    open_[index] = open_.back();
    open_.pop_back();
    connection** link = &buckets_[c->id % buckets_.size()];
    while (*link != c) {
      link = &(*link)->next_in_bucket;
    }
    *link = c->next_in_bucket;
    const std::uint64_t traffic = c->bytes_in * 3 + c->bytes_out;
    c->~connection();
    nodes_.deallocate(c);
    return traffic;
  }

  /// Some traffic on the connection of `id`, if it is open.
  void traffic(std::uint64_t id, std::uint64_t bytes) noexcept {
    for (connection* c = buckets_[id % buckets_.size()]; c != nullptr; c = c->next_in_bucket) {
      if (c->id == id) {
        c->bytes_in += bytes;
        c->bytes_out += bytes / 2;
        return;
      }
    }
  }

  std::size_t size() const noexcept { return open_.size(); }

private:
  Nodes nodes_;
  std::vector<connection*> buckets_;
  std::vector<connection*> open_;
};

template <class Nodes>
std::uint64_t run(long events) {
  table<Nodes> t;
  advice::xorshift input{0x2545f4914f6cdd1d};
  std::uint64_t next_id = 0;
  std::uint64_t digest = 0;
  for (long e = 0; e < events; ++e) {
    const std::uint64_t state = input.next();
    // Between 1000 and 3000 open: below 1000 only opens, above 3000 only closes, a coin between.
    if (t.size() < 1000 || (t.size() < 3000 && state % 2 == 0)) {
      t.open(next_id++);
    } else {
      digest += t.close((state >> 16) % t.size());
    }
    t.traffic(next_id - 1 - (state >> 40) % 64, state % 1500);
  }
  return digest + t.size();
}

} // namespace

int main(int argc, char** argv) {
  return advice::main(argc, argv, "pool", 100000, run<heap_nodes>, run<pool_nodes>);
}
