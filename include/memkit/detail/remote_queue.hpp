// SPDX-License-Identifier: BSL-1.0
// memkit/detail/remote_queue.hpp: the multi-producer, single-consumer list that carries blocks
// freed on other threads back to the heap that owns them, one pre-linked batch per atomic
// operation.
#pragma once

#include <atomic>
#include <cstddef>

#include "../config.hpp"
#include "free_list.hpp"
#include "poison.hpp"

namespace memkit {
inline namespace MEMKIT_ABI {
namespace detail {

/// \effects puts `p`, a free block of `bytes` bytes, in front of `c` and poisons it whole, its
/// link included (detail/poison.hpp): how a freeing thread builds the batch it will post.
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

} // namespace detail
} // namespace MEMKIT_ABI
} // namespace memkit
