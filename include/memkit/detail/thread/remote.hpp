// SPDX-License-Identifier: BSL-1.0
// memkit/detail/thread/remote.hpp: how a block freed on one thread goes back to the heap that owns
// it: batched per destination on the freeing thread, posted with one atomic operation a batch,
// taken all at once by the owner.
#pragma once

#include <atomic>
#include <cstddef>

#include "../../config.hpp"
#include "../base/align.hpp"
#include "../base/assert.hpp"
#include "../base/poison.hpp"
#include "../free_list.hpp"

namespace memkit {
inline namespace MEMKIT_ABI {
namespace detail {
namespace thread {

/// \effects puts `p`, a free block of `bytes` bytes, in front of `c` and poisons it whole, its
/// link included (detail/base/poison.hpp): how a freeing thread builds the batch it will post.
inline void prepend(free_chain& c, void* p, std::size_t bytes) noexcept {
  store_hidden(p, c.first, bytes);
  if (c.first == nullptr) {
    c.last = p;
  }
  c.first = p;
  ++c.count;
}

/// Where other threads post blocks for one owner: the message queue of snmalloc's "message passing
/// allocator" (Lietar et al., ISMM 2019) and the thread-free list of mimalloc ("Free List Sharding
/// in Action", Leijen et al., 2019), reduced to its two operations:
/// - `post(chain)`: any thread, one compare-and-swap per *batch*: the chain is linked in front of
///   whatever the list holds, so a freeing thread pays one contended cache-line transfer for up to
///   a batch of blocks instead of one per block;
/// - `take_all()`: the owner only, one exchange that empties the list; the owner then walks the
///   blocks privately.
///
/// There is no single-element pop, so there is no ABA problem: `post`'s CAS succeeds only if the
/// head is still the value `chain.last` was linked to, and whatever list that head starts is the
/// one the chain must precede, even if the same address left the list and came back in between.
///
/// Memory order: `post` publishes the chain's links (and the caller's writes to the blocks) with
/// release; `take_all` acquires them. `has_posts` is a relaxed peek that only decides whether to
/// pay for the exchange; a post it misses is seen by the next `take_all`.
class remote_queue {
public:
  remote_queue() noexcept = default;
  remote_queue(const remote_queue&) = delete;
  remote_queue& operator=(const remote_queue&) = delete;

  /// \effects links `c` in front of the list in one successful CAS.
  /// \requires `c.count != 0`; no other thread touches `c`'s blocks until the owner takes them.
  void post(const free_chain& c) noexcept {
    void* head = head_.load(std::memory_order_relaxed);
    do {
      store_hidden(c.last, head, sizeof(void*));
    } while (!head_.compare_exchange_weak(head, c.first, std::memory_order_release,
                                          std::memory_order_relaxed));
  }

  /// \returns every block posted so far, most recent batch first, linked through
  /// `free_list::next` and ending in null; the list is empty afterwards.
  /// \requires only the owner calls it (one consumer).
  void* take_all() noexcept { return head_.exchange(nullptr, std::memory_order_acquire); }

  /// \returns whether something may be waiting (relaxed: a hint for the owner's slow path).
  bool has_posts() const noexcept { return head_.load(std::memory_order_relaxed) != nullptr; }

private:
  std::atomic<void*> head_{nullptr};
};

/// The freeing thread's side: blocks freed here for other heaps, collected per destination and
/// posted to the destination's `remote_queue` (its member `remote`) as one batch, as snmalloc's
/// remote cache does (src/snmalloc/mem/remotecache.h). The whole policy of remote frees is here:
/// - a batch is posted when it reaches the resource's `batch_blocks`;
/// - destinations share a small direct-mapped table: a block for a destination whose slot holds
///   another's batch posts that batch first;
/// - the owner's slow path posts every batch (`flush`) before it looks for memory, and a thread's
///   exit does, so no block waits in a batch of a thread that stopped freeing.
/// Touched only by its heap's thread (or whoever holds an abandoned heap).
class remote_cache {
public:
  /// Destinations batched at once.
  static constexpr std::size_t slots = 8;

  /// \effects adds `p`, a free block of `bytes` bytes of heap `dest`, to the batch for `dest`,
  /// posting batches as the policy above says.
  template <class Heap>
  void add(Heap* dest, void* p, std::size_t bytes, std::size_t batch_blocks) noexcept {
    batch& b = slot_for(dest);
    if (b.dest != dest) {
      if (b.chain.count != 0) {
        post<Heap>(b);
      }
      b.dest = dest;
    }
    prepend(b.chain, p, bytes);
    ++pending_;
    if (b.chain.count >= batch_blocks) {
      post<Heap>(b);
    }
  }

  /// \effects posts every batch.
  template <class Heap>
  void flush() noexcept {
    if (pending_ == 0) {
      return;
    }
    for (batch& b : batches_) {
      if (b.chain.count != 0) {
        post<Heap>(b);
      }
    }
    MEMKIT_ASSERT_INTERNAL(pending_ == 0);
  }

  /// \returns the blocks waiting in batches.
  std::size_t pending() const noexcept { return pending_; }

  /// \returns whether `p` waits in the batch for `dest`'s slot, as its newest block (O(1)), or
  /// anywhere in any batch when `everywhere` (O(blocks waiting): MEMKIT_DEBUG 3's double-free
  /// test).
  bool holds(const void* dest, const void* p, bool everywhere) const noexcept {
    const batch& b = batches_[index(dest)];
    if (b.dest == dest && b.chain.first == p) {
      return true;
    }
    if (everywhere) {
      for (const batch& o : batches_) {
        for (const void* f = o.chain.first; f != nullptr; f = free_list::next(f)) {
          if (f == p) {
            return true;
          }
          if (f == o.chain.last) {
            break;
          }
        }
      }
    }
    return false;
  }

private:
  struct batch {
    void* dest = nullptr;
    free_chain chain;
  };

  // Heaps are cache-line aligned: the bits above the line offset tell them apart.
  static std::size_t index(const void* dest) noexcept {
    return (address(dest) / cache_line_size) % slots;
  }
  batch& slot_for(const void* dest) noexcept { return batches_[index(dest)]; }

  template <class Heap>
  void post(batch& b) noexcept {
    static_cast<Heap*>(b.dest)->remote.post(b.chain);
    pending_ -= b.chain.count;
    b.chain = free_chain{};
  }

  batch batches_[slots];
  std::size_t pending_ = 0;
};

} // namespace thread
} // namespace detail
} // namespace MEMKIT_ABI
} // namespace memkit
