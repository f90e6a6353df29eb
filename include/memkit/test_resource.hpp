// SPDX-License-Identifier: BSL-1.0
// memkit/test_resource.hpp: a counting resource that fails on demand, for testing code that
// allocates (bslma::TestAllocator, P1160), the exception test loop, and a default-resource guard.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory_resource>
#include <new>
#include <utility>

#include "config.hpp"
#include "error.hpp"
#include "resource.hpp"
#include "upstream.hpp"

namespace memkit {
inline namespace MEMKIT_ABI {

/// A resource for tests (docs/debugging.md): it counts blocks and bytes in use, their peak and
/// their total, can be told to fail the N-th allocation from now, and checks every `deallocate`
/// against a registry of its live blocks (foreign pointers, double frees and size or alignment
/// mismatches are reported as `memkit::misuse` through the process-wide handler, and ignored).
///
/// Both a memkit resource and a `std::pmr::memory_resource`, so it can stand under a strategy, a
/// `std::pmr` container, or both. `final`, as `memkit::pmr::resource_adapter` is. Memory comes from
/// `std::malloc`; the registry uses the global heap (never the default `std::pmr` resource, so the
/// `default_resource_guard` does not see it). O(log n) per call. Not thread-safe.
class test_resource final : public std::pmr::memory_resource {
public:
  /// \effects a resource called `name` (kept, not copied: a string literal).
  explicit test_resource(const char* name = "memkit::test_resource") noexcept : name_(name) {}

  test_resource(const test_resource&) = delete;
  test_resource& operator=(const test_resource&) = delete;

  /// \effects if blocks are still in use, prints how many, with the oldest one's size and number,
  /// and aborts: a test that leaks must not pass. The blocks are freed first.
  ~test_resource() override {
    if (live_.empty()) {
      return;
    }
    const auto& [p, b] = *oldest();
    std::fprintf(stderr,
                 "memkit: %s: %zu block(s), %zu byte(s) leaked; the oldest at %p (size %zu, "
                 "alignment %zu; block #%zu)\n",
                 name_, live_.size(), bytes_in_use_, p, b.size, b.alignment, b.number);
    for (const auto& [q, c] : live_) {
      heap_.deallocate(q, c.size, c.alignment);
    }
    std::abort();
  }

  const char* name() const noexcept { return name_; }
  std::size_t max_size() const noexcept { return unbounded_size; }
  std::size_t max_alignment() const noexcept { return unbounded_alignment; }

  /// \returns a block of `bytes` (1 if 0) aligned to `alignment`.
  /// \throws bad_alignment, bad_size, or out_of_memory (an injected failure, or malloc's).
  void* allocate(std::size_t bytes, std::size_t alignment = default_alignment) {
    return detail::allocate_or_throw(*this, bytes, alignment);
  }

  /// \returns a block, or null for an invalid request, an injected failure, or a heap failure.
  void* try_allocate(std::size_t bytes, std::size_t alignment = default_alignment) noexcept {
    ++requests_;
    if (limit_ != no_limit && limit_-- == 0) {
      limit_ = no_limit;
      ++failures_;
      return nullptr;
    }
    void* p = heap_.try_allocate(bytes, alignment);
    if (p == nullptr) {
      ++failures_;
      return nullptr;
    }
    try {
      live_.emplace(p, block{bytes, alignment, total_blocks_ + 1});
    } catch (...) {
      heap_.deallocate(p, bytes, alignment);
      ++failures_;
      return nullptr;
    }
    ++total_blocks_;
    total_bytes_ += bytes;
    bytes_in_use_ += bytes;
    peak_blocks_ = std::max(peak_blocks_, live_.size());
    peak_bytes_ = std::max(peak_bytes_, bytes_in_use_);
    return p;
  }

  /// \effects frees `p` after checking it against the registry; a misuse is reported
  /// (`foreign_pointer` for a pointer not live here, freed before included; `size_mismatch`,
  /// `alignment_mismatch`) and the call ignored. `deallocate(nullptr, …)` does nothing.
  void deallocate(void* p, std::size_t bytes, std::size_t alignment = default_alignment) noexcept {
    if (p == nullptr) {
      return;
    }
    const auto it = live_.find(p);
    if (it == live_.end()) {
      report_misuse(misuse::foreign_pointer, name_, p, bytes, alignment);
      return;
    }
    if (it->second.size != bytes) {
      report_misuse(misuse::size_mismatch, name_, p, bytes, alignment);
      return;
    }
    if (it->second.alignment != alignment) {
      report_misuse(misuse::alignment_mismatch, name_, p, bytes, alignment);
      return;
    }
    live_.erase(it);
    bytes_in_use_ -= bytes;
    ++deallocations_;
    heap_.deallocate(p, bytes, alignment);
  }

  /// \returns whether `p` points into a live block. Exact, O(log n).
  bool owns(const void* p) const noexcept {
    auto it = live_.upper_bound(const_cast<void*>(p));
    if (it == live_.begin()) {
      return false;
    }
    --it;
    return detail::in_range(p, it->first, it->second.size == 0 ? 1 : it->second.size);
  }

  /// \effects the next `n` allocations succeed and the one after fails (null from try_allocate,
  /// out_of_memory from allocate); later ones succeed again. `n == 0` fails the very next one.
  void set_allocation_limit(std::size_t n) noexcept { limit_ = n; }
  /// \effects no allocation is failed on purpose.
  void clear_allocation_limit() noexcept { limit_ = no_limit; }

  std::size_t blocks_in_use() const noexcept { return live_.size(); }
  std::size_t bytes_in_use() const noexcept { return bytes_in_use_; }
  /// \returns the most blocks / bytes in use at once.
  std::size_t peak_blocks() const noexcept { return peak_blocks_; }
  std::size_t peak_bytes() const noexcept { return peak_bytes_; }
  /// \returns the blocks / bytes ever handed out.
  std::size_t total_blocks() const noexcept { return total_blocks_; }
  std::size_t total_bytes() const noexcept { return total_bytes_; }
  /// \returns every allocation request, served or failed.
  std::size_t requests() const noexcept { return requests_; }
  /// \returns the requests that failed: injected, or refused by the heap.
  std::size_t failures() const noexcept { return failures_; }
  std::size_t deallocations() const noexcept { return deallocations_; }

  /// \returns a leak report for the youngest live block allocated after the first `watermark`
  /// allocations (`total_blocks()` then); `allocation == 0` if there is none.
  misuse_report newest_block_since(std::size_t watermark) const noexcept {
    misuse_report r{misuse::leak, name_, nullptr, 0, 0, 0, 0, 0};
    for (const auto& [p, b] : live_) {
      if (b.number > watermark && b.number > r.allocation) {
        r = misuse_report{misuse::leak, name_,  p,           b.size,
                          b.alignment,  b.size, b.alignment, b.number};
      }
    }
    return r;
  }

private:
  struct block {
    std::size_t size;
    std::size_t alignment;
    std::size_t number;
  };

  static constexpr std::size_t no_limit = static_cast<std::size_t>(-1);

  std::map<void*, block>::const_iterator oldest() const noexcept {
    auto first = live_.begin();
    for (auto it = live_.begin(); it != live_.end(); ++it) {
      if (it->second.number < first->second.number) {
        first = it;
      }
    }
    return first;
  }

  void* do_allocate(std::size_t bytes, std::size_t alignment) override {
    return allocate(bytes, alignment);
  }
  void do_deallocate(void* p, std::size_t bytes, std::size_t alignment) override {
    deallocate(p, bytes, alignment);
  }
  bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override {
    return this == &other;
  }

  const char* name_;
  malloc_resource heap_;
  std::map<void*, block> live_; ///< ordered, so owns() can find the block below a pointer
  std::size_t limit_ = no_limit;
  std::size_t bytes_in_use_ = 0;
  std::size_t peak_blocks_ = 0;
  std::size_t peak_bytes_ = 0;
  std::size_t total_blocks_ = 0;
  std::size_t total_bytes_ = 0;
  std::size_t requests_ = 0;
  std::size_t failures_ = 0;
  std::size_t deallocations_ = 0;
};

/// Runs `body` once for every allocation it makes from `r`, failing the first allocation in the
/// first run, the second in the second, and so on, until a run makes no failed allocation; after
/// every run, whether it threw or not, checks that `r` has no more blocks in use than before it.
/// `body` is expected to let the `std::bad_alloc` through (or to handle it); any other exception,
/// or a `std::bad_alloc` no injected failure explains, propagates.
/// \returns the number of runs (the allocation points exercised, plus the final clean run).
/// \throws misuse_error (kind `leak`, naming `r` and the youngest leaked block) if a run leaked.
template <class Body>
std::size_t exception_test_loop(test_resource& r, Body&& body) {
  for (std::size_t n = 0;; ++n) {
    const std::size_t blocks = r.blocks_in_use();
    const std::size_t watermark = r.total_blocks();
    const std::size_t failures = r.failures();
    r.set_allocation_limit(n);
    try {
      body();
    } catch (const std::bad_alloc&) {
      r.clear_allocation_limit();
      if (r.failures() == failures) {
        throw;
      }
    }
    r.clear_allocation_limit();
    if (r.blocks_in_use() > blocks) {
      throw misuse_error(r.newest_block_since(watermark));
    }
    if (r.failures() == failures) {
      return n + 1;
    }
  }
}

/// Asserts that nothing uses the default `std::pmr` resource while it lives: it installs a
/// counting `test_resource` with `std::pmr::set_default_resource` and restores the previous one on
/// destruction. Guards nest.
/// \requires nothing allocated from the default resource while it lives outlives it.
class default_resource_guard {
public:
  /// \param abort_if_used whether destruction aborts, with a message, if the default resource was
  /// asked for memory; `false` only counts, for a test to inspect `requests()`.
  explicit default_resource_guard(bool abort_if_used = true) noexcept
      : abort_if_used_(abort_if_used), previous_(std::pmr::set_default_resource(&counter_)) {}

  default_resource_guard(const default_resource_guard&) = delete;
  default_resource_guard& operator=(const default_resource_guard&) = delete;

  /// \effects restores the previous default resource; then, if asked to and the default resource
  /// was used, prints how often and aborts.
  ~default_resource_guard() {
    std::pmr::set_default_resource(previous_);
    if (abort_if_used_ && counter_.requests() != 0) {
      std::fprintf(stderr,
                   "memkit: %s: the default std::pmr resource was asked for memory %zu time(s)\n",
                   counter_.name(), counter_.requests());
      std::abort();
    }
  }

  /// \returns the allocation requests the default resource got while this guard lived.
  std::size_t requests() const noexcept { return counter_.requests(); }
  /// \returns the resource installed as the default one.
  test_resource& resource() noexcept { return counter_; }

private:
  bool abort_if_used_;
  test_resource counter_{"memkit::default_resource_guard"};
  std::pmr::memory_resource* previous_;
};

} // namespace MEMKIT_ABI
} // namespace memkit
