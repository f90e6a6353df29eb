// SPDX-License-Identifier: BSL-1.0
// memkit/detail/tagged_stack.hpp: a lock-free LIFO of 32-bit block handles (a Treiber stack) whose
// head carries an ABA tag and whose links live outside the blocks.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "../config.hpp"
#include "base/assert.hpp"
#include "spin_wait.hpp"

namespace memkit {
inline namespace MEMKIT_ABI {
namespace detail {

/// Names a block of a concurrent strategy: its index plus one, so that 0 means "no block".
using block_handle = std::uint32_t;

/// "No block": the end of the stack, or an empty one.
inline constexpr block_handle no_block = 0;

/// The link of a block that is handed out: a free block's link is a handle or `no_block`, never
/// this, so one compare-and-swap from it both detects a double free and claims the block, even
/// when two frees race.
inline constexpr block_handle handed_out = 0xFFFFFFFFu;

/// The largest handle: every value but `handed_out`.
inline constexpr block_handle max_handle = handed_out - 1;

/// A stack of free blocks shared by threads: `pop` and `push` are lock-free (a thread retries its
/// compare-and-swap only because another thread's succeeded), after R. K. Treiber, "Systems
/// Programming: Coping with Parallelism", IBM RJ 5118 (1986).
///
/// The links do not live in the blocks. The owner keeps one `std::atomic<block_handle>` per block
/// outside the blocks and passes `links`, a callable mapping a handle to that atomic. The reason
/// is the stale popper: a thread loads the head `h`, is preempted, and another thread pops `h` and
/// hands it to a user who writes into it; the first thread then reads `h`'s link before its
/// compare-and-swap fails. With the link in the block that read races with the user's plain
/// writes: a data race, undefined behaviour ([intro.races]) and a ThreadSanitizer report, even
/// though the value read is thrown away. An atomic side link is memory no user touches, and the
/// stale read is an ordinary atomic load.
///
/// ABA: the head is one 64-bit word, {handle in the low 32 bits, tag in the high 32}; a pop
/// increments the tag. A popper that loaded {h, t} and read `next` from h's link succeeds only if
/// the head is still {h, t}. In between, a pop would have changed the tag; pushes alone never bring
/// h back on top (that takes popping h, or freeing it twice). So a successful compare-and-swap
/// means nothing was popped since the load, h's link is still `next`, and the pop is correct.
/// Pushes need no tag: a push writes the head it loaded into its block's link and succeeds only
/// if the head is unchanged, whatever happened in between. A wrong pop would need the tag to wrap,
/// 2^32 successful pops between one thread's load and its compare-and-swap, *and* h on top again
/// at that moment; at tens of nanoseconds a pop, that is a thread preempted for a minute or more
/// inside a dozen instructions while the others keep popping. A version tag beside an index in
/// one word is the single-word scheme of M. M. Michael, "ABA Prevention Using Single-Word
/// Instructions" (IBM Research Report RC 23089, 2004), which discusses the bound.
/// 64 bits keep the word lock-free on every target memkit builds for, without a double-width
/// compare-and-swap, which GCC routes through libatomic and reports as not lock-free.
///
/// Memory order (each choice beside its code): a push publishes with release; a pop loads and
/// swaps with acquire, so what a pusher wrote before pushing (its link, and the bytes of the block
/// it freed) is visible to the thread that pops the block. Compare-and-swap operations continue
/// the release sequence of every push before them (the standard, [intro.races]), so a pop that
/// reads a head written by another pop still synchronizes with the push that put the handle there.
///
/// Contention: a thread whose compare-and-swap failed backs off (`detail::retry_with_backoff`)
/// before it reloads the head, so that the thread that won can push and pop again while the head's
/// cache line stays in its core. The tries are the same, only spaced; the ABA argument above does
/// not depend on timing.
class tagged_stack {
  static_assert(std::atomic<std::uint64_t>::is_always_lock_free,
                "tagged_stack needs a lock-free 64-bit atomic");

public:
  tagged_stack() noexcept = default;
  tagged_stack(const tagged_stack&) = delete;
  tagged_stack& operator=(const tagged_stack&) = delete;

  /// \returns the top block, removed from the stack, or `no_block` if the stack is empty.
  template <class Links>
  MEMKIT_ALWAYS_INLINE block_handle pop(Links&& links) noexcept {
    // Acquire: the link read next must see what the pusher of the top block stored.
    std::uint64_t old = head_.load(std::memory_order_acquire);
    block_handle top = no_block;
    retry_with_backoff<max_backoff>([&] {
      top = static_cast<block_handle>(old);
      if (top == no_block) {
        return true;
      }
      // Relaxed: ordered by the acquire above. A stale value (the block was popped meanwhile) is
      // harmless: the tag has changed and the compare-and-swap below fails.
      const block_handle next = links(top).load(std::memory_order_relaxed);
      const std::uint64_t desired = pack(next, tag(old) + 1);
      // Acquire on failure too: the retry reads the link of the head loaded here.
      if (head_.compare_exchange_weak(old, desired, std::memory_order_acquire,
                                      std::memory_order_acquire)) {
        MEMKIT_ASSERT_INTERNAL(next != handed_out);
        return true;
      }
      return false;
    });
    return top;
  }

  /// \effects pushes the chain `first` ... `last` (linked through `links` already, `last`'s link
  /// is overwritten), so that `first` is the new top.
  template <class Links>
  MEMKIT_ALWAYS_INLINE void push(block_handle first, block_handle last, Links&& links) noexcept {
    MEMKIT_ASSERT_INTERNAL(first != no_block && last != no_block);
    // Relaxed: the value is only copied into a link; nothing is read through it.
    std::uint64_t old = head_.load(std::memory_order_relaxed);
    std::atomic<block_handle>& link = links(last);
    retry_with_backoff<max_backoff>([&] {
      link.store(static_cast<block_handle>(old), std::memory_order_relaxed);
      // Release: publishes the link stored above and the caller's writes before the push.
      return head_.compare_exchange_weak(old, pack(first, tag(old)), std::memory_order_release,
                                         std::memory_order_relaxed);
    });
  }

  /// \returns the top block without removing it. Only meaningful at quiescence (no push or pop
  /// running): a walk from it, for counting and invariants.
  block_handle top() const noexcept {
    return static_cast<block_handle>(head_.load(std::memory_order_acquire));
  }

  /// \effects empties the stack. \requires quiescence.
  void clear() noexcept { head_.store(pack(no_block, 0), std::memory_order_relaxed); }

private:
  // The longest backoff, in pauses, after a failed compare-and-swap: past 64 a longer wait bought
  // little (`memkit-bench --workloads mt-local-fixed-2t --variants memkit-concurrent-pool`;
  // docs/threads.md, "concurrent_pool").
  static constexpr unsigned max_backoff = 64;

  static constexpr std::uint64_t pack(block_handle h, std::uint32_t tag) noexcept {
    return std::uint64_t{tag} << 32 | h;
  }
  static constexpr std::uint32_t tag(std::uint64_t word) noexcept {
    return static_cast<std::uint32_t>(word >> 32);
  }

  std::atomic<std::uint64_t> head_{0};
};

} // namespace detail
} // namespace MEMKIT_ABI
} // namespace memkit
