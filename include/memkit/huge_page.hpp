// SPDX-License-Identifier: BSL-1.0
// memkit/huge_page.hpp: 2 MiB-aligned regions advised for transparent huge pages, with a report of
// whether the kernel actually backed them with huge pages.
#pragma once

#include <cstddef>

#include "config.hpp"
#include "detail/base/align.hpp"
#include "detail/base/os.hpp"
#include "error.hpp"
#include "resource.hpp"

namespace memkit {
inline namespace MEMKIT_ABI {

/// The system-wide transparent-huge-page policy (always, madvise, never, or unavailable).
using thp_policy = detail::os::thp_policy;

/// Maps every block as its own region: its size rounded up to a multiple of 2 MiB, 2 MiB-aligned,
/// advised with MADV_HUGEPAGE so that the kernel may back it with transparent huge pages (fewer TLB
/// misses on large, randomly accessed data). Where THP is off or the advice is refused, the region
/// works the same with regular pages; `huge_page_bytes` tells which happened.
///
/// Meant for a few large blocks (a hash table, a big vector) or as the upstream of a strategy that
/// carves them: every block costs at least 2 MiB of address space and an mmap/munmap pair. The
/// memory comes straight from the kernel (no upstream) and is zero-filled. Stateless: every
/// instance is interchangeable and, unlike the strategies, it may be copied (so it can be held by
/// value as an upstream). Thread-safe, as mmap is.
class huge_page_resource {
public:
  /// The transparent huge page size of x86-64 and of AArch64 with 4 KiB pages (one page-middle-
  /// directory entry, /sys/kernel/mm/transparent_hugepage/hpage_pmd_size).
  static constexpr std::size_t huge_page_size = std::size_t{1} << 21;

  static constexpr bool thread_safe = true;
  const char* name() const noexcept { return "memkit::huge_page_resource"; }

  /// \returns the largest size whose region (rounded up to 2 MiB) is still an object size.
  std::size_t max_size() const noexcept { return largest_block; }

  /// \returns 2 MiB: every region starts on a huge page boundary.
  std::size_t max_alignment() const noexcept { return huge_page_size; }

  /// \returns a zero-filled block of at least `bytes` aligned to 2 MiB.
  /// \throws bad_alignment, bad_size, out_of_memory (the kernel refused the mapping).
  void* allocate(std::size_t bytes, std::size_t alignment = default_alignment) {
    return detail::allocate_or_throw(*this, bytes, alignment);
  }

  /// \returns a fresh region of region_size(bytes) bytes, 2 MiB-aligned (so any `alignment` up to
  /// 2 MiB is honoured), or null. The region is mapped once with 2 MiB of slack and trimmed, then
  /// advised; a refused advice is not an error.
  void* try_allocate(std::size_t bytes, std::size_t alignment = default_alignment) noexcept {
    if (!detail::is_valid_alignment(alignment) || alignment > huge_page_size ||
        bytes > max_size()) {
      return nullptr;
    }
    const std::size_t region = region_size(bytes);
    void* p = detail::os::map_aligned(region, huge_page_size);
    if (p != nullptr) {
      detail::os::advise_huge_pages(p, region);
    }
    return p;
  }

  /// Unmaps the region. A pointer that is not 2 MiB-aligned is reported as a foreign pointer, and a
  /// size or alignment no allocation could have had as a mismatch; the call is then ignored.
  void deallocate(void* p, std::size_t bytes, std::size_t alignment = default_alignment) noexcept {
    if (returnable(name(), p, bytes, alignment)) {
      detail::os::unmap(p, region_size(bytes));
    }
  }

  /// \returns whether (`p`, `bytes`, `alignment`) can be a block this resource handed out. If
  /// not, reports why as misuse by `resource`; a null `p` is not misuse, just not returnable.
  static bool returnable(const char* resource, void* p, std::size_t bytes,
                         std::size_t alignment) noexcept {
    if (p == nullptr) {
      return false;
    }
    if (!detail::is_aligned(p, huge_page_size)) {
      report_misuse(misuse::foreign_pointer, resource, p, bytes, alignment);
      return false;
    }
    if (bytes > largest_block) {
      report_misuse(misuse::size_mismatch, resource, p, bytes, alignment);
      return false;
    }
    if (!detail::is_valid_alignment(alignment) || alignment > huge_page_size) {
      report_misuse(misuse::alignment_mismatch, resource, p, bytes, alignment);
      return false;
    }
    return true;
  }

  /// \returns the bytes a block of `bytes` occupies: `bytes` (1 if 0) rounded up to 2 MiB.
  /// \requires `bytes <= max_size()`.
  static constexpr std::size_t region_size(std::size_t bytes) noexcept {
    return detail::round_up(bytes == 0 ? 1 : bytes, huge_page_size);
  }

  /// \returns how many bytes of the region of the block `p` (of `bytes` bytes) the kernel backs
  /// with huge pages right now, between 0 and region_size(bytes). Pages exist only once touched, so
  /// ask after writing the memory. Read from the AnonHugePages lines of /proc/self/smaps: exact
  /// unless the kernel merged the region with an adjacent mapping that also has huge pages, in
  /// which case it is an upper bound. A diagnostic (it parses a procfs file), not for hot paths.
  static std::size_t huge_page_bytes(const void* p, std::size_t bytes) noexcept {
    return p == nullptr ? 0 : detail::os::anon_huge_page_bytes(p, region_size(bytes));
  }

  /// \returns the system-wide THP policy from /sys/kernel/mm/transparent_hugepage/enabled.
  static thp_policy transparent_huge_page_policy() noexcept {
    return detail::os::read_thp_policy();
  }

  /// \returns whether advised regions can get huge pages at all: the policy is "always" or
  /// "madvise". Even then the kernel may fall back to regular pages (no free 2 MiB frame).
  static bool transparent_huge_pages_available() noexcept {
    const thp_policy p = transparent_huge_page_policy();
    return p == thp_policy::always || p == thp_policy::madvise;
  }

  friend bool operator==(huge_page_resource, huge_page_resource) noexcept { return true; }
  friend bool operator!=(huge_page_resource, huge_page_resource) noexcept { return false; }

private:
  static constexpr std::size_t largest_block = unbounded_size & ~(huge_page_size - 1);
};

/// A huge_page_resource that keeps the regions given back to it and serves later requests of the
/// same region size from them, pages already faulted in (and huge where the kernel gave huge
/// pages): no mmap, munmap, madvise or page fault once it holds what a workload cycles through.
///
/// Why: a growing `std::vector` of 8 MiB asks for a fresh block at every doubling and frees the
/// old one. On huge_page_resource alone each step maps, advises and faults in a 2 MiB-aligned
/// region and unmaps the last, so every iteration zeroes about 50 MiB of huge pages for 16 MiB of
/// blocks (strace and getrusage: docs/results/archive-2026-11-benchmarks.md, huge-pages); the
/// general-purpose allocators that beat it keep their memory mapped between uses, as this does.
///
/// Regions are matched by exact region size (a multiple of 2 MiB), the most recently returned
/// first (its cache lines and TLB entries are the warmest). At most `max_regions` regions and
/// `max_cached_bytes` bytes are kept; a region beyond either goes back to the kernel. A reused
/// region is *not* zero-filled, unlike a fresh one. Not thread-safe (wrap it in `synchronized`);
/// not copyable, since it owns the regions it holds; trim() or destruction unmaps them. Blocks in
/// use are the caller's to return: unlike a strategy's release(), trim() does not take them back.
/// Detected misuse in deallocate: as huge_page_resource (reported, then ignored).
class huge_page_cache {
public:
  /// Regions kept at most: a doubling vector cycles through two regions of 2 MiB and one per
  /// later doubling, so the byte limit, not this, bounds what such a vector keeps.
  static constexpr std::size_t max_regions = 16;
  /// The default limit on kept bytes: twice the 32 MiB a vector of 32 MiB cycles through.
  static constexpr std::size_t default_max_cached_bytes = std::size_t{64} << 20;

  /// \effects a cache that keeps at most `max_cached_bytes` of returned regions. Maps nothing.
  explicit huge_page_cache(std::size_t max_cached_bytes = default_max_cached_bytes) noexcept
      : max_cached_bytes_(max_cached_bytes) {}

  huge_page_cache(const huge_page_cache&) = delete;
  huge_page_cache& operator=(const huge_page_cache&) = delete;

  /// \effects trim().
  ~huge_page_cache() { trim(); }

  const char* name() const noexcept { return "memkit::huge_page_cache"; }
  std::size_t max_size() const noexcept { return upstream_.max_size(); }
  std::size_t max_alignment() const noexcept { return upstream_.max_alignment(); }

  /// \returns a block of at least `bytes` aligned to 2 MiB: a kept region of the same region size,
  /// or a fresh zero-filled one. \throws bad_alignment, bad_size, out_of_memory.
  void* allocate(std::size_t bytes, std::size_t alignment = default_alignment) {
    return detail::allocate_or_throw(*this, bytes, alignment);
  }

  /// \returns as allocate(), or null.
  ///
  /// Out of line, as is deallocate: inlined, the lookup and the mapping it falls back on made GCC
  /// 12 keep a growing vector's end pointer in memory, a store per `push_back` in the loop that
  /// fills it (objdump of the huge-pages fill), and the 8 MiB fill took 1.9 ms instead of 1.25 ms.
  /// A call per region costs nothing next to the region.
  MEMKIT_NOINLINE void* try_allocate(std::size_t bytes,
                                     std::size_t alignment = default_alignment) noexcept {
    if (bytes <= max_size() && detail::is_valid_alignment(alignment) &&
        alignment <= max_alignment()) {
      const std::size_t region = huge_page_resource::region_size(bytes);
      for (std::size_t i = count_; i-- != 0;) {
        if (kept_[i].bytes == region) {
          void* p = kept_[i].p;
          for (std::size_t j = i + 1; j < count_; ++j) {
            kept_[j - 1] = kept_[j];
          }
          --count_;
          kept_bytes_ -= region;
          return p;
        }
      }
    }
    return upstream_.try_allocate(bytes, alignment);
  }

  /// Keeps the block's region for reuse if the limits allow, else unmaps it. What
  /// huge_page_resource would report as misuse is reported and ignored.
  MEMKIT_NOINLINE void deallocate(void* p, std::size_t bytes,
                                  std::size_t alignment = default_alignment) noexcept {
    if (!huge_page_resource::returnable(name(), p, bytes, alignment)) {
      return;
    }
    const std::size_t region = huge_page_resource::region_size(bytes);
    if (count_ == max_regions || region > max_cached_bytes_ - kept_bytes_) {
      upstream_.deallocate(p, bytes, alignment);
      return;
    }
    kept_[count_++] = {p, region};
    kept_bytes_ += region;
  }

  /// \effects unmaps every kept region (as `malloc_trim` returns a heap's free memory). Blocks in
  /// use are not affected.
  void trim() noexcept {
    for (std::size_t i = 0; i < count_; ++i) {
      upstream_.deallocate(kept_[i].p, kept_[i].bytes);
    }
    count_ = 0;
    kept_bytes_ = 0;
  }

  /// \returns the bytes of the regions kept for reuse.
  std::size_t cached_bytes() const noexcept { return kept_bytes_; }
  /// \returns how many regions are kept for reuse.
  std::size_t cached_regions() const noexcept { return count_; }

private:
  struct region {
    void* p;
    std::size_t bytes;
  };

  huge_page_resource upstream_;
  std::size_t max_cached_bytes_;
  std::size_t kept_bytes_ = 0;
  std::size_t count_ = 0;
  region kept_[max_regions] = {};
};

} // namespace MEMKIT_ABI
} // namespace memkit
