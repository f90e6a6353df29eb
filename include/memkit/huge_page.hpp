// memkit/huge_page.hpp: 2 MiB-aligned regions advised for transparent huge pages, with a report of
// whether the kernel actually backed them with huge pages.
#pragma once

#include <cstddef>

#include "config.hpp"
#include "detail/align.hpp"
#include "detail/os.hpp"
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
  std::size_t max_size() const noexcept { return unbounded_size & ~(huge_page_size - 1); }

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
    if (p == nullptr) {
      return;
    }
    if (!detail::is_aligned(p, huge_page_size)) {
      report_misuse(misuse::foreign_pointer, name(), p, bytes, alignment);
      return;
    }
    if (bytes > max_size()) {
      report_misuse(misuse::size_mismatch, name(), p, bytes, alignment);
      return;
    }
    if (!detail::is_valid_alignment(alignment) || alignment > huge_page_size) {
      report_misuse(misuse::alignment_mismatch, name(), p, bytes, alignment);
      return;
    }
    detail::os::unmap(p, region_size(bytes));
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
};

} // namespace MEMKIT_ABI
} // namespace memkit
