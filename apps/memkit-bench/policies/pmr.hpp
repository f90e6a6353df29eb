// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/policies/pmr.hpp: the standard library's std::pmr resources as policies.
#pragma once

#include <cstddef>
#include <memory>
#include <memory_resource>

#include "core/policy.hpp"

namespace memkit::bench {

/// Any std::pmr resource behind polymorphic_allocator; the derived class owns the resource.
class pmr_policy {
public:
  template <class T>
  using allocator_type = std::pmr::polymorphic_allocator<T>;
  template <class T>
  allocator_type<T> allocator() noexcept {
    return allocator_type<T>(r_);
  }
  void* allocate(std::size_t bytes, std::size_t alignment) {
    return r_->allocate(bytes, alignment);
  }
  void deallocate(void* p, std::size_t bytes, std::size_t alignment) noexcept {
    r_->deallocate(p, bytes, alignment);
  }

protected:
  explicit pmr_policy(std::pmr::memory_resource* r) noexcept : r_(r) {}

private:
  std::pmr::memory_resource* r_;
};

/// A monotonic buffer over new/delete, released after every iteration.
class pmr_monotonic_policy : public pmr_policy {
public:
  static constexpr const char* name = "pmr-monotonic";
  explicit pmr_monotonic_policy(const hint&) : pmr_policy(&r_) {}
  void recycle() noexcept { r_.release(); }

private:
  std::pmr::monotonic_buffer_resource r_;
};

/// The configuration the json-tree service workload recommends (docs/background.md#json-tree): a
/// monotonic
/// buffer over a 1 MiB buffer (its thread_local arena) that overflows into a synchronized pool,
/// released after every request.
class pmr_monotonic_sync_pool_policy : public pmr_policy {
public:
  static constexpr const char* name = "pmr-monotonic-sync-pool";
  static constexpr std::size_t buffer_size = std::size_t{1} << 20;
  explicit pmr_monotonic_sync_pool_policy(const hint&)
      : pmr_policy(&r_), buffer_(new std::byte[buffer_size]),
        r_(buffer_.get(), buffer_size, &pool_) {}
  void recycle() noexcept { r_.release(); }

private:
  std::pmr::synchronized_pool_resource pool_;
  std::unique_ptr<std::byte[]> buffer_;
  std::pmr::monotonic_buffer_resource r_;
};

template <class Pool>
class pmr_pool_policy : public pmr_policy {
public:
  explicit pmr_pool_policy(const hint&) : pmr_policy(&r_) {}
  void recycle() noexcept {}

private:
  Pool r_;
};
struct pmr_unsync_pool_policy : pmr_pool_policy<std::pmr::unsynchronized_pool_resource> {
  static constexpr const char* name = "pmr-unsync-pool";
  using pmr_pool_policy::pmr_pool_policy;
};
struct pmr_sync_pool_policy : pmr_pool_policy<std::pmr::synchronized_pool_resource> {
  static constexpr const char* name = "pmr-sync-pool";
  using pmr_pool_policy::pmr_pool_policy;
};

} // namespace memkit::bench
