// SPDX-License-Identifier: BSL-1.0
// memkit/arena.hpp: bump allocation over a caller buffer, then a chain of growing upstream blocks.
#pragma once

#include <algorithm>
#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>

#include "config.hpp"
#include "detail/base/align.hpp"
#include "detail/base/assert.hpp"
#include "detail/base/poison.hpp"
#include "detail/bump.hpp"
#include "detail/carver.hpp"
#include "error.hpp"
#include "resource.hpp"
#include "stats.hpp"
#include "upstream.hpp"

namespace memkit {
inline namespace MEMKIT_ABI {

/// How an arena sizes the blocks it takes from its upstream. Sizes are what the upstream is asked
/// for, header included. Growth doubles from `first_block_size` up to `max_block_size`. Zero is an
/// error in either field; other values too small to hold a header and a block are raised to the
/// smallest that does (docs/concepts.md, "Constructor arguments").
struct arena_options {
  /// One page: a short-lived arena costs a single page, and malloc serves a page from its heap
  /// without an mmap (glibc's default mmap threshold is 128 KiB).
  std::size_t first_block_size = page_size;
  /// 1 MiB caps the unused tail of the last block, while one upstream call per MiB is already
  /// negligible next to the bump allocations that fill it.
  std::size_t max_block_size = std::size_t{1} << 20;
};

namespace detail {

/// Header at the start of every upstream block of an arena; the arena's blocks follow it, so block
/// memory starts aligned to `alignof(arena_block)`.
struct alignas(default_alignment) arena_block {
  arena_block* prev;       ///< next older block of the in-use chain, or next block of the cache
  std::size_t size;        ///< bytes obtained from the upstream, this header included
  std::size_t used_before; ///< the arena's `used()` when this block became the current one
};

} // namespace detail

/// A saved arena position (docs/concepts.md, "Marker"), obtained from `arena::marker()`.
/// A default-constructed marker belongs to no arena.
class arena_marker : private detail::usage_mark {
public:
  arena_marker() noexcept = default;

private:
  template <class>
  friend class arena;

  arena_marker(const void* owner, const detail::arena_block* block, char* cur, std::size_t epoch,
               const detail::usage_mark& usage) noexcept
      : detail::usage_mark(usage), owner_(owner), block_(block), cur_(cur), epoch_(epoch) {}

  const void* owner_ = nullptr;
  const detail::arena_block* block_ = nullptr; ///< null: the caller buffer
  char* cur_ = nullptr;
  std::size_t epoch_ = 0;
};

/// Bump allocation (docs/concepts.md): blocks are carved front to back from a caller buffer, then
/// from upstream blocks of growing size. Individual blocks are not freed (only the most recent one
/// is reclaimed); `reset()`, `rollback()` and `release()` free them wholesale.
///
/// Upstream blocks are kept on `reset()` and `rollback()` and reused first-fit, in the order they
/// were first used, so a steady build-use-reset cycle makes no upstream calls after its first
/// round. They go back to the upstream only on `release()` or destruction.
template <class Upstream = malloc_resource>
class arena : private detail::stats_recorder<arena<Upstream>> {
  static_assert(is_resource_v<Upstream>,
                "memkit::arena<Upstream>: Upstream must implement the resource interface "
                "(docs/concepts.md)");

  using block = detail::arena_block;

public:
  /// \effects an empty arena drawing blocks from `upstream`; allocates nothing yet.
  /// `options` are raised so that a block holds at least its header and one aligned block, and
  /// `max_block_size >= first_block_size`.
  /// \throws bad_size if an option is zero.
  explicit arena(Upstream upstream = {}, arena_options options = {})
      : arena(nullptr, 0, std::move(upstream), options) {}

  /// \effects an arena serving from `[buffer, buffer + size)` first, then from upstream blocks.
  /// The buffer is the caller's: the arena never frees it.
  /// \throws bad_size if an option is zero.
  /// \requires the buffer stays valid and unused by others while the arena lives.
  arena(void* buffer, std::size_t size, Upstream upstream = {}, arena_options options = {})
      : cur_(static_cast<char*>(buffer)), end_(cur_ + size), begin_(cur_), buffer_(cur_),
        buffer_size_(size),
        first_block_size_(std::max(checked(options).first_block_size, min_block_size)),
        max_block_size_(std::max(options.max_block_size, first_block_size_)),
        next_block_size_(first_block_size_), upstream_(std::move(upstream)) {
    detail::poison(buffer_, buffer_size_);
  }

  arena(const arena&) = delete;
  arena& operator=(const arena&) = delete;

  /// \effects `release()`; the caller buffer goes back unpoisoned.
  ~arena() {
    release();
    detail::unpoison_kept(buffer_, buffer_size_);
  }

  const char* name() const noexcept { return "memkit::arena"; }

  /// \returns the largest request a buffer or an upstream block can hold.
  std::size_t max_size() const noexcept {
    const std::size_t up = upstream_.max_size();
    return std::max(buffer_size_, up > sizeof(block) ? up - sizeof(block) : 0);
  }

  /// Any power of two: a request that does not fit the current block gets one with room for its
  /// worst-case padding, which is below the alignment.
  std::size_t max_alignment() const noexcept { return unbounded_alignment; }

  /// \returns a block of `bytes` (1 if 0) aligned to `alignment`.
  /// \throws bad_alignment, bad_size or out_of_memory (docs/concepts.md, "Errors").
  void* allocate(std::size_t bytes, std::size_t alignment = default_alignment) {
    return detail::allocate_or_throw(*this, bytes, alignment);
  }

  /// \returns a block of `bytes` (1 if 0) aligned to `alignment`, or null if the alignment is not a
  /// power of two, the size is impossible, or the upstream has no block for it.
  void* try_allocate(std::size_t bytes, std::size_t alignment = default_alignment) noexcept {
    if (MEMKIT_UNLIKELY(!detail::is_valid_alignment(alignment))) {
      this->on_failure();
      return nullptr;
    }
    const std::size_t n = bytes == 0 ? 1 : bytes;
    if (void* p = detail::bump(cur_, end_, n, alignment); MEMKIT_LIKELY(p != nullptr)) {
      detail::hand_out(p, n);
      this->on_allocate(bytes);
      return p;
    }
    return this->record(allocate_slow(n, alignment), bytes);
  }

  /// \effects reclaims the block if it is the most recent one in the current buffer or block
  /// (a cheap undo of the last allocation); otherwise does nothing, the memory waits for `reset()`,
  /// `rollback()` or `release()`. Nothing is checked: use `owns(p)` for that.
  void deallocate(void* p, std::size_t bytes,
                  std::size_t /*alignment*/ = default_alignment) noexcept {
    if (p != nullptr) {
      this->on_deallocate(bytes);
    }
    char* const c = static_cast<char*>(p);
    const std::size_t n = bytes == 0 ? 1 : bytes;
    if (detail::in_range(c, begin_, static_cast<std::size_t>(cur_ - begin_)) &&
        static_cast<std::size_t>(cur_ - c) == n) {
      cur_ = c;
      detail::poison(c, n);
    }
  }

  /// \returns whether `p` points into the handed-out part of the buffer or of an upstream block
  /// (blocks and their padding, up to the top; not what was reset, rolled back or reclaimed).
  /// Exact; O(upstream blocks in use), as it walks them.
  bool owns(const void* p) const noexcept {
    if (detail::in_range(p, begin_, static_cast<std::size_t>(cur_ - begin_))) {
      return true;
    }
    if (current_ == nullptr) {
      return false;
    }
    // An older block was used up to where its successor's count starts.
    const block* newer = current_;
    for (const block* b = current_->prev; b != nullptr; newer = b, b = b->prev) {
      if (detail::in_range(p, data(b), newer->used_before - b->used_before)) {
        return true;
      }
    }
    return detail::in_range(p, buffer_, newer->used_before);
  }

  /// \returns the current position, to pass to `rollback()`. O(1).
  arena_marker marker() const noexcept {
    return arena_marker(this, current_, cur_, epoch_, this->usage());
  }

  /// \effects frees every block allocated after `m` was taken. Upstream blocks obtained since are
  /// kept for reuse (like `reset()`), so a mark-work-rollback loop settles into no upstream calls.
  /// O(1) plus the upstream blocks moved to the cache.
  /// A marker from another arena, from before the last `reset()` or `release()`, or ahead of the
  /// current position is reported as `misuse::bad_marker` and ignored.
  void rollback(const arena_marker& m) noexcept {
    if (m.owner_ != this || m.epoch_ != epoch_) {
      report_misuse(misuse::bad_marker, name(), &m, 0, 0);
      return;
    }
    if (m.block_ == current_) {
      if (!detail::in_range(m.cur_, begin_, static_cast<std::size_t>(cur_ - begin_) + 1)) {
        report_misuse(misuse::bad_marker, name(), &m, 0, 0);
        return;
      }
      detail::poison(m.cur_, static_cast<std::size_t>(cur_ - m.cur_));
      this->on_rollback(m);
      cur_ = m.cur_;
      return;
    }
    const block* b = current_;
    while (b != nullptr && b != m.block_) {
      b = b->prev;
    }
    char* const lo = b != nullptr ? data(b) : buffer_;
    char* const hi = b != nullptr ? end(b) : buffer_ + buffer_size_;
    // Not found (a block rolled back or reset since) or not inside its block: from the future.
    if (b != m.block_ || !detail::in_range(m.cur_, lo, static_cast<std::size_t>(hi - lo) + 1)) {
      report_misuse(misuse::bad_marker, name(), &m, 0, 0);
      return;
    }
    this->on_rollback(m);
    cache_blocks_until(b);
    detail::poison(m.cur_, static_cast<std::size_t>(hi - m.cur_));
    begin_ = lo;
    cur_ = m.cur_;
    end_ = hi;
    MEMKIT_ASSERT_EXPENSIVE(chain_well_formed());
  }

  /// \effects frees every block and invalidates every marker; keeps the upstream blocks for reuse,
  /// so a steady request cycle makes no upstream calls after its first round. O(upstream blocks).
  void reset() noexcept {
    this->on_reset();
    cache_blocks_until(nullptr);
    restart();
    MEMKIT_ASSERT_EXPENSIVE(chain_well_formed());
  }

  /// \effects frees every block, invalidates every marker and returns every upstream block with the
  /// size and alignment it was obtained with. The caller buffer is kept (it is the caller's).
  void release() noexcept {
    this->on_reset();
    return_blocks(current_);
    return_blocks(cached_);
    current_ = nullptr;
    cached_ = nullptr;
    next_block_size_ = first_block_size_;
    restart();
  }

  /// \returns bytes handed out since the last `reset()`, alignment padding included.
  std::size_t used() const noexcept {
    return (current_ != nullptr ? current_->used_before : 0) +
           static_cast<std::size_t>(cur_ - begin_);
  }

  /// \returns bytes left in the current buffer or block before the arena turns to its upstream.
  std::size_t remaining() const noexcept { return static_cast<std::size_t>(end_ - cur_); }

  const Upstream& upstream() const noexcept { return upstream_; }

  /// \returns the counters of docs/statistics.md (all zero unless MEMKIT_STATISTICS is 1).
  using detail::stats_recorder<arena<Upstream>>::stats;

private:
  /// Room for the header and one default-aligned block: smaller blocks could not serve anything.
  static constexpr std::size_t min_block_size = sizeof(block) + default_alignment;

  static const arena_options& checked(const arena_options& o) {
    if (MEMKIT_UNLIKELY(o.first_block_size == 0 || o.max_block_size == 0)) {
      detail::throw_bad_geometry("memkit::arena", 0, default_alignment);
    }
    return o;
  }

  /// \returns whether the chain of blocks in use, newest first, counts down `used()` to the caller
  /// buffer and ends, and whether the cache ends, each within `limit` steps. O(upstream blocks);
  /// for `MEMKIT_ASSERT_EXPENSIVE`.
  bool chain_well_formed(std::size_t limit = static_cast<std::size_t>(-1) / 2) const noexcept {
    std::size_t n = 0;
    std::size_t above = used();
    for (const block* b = current_; b != nullptr; b = b->prev) {
      // A block holds its header and at least one byte; it may be smaller than min_block_size when
      // a bounded upstream refused the next growth size and gave just what the request needed.
      if (++n > limit || b->used_before > above || b->size <= sizeof(block)) {
        return false;
      }
      above = b->used_before;
    }
    for (const block* b = cached_; b != nullptr; b = b->prev) {
      if (++n > limit) {
        return false;
      }
    }
    return current_ != nullptr || begin_ == buffer_;
  }

  static char* data(const block* b) noexcept {
    return reinterpret_cast<char*>(const_cast<block*>(b)) + sizeof(block);
  }
  static char* end(const block* b) noexcept {
    return reinterpret_cast<char*>(const_cast<block*>(b)) + b->size;
  }

  /// Moves a cached block or a new upstream block in front of the chain and carves from it.
  MEMKIT_NOINLINE void* allocate_slow(std::size_t bytes, std::size_t alignment) noexcept {
    // Block memory starts aligned to alignof(block); a stricter alignment may need that much more.
    const std::size_t slack = alignment > alignof(block) ? alignment - alignof(block) : 0;
    constexpr std::size_t limit = unbounded_size - sizeof(block);
    if (bytes > limit || slack > limit - bytes) {
      return nullptr;
    }
    const std::size_t needed = sizeof(block) + bytes + slack;
    block* b = take_cached(needed);
    if (b == nullptr) {
      b = obtain_block(needed);
      if (b == nullptr) {
        return nullptr;
      }
    }
    b->used_before = used();
    b->prev = current_;
    current_ = b;
    begin_ = data(b);
    cur_ = begin_;
    end_ = end(b);
    MEMKIT_ASSERT_EXPENSIVE(chain_well_formed());
    void* const p = detail::bump(cur_, end_, bytes, alignment);
    MEMKIT_ASSERT_INTERNAL(p != nullptr && begin_ <= cur_ && cur_ <= end_);
    detail::hand_out(p, bytes);
    return p;
  }

  /// \returns the first cached block of at least `needed` bytes, unlinked, or null.
  block* take_cached(std::size_t needed) noexcept {
    for (block** link = &cached_; *link != nullptr; link = &(*link)->prev) {
      if ((*link)->size >= needed) {
        block* b = *link;
        *link = b->prev;
        return b;
      }
    }
    return nullptr;
  }

  /// \returns a new upstream block of the next geometric size, or of `needed` bytes when that is
  /// larger, or when the upstream refused the geometric size (a smaller request may still succeed).
  block* obtain_block(std::size_t needed) noexcept {
    if (needed <= next_block_size_) {
      if (void* p = upstream_.try_allocate(next_block_size_, alignof(block)); p != nullptr) {
        this->on_upstream_allocate(next_block_size_);
        auto* b = ::new (p) block{nullptr, next_block_size_, 0};
        detail::poison(data(b), next_block_size_ - sizeof(block));
        next_block_size_ =
            next_block_size_ > max_block_size_ / 2 ? max_block_size_ : next_block_size_ * 2;
        return b;
      }
      if (needed == next_block_size_) {
        return nullptr;
      }
    }
    void* p = upstream_.try_allocate(needed, alignof(block));
    if (p == nullptr) {
      return nullptr;
    }
    this->on_upstream_allocate(needed);
    auto* b = ::new (p) block{nullptr, needed, 0};
    detail::poison(data(b), needed - sizeof(block));
    return b;
  }

  /// Moves the in-use blocks newer than `last` to the front of the cache, oldest first, so they are
  /// reused in the order they were first used.
  void cache_blocks_until(const block* last) noexcept {
    while (current_ != last) {
      block* b = current_;
      current_ = b->prev;
      b->prev = cached_;
      cached_ = b;
      detail::poison(data(b), b->size - sizeof(block));
    }
  }

  void return_blocks(block* b) noexcept {
    while (b != nullptr) {
      block* const prev = b->prev;
      detail::unpoison_kept(data(b), b->size - sizeof(block));
      this->on_upstream_deallocate(b->size);
      upstream_.deallocate(b, b->size, alignof(block));
      b = prev;
    }
  }

  /// Back to the start of the caller buffer, with every outstanding marker invalid.
  void restart() noexcept {
    detail::poison(buffer_, buffer_size_);
    begin_ = buffer_;
    cur_ = buffer_;
    end_ = buffer_ + buffer_size_;
    ++epoch_;
  }

  char* cur_; ///< the bump range of the current buffer or block: hot members first
  char* end_;
  char* begin_;
  block* current_ = nullptr; ///< newest in-use upstream block, null while in the caller buffer
  block* cached_ = nullptr;  ///< upstream blocks kept for reuse
  char* buffer_;
  std::size_t buffer_size_;
  std::size_t first_block_size_;
  std::size_t max_block_size_;
  std::size_t next_block_size_;
  std::size_t epoch_ = 0; ///< bumped by reset() and release(): older markers are invalid
  Upstream upstream_;
};

} // namespace MEMKIT_ABI
} // namespace memkit
