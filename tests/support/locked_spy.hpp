// SPDX-License-Identifier: BSL-1.0
// tests/support/locked_spy.hpp: spy_resource behind a mutex, with the peak of its bytes in use, so
// a test can read it while other threads allocate, and assert a bound on a whole run.
#pragma once

#include <cstddef>
#include <mutex>
#include <string>
#include <vector>

#include "spy_resource.hpp"

namespace memkit::test {

class locked_spy {
public:
  explicit locked_spy(std::size_t budget = unbounded_size) noexcept : spy_(budget) {}

  locked_spy(const locked_spy&) = delete;
  locked_spy& operator=(const locked_spy&) = delete;

  const char* name() const noexcept { return "memkit::test::locked_spy"; }
  std::size_t max_size() const noexcept { return unbounded_size; }
  std::size_t max_alignment() const noexcept { return unbounded_alignment; }

  void* allocate(std::size_t bytes, std::size_t alignment = default_alignment) {
    return detail::allocate_or_throw(*this, bytes, alignment);
  }
  void* try_allocate(std::size_t bytes, std::size_t alignment = default_alignment) noexcept {
    const std::lock_guard<std::mutex> lock(m_);
    void* p = spy_.try_allocate(bytes, alignment);
    if (spy_.bytes_in_use() > peak_) {
      peak_ = spy_.bytes_in_use();
    }
    return p;
  }
  void deallocate(void* p, std::size_t bytes, std::size_t alignment = default_alignment) noexcept {
    const std::lock_guard<std::mutex> lock(m_);
    spy_.deallocate(p, bytes, alignment);
  }

  std::size_t bytes_in_use() const {
    const std::lock_guard<std::mutex> lock(m_);
    return spy_.bytes_in_use();
  }
  std::size_t blocks_in_use() const {
    const std::lock_guard<std::mutex> lock(m_);
    return spy_.blocks_in_use();
  }
  std::size_t allocations() const {
    const std::lock_guard<std::mutex> lock(m_);
    return spy_.allocations();
  }
  /// The most bytes in use at once since construction (or `reset_peak`).
  std::size_t peak_bytes() const {
    const std::lock_guard<std::mutex> lock(m_);
    return peak_;
  }
  void reset_peak() {
    const std::lock_guard<std::mutex> lock(m_);
    peak_ = spy_.bytes_in_use();
  }
  std::vector<std::string> errors() const {
    const std::lock_guard<std::mutex> lock(m_);
    return spy_.errors();
  }
  void set_budget(std::size_t budget) {
    const std::lock_guard<std::mutex> lock(m_);
    spy_.set_budget(budget);
  }
  /// The spy itself, without the lock: for its other counters once no other thread uses it.
  const spy_resource& spy() const noexcept { return spy_; }

private:
  mutable std::mutex m_;
  spy_resource spy_;
  std::size_t peak_ = 0;
};

} // namespace memkit::test
