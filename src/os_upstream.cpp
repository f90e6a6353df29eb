// SPDX-License-Identifier: BSL-1.0
// src/os_upstream.cpp: the global replacement's memory from the OS (os_upstream.hpp).
#include "os_upstream.hpp"

#include "memkit/detail/base/align.hpp"
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
  void* p = take_kept(n, alignment);
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
  keep(p, n);
}

void os_upstream::keep(void* p, std::size_t bytes) noexcept {
  const std::size_t limit = regions_peak_ > cache_bytes_floor ? regions_peak_ : cache_bytes_floor;
  if (bytes > limit) {
    unmap(p, bytes);
    return;
  }
  while (kept_count_ == cache_slots || kept_bytes_ + bytes > limit) {
    drop_kept(0); // the oldest
  }
  // Joined to a kept neighbour (mmap places regions next to each other), the range can serve a
  // larger request where it lies. It goes last, as the newest: the entries stay in the order of
  // their last use, which purge relies on.
  auto* base = static_cast<char*>(p);
  for (std::size_t i = kept_count_; i-- > 0;) {
    auto* const k = static_cast<char*>(kept_[i].base);
    if (k + kept_[i].bytes == base || base + bytes == k) {
      base = k < base ? k : base;
      bytes += kept_[i].bytes;
      erase_kept(i);
      i = kept_count_; // a range joined on one side may now touch another entry
    }
  }
  kept_[kept_count_++] = {base, bytes, detail::os::now_ms()};
  kept_bytes_ += bytes;
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
  if (kept_count_ == 0) {
    return 0;
  }
  const std::uint64_t now = detail::os::now_ms();
  std::size_t given = 0;
  // Oldest first: the entries are in the order they were freed.
  while (kept_count_ != 0 && (everything || now - kept_[0].freed_at >= delay_ms)) {
    given += kept_[0].bytes;
    drop_kept(0);
  }
  return given;
}

void* os_upstream::take_kept(std::size_t bytes, std::size_t alignment) noexcept {
  // The smallest region that holds the request where it lies, the newest of equals (the likeliest
  // to be still in the caches): the rest of it stays kept.
  std::size_t best = kept_count_;
  for (std::size_t i = kept_count_; i-- > 0;) {
    if (kept_[i].bytes >= bytes && detail::is_aligned(kept_[i].base, alignment) &&
        (best == kept_count_ || kept_[i].bytes < kept_[best].bytes)) {
      best = i;
    }
  }
  if (best == kept_count_) {
    return gather_kept(bytes, alignment);
  }
  void* const p = kept_[best].base;
  take_front(best, bytes);
  return p;
}

void* os_upstream::gather_kept(std::size_t bytes, std::size_t alignment) noexcept {
  if (kept_count_ == 0 || !detail::os::moves_many_mappings()) {
    return nullptr; // a moved range is one mapping per part: a kernel that cannot move it again
                    // would strand it
  }
  auto* to = static_cast<char*>(map(bytes, region_alignment(alignment)));
  if (to == nullptr) {
    return nullptr;
  }
  std::size_t filled = 0;
  while (filled != bytes && kept_count_ != 0) {
    const kept& k = kept_[kept_count_ - 1];
    const std::size_t n = k.bytes < bytes - filled ? k.bytes : bytes - filled;
    if (!detail::os::move_pages(k.base, n, to + filled)) {
      // Out of mappings: the rest stays fresh, if the kernel lets its range be mapped again.
      if (detail::os::map_over(to + filled, n)) {
        return to;
      }
      unmap(to, bytes);
      return nullptr;
    }
    mapped_ -= n; // the pages are counted once, in `to`
    take_front(kept_count_ - 1, n);
    filled += n;
  }
  return to;
}

void os_upstream::take_front(std::size_t i, std::size_t bytes) noexcept {
  if (kept_[i].bytes == bytes) {
    erase_kept(i);
    return;
  }
  kept_[i].base = static_cast<char*>(kept_[i].base) + bytes;
  kept_[i].bytes -= bytes;
  kept_bytes_ -= bytes;
}

void os_upstream::drop_kept(std::size_t i) noexcept {
  unmap(kept_[i].base, kept_[i].bytes);
  erase_kept(i);
}

void os_upstream::erase_kept(std::size_t i) noexcept {
  kept_bytes_ -= kept_[i].bytes;
  for (std::size_t j = i + 1; j < kept_count_; ++j) {
    kept_[j - 1] = kept_[j];
  }
  --kept_count_;
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
