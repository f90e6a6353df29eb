// SPDX-License-Identifier: BSL-1.0
// tests/support/spy_resource.hpp: an upstream that records every block it hands out and checks
// every return against it, so a test can assert "nothing leaked, nothing mismatched".
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "memkit/upstream.hpp"

namespace memkit::test {

class spy_resource {
public:
  /// \param budget bytes it may hand out in total before it starts failing (exhaustion tests).
  explicit spy_resource(std::size_t budget = unbounded_size) noexcept : budget_(budget) {}

  spy_resource(const spy_resource&) = delete;
  spy_resource& operator=(const spy_resource&) = delete;

  ~spy_resource() {
    for (auto& [p, b] : live_) {
      heap_.deallocate(p, b.size, b.alignment);
    }
  }

  const char* name() const noexcept { return "memkit::test::spy_resource"; }
  std::size_t max_size() const noexcept { return unbounded_size; }
  std::size_t max_alignment() const noexcept { return unbounded_alignment; }

  void* allocate(std::size_t bytes, std::size_t alignment = default_alignment) {
    return detail::allocate_or_throw(*this, bytes, alignment);
  }

  void* try_allocate(std::size_t bytes, std::size_t alignment = default_alignment) noexcept {
    ++calls_;
    if (!detail::is_valid_alignment(alignment) || bytes > budget_ || used_ > budget_ - bytes) {
      ++failures_;
      return nullptr;
    }
    void* p = heap_.try_allocate(bytes, alignment);
    if (p == nullptr) {
      ++failures_;
      return nullptr;
    }
    if (!detail::is_aligned(p, alignment)) {
      errors_.push_back("malloc returned a misaligned block");
    }
    live_[p] = block{bytes, alignment};
    used_ += bytes;
    ++allocations_;
    return p;
  }

  void deallocate(void* p, std::size_t bytes, std::size_t alignment = default_alignment) noexcept {
    const auto it = live_.find(p);
    if (it == live_.end()) {
      errors_.push_back("deallocate of a pointer this spy did not hand out (or freed twice)");
      return;
    }
    if (it->second.size != bytes) {
      errors_.push_back("deallocate size " + std::to_string(bytes) + " != allocated size " +
                        std::to_string(it->second.size));
    }
    if (it->second.alignment != alignment) {
      errors_.push_back("deallocate alignment " + std::to_string(alignment) +
                        " != allocated alignment " + std::to_string(it->second.alignment));
    }
    heap_.deallocate(p, it->second.size, it->second.alignment);
    used_ -= it->second.size;
    live_.erase(it);
    ++deallocations_;
  }

  bool owns(const void* p) const noexcept {
    for (const auto& [q, b] : live_) {
      if (detail::in_range(p, q, b.size)) {
        return true;
      }
    }
    return false;
  }

  /// Blocks handed out and not yet returned.
  std::size_t blocks_in_use() const noexcept { return live_.size(); }
  std::size_t bytes_in_use() const noexcept { return used_; }
  std::size_t allocations() const noexcept { return allocations_; }
  std::size_t deallocations() const noexcept { return deallocations_; }
  /// Every call to try_allocate/allocate, successful or not.
  std::size_t calls() const noexcept { return calls_; }
  std::size_t failures() const noexcept { return failures_; }
  /// Mismatches seen on return; empty when every block came back as it was handed out.
  const std::vector<std::string>& errors() const noexcept { return errors_; }

  void set_budget(std::size_t budget) noexcept { budget_ = budget; }

private:
  struct block {
    std::size_t size;
    std::size_t alignment;
  };
  malloc_resource heap_;
  std::map<void*, block> live_;
  std::vector<std::string> errors_;
  std::size_t budget_;
  std::size_t used_ = 0;
  std::size_t allocations_ = 0;
  std::size_t deallocations_ = 0;
  std::size_t calls_ = 0;
  std::size_t failures_ = 0;
};

/// A misuse handler that records instead of aborting, installed for the lifetime of the object.
class misuse_recorder {
public:
  misuse_recorder() noexcept : previous_(set_misuse_handler(&record)) { reports().clear(); }
  ~misuse_recorder() { set_misuse_handler(previous_); }
  misuse_recorder(const misuse_recorder&) = delete;
  misuse_recorder& operator=(const misuse_recorder&) = delete;

  static std::vector<misuse_report>& reports() noexcept {
    static std::vector<misuse_report> r;
    return r;
  }
  std::size_t count(misuse kind) const noexcept {
    std::size_t n = 0;
    for (const auto& r : reports()) {
      n += r.kind == kind ? 1 : 0;
    }
    return n;
  }

private:
  static void record(const misuse_report& r) { reports().push_back(r); }
  misuse_handler previous_;
};

} // namespace memkit::test
