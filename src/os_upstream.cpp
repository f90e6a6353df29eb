// SPDX-License-Identifier: BSL-1.0
// src/os_upstream.cpp: the global replacement's memory from the OS (os_upstream.hpp).
#include "os_upstream.hpp"

#include <algorithm>

#include "memkit/detail/base/align.hpp"
#include "memkit/detail/base/assert.hpp"
#include "memkit/detail/base/os.hpp"
#include "memkit/detail/thread/chunk.hpp"
#include "memkit/detail/thread/decay.hpp"

namespace memkit::replacement {

// The engine's depot gives unused chunks back only through an upstream that decommits.
static_assert(detail::thread::decommits<os_upstream>::value);

namespace {

bool is_chunk_request(std::size_t bytes, std::size_t alignment) noexcept {
  return bytes == detail::thread::chunk_size && alignment == detail::thread::chunk_size;
}

std::size_t region_alignment(std::size_t alignment) noexcept {
  return alignment < page_size ? page_size : alignment;
}

} // namespace

std::size_t os_upstream::region_size(std::size_t bytes) noexcept {
  const std::size_t n = detail::round_up(bytes == 0 ? 1 : bytes, page_size);
  if (n == 0) {
    return 0;
  }
  // Eight steps per power of two: the step is the largest power of two up to n / 8 (a page at
  // least), so rounding adds at most an eighth.
  std::size_t step = page_size;
  while (step <= (n >> 4)) {
    step <<= 1;
  }
  return detail::round_up(n, step);
}

os_upstream::os_upstream([[maybe_unused]] os_upstream&& other) noexcept
    : delay_ms_(other.delay_ms_) {
  MEMKIT_ASSERT_INTERNAL(other.arena_ == nullptr && !other.heap_tried_ &&
                         other.reserved_ == nullptr && other.mapped_ == 0);
}

os_upstream::~os_upstream() {
  if (heap_ != nullptr) {
    detail::os::unmap(heap_, region_heap_size);
  }
  if (arena_ != nullptr) {
    detail::os::unmap(arena_, arena_size);
  }
}

char* os_upstream::reserve_arena() noexcept {
  if (arena_ == nullptr) {
    arena_ =
        static_cast<char*>(detail::os::map_aligned(arena_size, detail::thread::chunk_size, true));
    arena_next_ = arena_;
  }
  return arena_;
}

void* os_upstream::try_allocate(std::size_t bytes, std::size_t alignment) noexcept {
  if (!servable(bytes, alignment)) {
    return nullptr;
  }
  purge(false);
  if (is_chunk_request(bytes, alignment)) {
    if (void* c = arena_free_; c != nullptr) {
      if (!recommit(static_cast<char*>(c) + page_size, bytes - page_size)) {
        return nullptr;
      }
      arena_free_ = *static_cast<void**>(c);
      *static_cast<void**>(c) = nullptr; // fresh memory reads as zeros
      return c;
    }
    if (reserved_ == reserved_end_) {
      void* r = nullptr;
      if (arena_ != nullptr && arena_next_ != arena_ + arena_size &&
          detail::os::commit(arena_next_, reservation_size)) {
        r = arena_next_;
        arena_next_ += reservation_size;
        count_mapped(reservation_size);
      } else if ((r = map(reservation_size, detail::thread::chunk_size)) == nullptr) {
        return map(bytes, alignment);
      }
      reserved_ = static_cast<char*>(r);
      reserved_end_ = reserved_ + reservation_size;
    }
    void* c = reserved_;
    reserved_ += detail::thread::chunk_size;
    return c;
  }
  const std::size_t n = region_size(bytes);
  if (n == 0) {
    return nullptr;
  }
  // A large block's region (the engine asks for a chunk's alignment, a block aligned to more
  // asks for its own) comes from the region heap; the engine's own structures are mapped.
  void* p = alignment == detail::thread::chunk_size ? carve_region(n) : nullptr;
  if (p == nullptr && (p = map(n, region_alignment(alignment))) == nullptr) {
    return nullptr;
  }
  regions_in_use_ += n;
  regions_peak_ = regions_in_use_ > regions_peak_ ? regions_in_use_ : regions_peak_;
  return p;
}

void os_upstream::deallocate(void* p, std::size_t bytes, std::size_t alignment) noexcept {
  if (p == nullptr) {
    return;
  }
  if (is_chunk_request(bytes, alignment)) {
    if (in_arena(p)) {
      detail::os::decommit(p, page_size);
      decommit(static_cast<char*>(p) + page_size, bytes - page_size);
      *static_cast<void**>(p) = arena_free_;
      arena_free_ = p;
    } else {
      unmap(p, bytes);
    }
    return;
  }
  const std::size_t n = region_size(bytes);
  regions_in_use_ -= n;
  if (in_region_heap(p)) {
    free_region(static_cast<char*>(p), heap_size(n));
  } else {
    unmap(p, n);
  }
}

void os_upstream::decommit(void* p, std::size_t bytes) noexcept {
  if (!detail::os::release(p, bytes)) {
    detail::os::decommit(p, bytes); // the pages at least; the range stays usable, recommit or not
  }
}

bool os_upstream::recommit(void* p, std::size_t bytes) noexcept {
  return detail::os::commit(p, bytes);
}

std::size_t os_upstream::purge(bool everything) noexcept {
  if (spans_committed_ == 0) {
    return 0;
  }
  const std::uint64_t now = detail::os::now_ms();
  if (!everything && now < purge_at_) {
    return 0;
  }
  std::size_t given = 0;
  purge_at_ = static_cast<std::uint64_t>(-1);
  for (std::size_t i = 0; i != span_count_; ++i) {
    span& s = spans_[i];
    if (!s.committed) {
      continue;
    }
    if (everything || now - s.freed_at >= delay_ms_) {
      given += s.bytes;
      decommit_span(s);
    } else if (s.freed_at + delay_ms_ < purge_at_) {
      purge_at_ = s.freed_at + delay_ms_;
    }
  }
  shrink_heap();
  return given;
}

void* os_upstream::carve_region(std::size_t bytes) noexcept {
  if (!heap_tried_) {
    heap_tried_ = true;
    heap_ = static_cast<char*>(
        detail::os::map_aligned(region_heap_size, detail::thread::chunk_size, true));
    heap_top_ = heap_;
  }
  if (heap_ == nullptr || heap_regions_ + 1 == max_spans) {
    return nullptr;
  }
  bytes = heap_size(bytes);
  // The smallest span that holds the request, committed ones first (their pages are resident),
  // the one at the top after the others of its kind (so the heap is laid out as it would grow
  // from empty, and can shrink from the top), the most recently used of equals (the likeliest to
  // be still in the caches).
  const auto better = [this](const span& a, const span& b) {
    if (a.committed != b.committed) {
      return a.committed;
    }
    const bool a_top = a.base + a.bytes == heap_top_;
    if (a_top != (b.base + b.bytes == heap_top_)) {
      return !a_top;
    }
    return a.bytes != b.bytes ? a.bytes < b.bytes : a.freed_at > b.freed_at;
  };
  std::size_t best = span_count_;
  for (std::size_t i = 0; i != span_count_; ++i) {
    if (spans_[i].bytes >= bytes && (best == span_count_ || better(spans_[i], spans_[best]))) {
      best = i;
    }
  }
  void* const p = best != span_count_ ? carve_span(best, bytes) : grow_heap(bytes);
  if (p != nullptr) {
    ++heap_regions_;
  }
  return p;
}

void* os_upstream::carve_span(std::size_t i, std::size_t bytes) noexcept {
  span& s = spans_[i];
  char* const p = s.base;
  if (s.committed) {
    spans_committed_ -= bytes;
  } else if (!commit_range(p, bytes)) {
    return nullptr;
  }
  if (s.bytes == bytes) {
    erase_span(i);
  } else {
    s.base += bytes;
    s.bytes -= bytes;
  }
  return p;
}

void* os_upstream::grow_heap(std::size_t bytes) noexcept {
  // A free span that ends at the top (smaller than the request: none holds it) becomes the
  // request's first part, and only the rest is new.
  span* const last =
      span_count_ != 0 && spans_[span_count_ - 1].base + spans_[span_count_ - 1].bytes == heap_top_
          ? &spans_[span_count_ - 1]
          : nullptr;
  char* const p = last != nullptr ? last->base : heap_top_;
  if (bytes > static_cast<std::size_t>(heap_ + region_heap_size - p)) {
    return nullptr;
  }
  char* const from = last != nullptr && last->committed ? heap_top_ : p;
  if (!commit_range(from, static_cast<std::size_t>(p + bytes - from))) {
    return nullptr;
  }
  if (last != nullptr) {
    if (last->committed) {
      spans_committed_ -= last->bytes;
    }
    erase_span(span_count_ - 1);
  }
  heap_top_ = p + bytes;
  return p;
}

bool os_upstream::grow_region(void* p, std::size_t bytes, std::size_t new_bytes) noexcept {
  const std::size_t n = region_size(bytes);
  const std::size_t m = region_size(new_bytes);
  if (!in_region_heap(p) || m <= n) {
    return m != 0 && m <= n;
  }
  char* const end = static_cast<char*>(p) + heap_size(n);
  const std::size_t more = heap_size(m) - heap_size(n);
  if (more != 0) {
    // The free span that starts at the region's end, if it holds `more`; else the heap's top,
    // joined to that span if the span ends there (grow_heap carves from that span's start).
    const std::size_t i = span_from(end);
    const bool next_free = i != span_count_ && spans_[i].base == end;
    const bool at_top =
        (next_free && i + 1 == span_count_ && spans_[i].base + spans_[i].bytes == heap_top_) ||
        end == heap_top_;
    if (next_free && spans_[i].bytes >= more) {
      if (carve_span(i, more) == nullptr) {
        return false;
      }
    } else if (!at_top || grow_heap(more) == nullptr) {
      return false;
    }
  }
  regions_in_use_ += m - n;
  regions_peak_ = regions_in_use_ > regions_peak_ ? regions_in_use_ : regions_peak_;
  return true;
}

std::size_t os_upstream::span_from(const char* p) const noexcept {
  std::size_t i = 0;
  for (std::size_t n = span_count_; n != 0;) {
    const std::size_t half = n / 2;
    if (spans_[i + half].base < p) {
      i += half + 1;
      n -= half + 1;
    } else {
      n = half;
    }
  }
  return i;
}

void os_upstream::free_region(char* p, std::size_t bytes) noexcept {
  --heap_regions_;
  span joined{p, bytes, detail::os::now_ms(), true};
  std::size_t committed = bytes; // bytes of `joined` committed so far
  std::size_t i = span_from(p);  // the first span above p
  // Joined to its free neighbours and committed whole: a decommitted neighbour is recommitted (its
  // pages come only when touched), or, if the OS refuses, the whole span is decommitted.
  const auto join = [&](std::size_t k) {
    span& s = spans_[k];
    if (s.committed || (joined.committed && commit_range(s.base, s.bytes))) {
      committed += s.bytes;
      spans_committed_ += s.committed ? 0 : s.bytes;
    } else {
      joined.committed = false;
    }
    joined.base = s.base < joined.base ? s.base : joined.base;
    joined.bytes += s.bytes;
    erase_span(k);
  };
  if (i != span_count_ && p + bytes == spans_[i].base) {
    join(i);
  }
  if (i != 0 && spans_[i - 1].base + spans_[i - 1].bytes == p) {
    join(--i);
  }
  spans_committed_ += bytes;
  insert_span(i, joined);
  if (!joined.committed) {
    decommit(joined.base, joined.bytes);
    mapped_ -= committed;
    spans_committed_ -= committed;
  } else if (joined.freed_at + delay_ms_ < purge_at_) {
    purge_at_ = joined.freed_at + delay_ms_;
  }
  MEMKIT_ASSERT_INTERNAL(span_count_ <= heap_regions_ + 1);
  MEMKIT_ASSERT_INTERNAL((i == 0 || spans_[i - 1].base + spans_[i - 1].bytes < joined.base) &&
                         (i + 1 == span_count_ || joined.base + joined.bytes < spans_[i + 1].base));
  const std::size_t limit = regions_peak_ + regions_peak_ / 4;
  keep_within(limit > kept_bytes_floor ? limit : kept_bytes_floor);
  shrink_heap();
}

void os_upstream::keep_within(std::size_t limit) noexcept {
  while (spans_committed_ > limit) {
    // The highest pages of a span at the top go first, to the address space above the heap: the
    // rest of the span stays committed. Then the oldest spans, whole.
    span& top = spans_[span_count_ - 1];
    if (top.committed && top.base + top.bytes == heap_top_) {
      const std::size_t excess =
          detail::round_up(spans_committed_ - limit, detail::thread::chunk_size);
      const std::size_t n = excess < top.bytes ? excess : top.bytes;
      heap_top_ -= n;
      give_back(heap_top_, n);
      top.bytes -= n;
      if (top.bytes == 0) {
        erase_span(span_count_ - 1);
      }
      continue;
    }
    span* oldest = nullptr;
    for (std::size_t i = 0; i != span_count_; ++i) {
      if (spans_[i].committed && (oldest == nullptr || spans_[i].freed_at < oldest->freed_at)) {
        oldest = &spans_[i];
      }
    }
    decommit_span(*oldest);
  }
}

void os_upstream::decommit_span(span& s) noexcept {
  give_back(s.base, s.bytes);
  s.committed = false;
}

void os_upstream::give_back(char* p, std::size_t bytes) noexcept {
  decommit(p, bytes);
  mapped_ -= bytes;
  spans_committed_ -= bytes;
}

void os_upstream::shrink_heap() noexcept {
  // A decommitted span at the top is as the address space above it: the heap ends below it.
  if (span_count_ != 0) {
    const span& s = spans_[span_count_ - 1];
    if (!s.committed && s.base + s.bytes == heap_top_) {
      heap_top_ = s.base;
      erase_span(span_count_ - 1);
    }
  }
}

void os_upstream::insert_span(std::size_t i, const span& s) noexcept {
  MEMKIT_ASSERT_INTERNAL(span_count_ != max_spans);
  std::copy_backward(spans_ + i, spans_ + span_count_, spans_ + span_count_ + 1);
  spans_[i] = s;
  ++span_count_;
}

void os_upstream::erase_span(std::size_t i) noexcept {
  std::copy(spans_ + i + 1, spans_ + span_count_, spans_ + i);
  --span_count_;
}

bool os_upstream::commit_range(char* p, std::size_t bytes) noexcept {
  if (!detail::os::commit(p, bytes)) {
    return false;
  }
  count_mapped(bytes);
  return true;
}

void* os_upstream::map(std::size_t bytes, std::size_t alignment) noexcept {
  void* p =
      alignment <= page_size ? detail::os::map(bytes) : detail::os::map_aligned(bytes, alignment);
  if (p != nullptr) {
    count_mapped(bytes);
  }
  return p;
}

void os_upstream::count_mapped(std::size_t bytes) noexcept {
  mapped_ += bytes;
  peak_mapped_ = mapped_ > peak_mapped_ ? mapped_ : peak_mapped_;
}

void os_upstream::unmap(void* p, std::size_t bytes) noexcept {
  detail::os::unmap(p, bytes);
  mapped_ -= bytes;
}

} // namespace memkit::replacement
