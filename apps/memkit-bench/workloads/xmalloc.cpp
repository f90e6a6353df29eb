// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/workloads/xmalloc.cpp: dedicated producer and consumer threads, written here
// from the published description of xmalloc-test (Lever and Boreham, "malloc() Performance in a
// Multithreaded Linux Environment", USENIX 2000; the version the allocator comparisons run comes
// from the SuperMalloc repository): threads that only allocate hand batches of blocks of various
// sizes through a shared queue to threads that only free them. No consumer ever allocates, so a
// thread cache's freed blocks can only come back to the producers through the allocator's
// remote-free path. docs/workloads.md#xmalloc.

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "memkit_bench/random.hpp"
#include "workloads/stamps.hpp"
#include "workloads/threaded.hpp"
#include "workloads/workloads.hpp"

namespace memkit::bench {
namespace {

/// Blocks travel in batches, as in xmalloc-test, so the queue's lock is not what is measured.
constexpr std::size_t batch_size = 64;
/// Batches in flight at most (a full queue stops the producers): the live memory is bounded, so
/// peak RSS compares allocators rather than how far producers ran ahead. The original's queue is
/// unbounded, which makes its memory figure depend on speed.
constexpr std::size_t batches_in_flight = 32;

struct batch {
  std::array<stamped_block, batch_size> blocks;
};

/// A fixed ring of batch pointers behind a mutex: its storage is allocated before the threads
/// start, so the queue itself makes no allocation the variants would be charged for.
class batch_ring {
public:
  explicit batch_ring(std::size_t capacity) : slots_(capacity) {}
  bool push(batch* b) {
    std::lock_guard<std::mutex> lock(m_);
    if (count_ == slots_.size()) {
      return false;
    }
    slots_[(head_ + count_++) % slots_.size()] = b;
    return true;
  }
  batch* pop() {
    std::lock_guard<std::mutex> lock(m_);
    if (count_ == 0) {
      return nullptr;
    }
    batch* b = slots_[head_];
    head_ = (head_ + 1) % slots_.size();
    --count_;
    return b;
  }

private:
  std::mutex m_;
  std::vector<batch*> slots_;
  std::size_t head_ = 0;
  std::size_t count_ = 0;
};

batch* wait_pop(batch_ring& ring) {
  batch* b;
  while ((b = ring.pop()) == nullptr) {
    std::this_thread::yield();
  }
  return b;
}

void wait_push(batch_ring& ring, batch* b) {
  while (!ring.push(b)) {
    std::this_thread::yield();
  }
}

/// threads / 2 producers each allocate `batches` batches of blocks of 16-512 bytes, stamp every
/// block and queue the batch; threads / 2 consumers take whichever batch comes next, add each
/// block's mixed stamp to their subtotal and free it. Which consumer frees which block varies
/// from run to run; the sum of the stamps does not.
auto producers_consumers(unsigned threads, std::size_t batches) {
  return [threads, batches](auto& policy, std::string&) {
    const unsigned producers = threads / 2;
    std::vector<batch> storage(batches_in_flight);
    batch_ring empty(batches_in_flight);
    batch_ring full(batches_in_flight);
    for (batch& b : storage) {
      empty.push(&b);
    }
    std::atomic<std::size_t> claimed{0};
    const std::size_t total = producers * batches;
    stamp_sum freed;
    on_threads(threads, [&](unsigned t) -> std::uint64_t {
      if (t < producers) {
        rng g(0x8a110c + t);
        for (std::size_t i = 0; i < batches; ++i) {
          batch* b = wait_pop(empty);
          for (std::size_t k = 0; k < batch_size; ++k) {
            stamped_block& x = b->blocks[k];
            x.size = 8 * static_cast<std::size_t>(g.between(2, 64));
            x.p = policy.allocate(x.size, stamped_alignment);
            write_stamp(x.p, (std::uint64_t{t} << 40) + i * batch_size + k);
          }
          wait_push(full, b);
        }
        return 0;
      }
      std::uint64_t subtotal = 0;
      while (claimed.fetch_add(1, std::memory_order_relaxed) < total) {
        batch* b = wait_pop(full);
        for (stamped_block& x : b->blocks) {
          subtotal += mix_stamp(read_stamp(x.p));
          policy.deallocate(x.p, x.size, stamped_alignment);
        }
        wait_push(empty, b);
      }
      freed.add(subtotal);
      return 0;
    });
    return freed.value();
  };
}

} // namespace

void add_xmalloc(registry& r, const params& p) {
  // As many blocks per producer as mt-producer-consumer sends per pair.
  const std::size_t batches = (p.scaled(200'000) + batch_size - 1) / batch_size;
  for (const unsigned n : {2u, 4u}) {
    const unsigned pairs = n / 2;
    const workload& w = r.add_workload(
        {threaded_name("xmalloc", n), "blocks", static_cast<double>(pairs * batches * batch_size),
         10,
         std::to_string(pairs) + " thread(s) that only allocate and " + std::to_string(pairs) +
             " that only free: " + std::to_string(batches * batch_size) +
             " blocks of 16-512 bytes per producer, in batches of " + std::to_string(batch_size) +
             " through one queue (at most " + std::to_string(batches_in_flight) +
             " batches in flight); any consumer frees any producer's blocks"});
    add_general_purpose(r, w, {}, producers_consumers(n, batches));
  }
}

} // namespace memkit::bench
