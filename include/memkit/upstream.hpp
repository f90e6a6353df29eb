// SPDX-License-Identifier: BSL-1.0
// memkit/upstream.hpp: the resources strategies draw their memory from (docs/concepts.md,
// "Upstream"): the C heap, operator new, a caller buffer, nothing at all, or any std::pmr resource.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <memory_resource>
#include <new>

#include "config.hpp"
#include "detail/base/align.hpp"
#include "detail/bump.hpp"
#include "resource.hpp"

namespace memkit {
inline namespace MEMKIT_ABI {

namespace detail {

/// What the upstreams limited only by the address space share: their limits, `allocate` in terms
/// of `try_allocate`, and the one validity test they apply before reaching their source.
template <class Derived>
class unbounded_resource {
public:
  std::size_t max_size() const noexcept { return unbounded_size; }
  std::size_t max_alignment() const noexcept { return unbounded_alignment; }

  void* allocate(std::size_t bytes, std::size_t alignment = default_alignment) {
    return allocate_or_throw(static_cast<Derived&>(*this), bytes, alignment);
  }

protected:
  static bool servable(std::size_t bytes, std::size_t alignment) noexcept {
    return is_valid_alignment(alignment) && bytes <= unbounded_size;
  }
};

} // namespace detail

/// `std::malloc` / `std::aligned_alloc` / `std::free`. Stateless; every instance is
/// interchangeable.
class malloc_resource : public detail::unbounded_resource<malloc_resource> {
public:
  /// malloc is thread-safe (synchronized.hpp takes no lock for it).
  static constexpr bool thread_safe = true;
  const char* name() const noexcept { return "memkit::malloc_resource"; }

  /// \returns a block of at least `bytes` (1 if 0) aligned to `alignment`, or null.
  void* try_allocate(std::size_t bytes, std::size_t alignment = default_alignment) noexcept {
    if (!servable(bytes, alignment)) {
      return nullptr;
    }
    const std::size_t n = bytes == 0 ? 1 : bytes;
    if (alignment <= default_alignment) {
      return std::malloc(n);
    }
    // aligned_alloc wants a size that is a multiple of the alignment.
    const std::size_t rounded = detail::round_up(n, alignment);
    return rounded == 0 ? nullptr : std::aligned_alloc(alignment, rounded);
  }

  void deallocate(void* p, std::size_t, std::size_t = default_alignment) noexcept { std::free(p); }

  friend bool operator==(malloc_resource, malloc_resource) noexcept { return true; }
  friend bool operator!=(malloc_resource, malloc_resource) noexcept { return false; }
};

/// Global `operator new` / `operator delete`, aligned and sized overloads. Stateless.
class new_delete_resource : public detail::unbounded_resource<new_delete_resource> {
public:
  static constexpr bool thread_safe = true;
  const char* name() const noexcept { return "memkit::new_delete_resource"; }

  void* try_allocate(std::size_t bytes, std::size_t alignment = default_alignment) noexcept {
    if (!servable(bytes, alignment)) {
      return nullptr;
    }
    if (alignment > __STDCPP_DEFAULT_NEW_ALIGNMENT__) {
      return ::operator new (bytes, std::align_val_t{alignment}, std::nothrow);
    }
    return ::operator new(bytes, std::nothrow);
  }

  void deallocate(void* p, std::size_t bytes, std::size_t alignment = default_alignment) noexcept {
    if (p == nullptr) {
      return;
    }
    // Clang leaves sized deallocation off unless -fsized-deallocation is given.
#if defined(__cpp_sized_deallocation)
    if (alignment > __STDCPP_DEFAULT_NEW_ALIGNMENT__) {
      ::operator delete (p, bytes, std::align_val_t{alignment});
    } else {
      ::operator delete(p, bytes);
    }
#else
    (void)bytes;
    if (alignment > __STDCPP_DEFAULT_NEW_ALIGNMENT__) {
      ::operator delete (p, std::align_val_t{alignment});
    } else {
      ::operator delete(p);
    }
#endif
  }

  friend bool operator==(new_delete_resource, new_delete_resource) noexcept { return true; }
  friend bool operator!=(new_delete_resource, new_delete_resource) noexcept { return false; }
};

/// Never has memory: `allocate` throws `out_of_memory`, `try_allocate` returns null. As an upstream
/// it makes a strategy fail loudly instead of silently reaching for the heap.
class null_resource : public detail::unbounded_resource<null_resource> {
public:
  static constexpr bool thread_safe = true;
  const char* name() const noexcept { return "memkit::null_resource"; }
  void* try_allocate(std::size_t, std::size_t = default_alignment) noexcept { return nullptr; }

  /// Nothing can be returned to a resource that never gave anything: a non-null `p` is reported
  /// as a foreign pointer.
  void deallocate(void* p, std::size_t bytes, std::size_t alignment = default_alignment) noexcept {
    if (p != nullptr) {
      report_misuse(misuse::foreign_pointer, name(), p, bytes, alignment);
    }
  }
  bool owns(const void*) const noexcept { return false; }

  friend bool operator==(null_resource, null_resource) noexcept { return true; }
  friend bool operator!=(null_resource, null_resource) noexcept { return false; }
};

/// Hands out a caller-supplied buffer front to back. Memory is reclaimed only when the most recent
/// block is freed, or all at once by `release()`. The buffer is the caller's; nothing is freed.
class buffer_resource {
public:
  /// \requires `[buffer, buffer + size)` stays valid and unused by others while this lives.
  buffer_resource(void* buffer, std::size_t size) noexcept
      : begin_(static_cast<char*>(buffer)), cur_(begin_), end_(begin_ + size) {}

  buffer_resource(const buffer_resource&) = delete;
  buffer_resource& operator=(const buffer_resource&) = delete;

  const char* name() const noexcept { return "memkit::buffer_resource"; }
  std::size_t max_size() const noexcept { return static_cast<std::size_t>(end_ - begin_); }
  std::size_t max_alignment() const noexcept { return unbounded_alignment; }

  void* allocate(std::size_t bytes, std::size_t alignment = default_alignment) {
    return detail::allocate_or_throw(*this, bytes, alignment);
  }
  void* try_allocate(std::size_t bytes, std::size_t alignment = default_alignment) noexcept {
    if (!detail::is_valid_alignment(alignment)) {
      return nullptr;
    }
    return detail::bump(cur_, end_, bytes == 0 ? 1 : bytes, alignment);
  }

  /// Reclaims the block if it is the most recent one; a pointer outside the buffer is reported.
  void deallocate(void* p, std::size_t bytes, std::size_t alignment = default_alignment) noexcept {
    if (p == nullptr) {
      return;
    }
    if (!owns(p)) {
      report_misuse(misuse::foreign_pointer, name(), p, bytes, alignment);
      return;
    }
    if (static_cast<char*>(p) + (bytes == 0 ? 1 : bytes) == cur_) {
      cur_ = static_cast<char*>(p);
    }
  }

  bool owns(const void* p) const noexcept {
    return detail::in_range(p, begin_, static_cast<std::size_t>(cur_ - begin_));
  }

  /// Makes the whole buffer available again. \requires no block is still in use.
  void release() noexcept { cur_ = begin_; }

  std::size_t used() const noexcept { return static_cast<std::size_t>(cur_ - begin_); }
  std::size_t remaining() const noexcept { return static_cast<std::size_t>(end_ - cur_); }

private:
  char* begin_;
  char* cur_;
  char* end_;
};

/// Any `std::pmr::memory_resource` as a memkit upstream. Exceptions from the wrapped resource
/// become null from `try_allocate`.
class pmr_upstream : public detail::unbounded_resource<pmr_upstream> {
public:
  /// \requires `r` is not null and outlives this object.
  explicit pmr_upstream(std::pmr::memory_resource* r = std::pmr::get_default_resource()) noexcept
      : r_(r) {}

  const char* name() const noexcept { return "memkit::pmr_upstream"; }
  void* try_allocate(std::size_t bytes, std::size_t alignment = default_alignment) noexcept {
    if (!servable(bytes, alignment)) {
      return nullptr;
    }
    try {
      return r_->allocate(bytes, alignment);
    } catch (...) {
      return nullptr;
    }
  }
  void deallocate(void* p, std::size_t bytes, std::size_t alignment = default_alignment) noexcept {
    if (p != nullptr) {
      r_->deallocate(p, bytes, alignment);
    }
  }

  std::pmr::memory_resource* get() const noexcept { return r_; }

  friend bool operator==(const pmr_upstream& a, const pmr_upstream& b) noexcept {
    return a.r_ == b.r_ || a.r_->is_equal(*b.r_);
  }
  friend bool operator!=(const pmr_upstream& a, const pmr_upstream& b) noexcept {
    return !(a == b);
  }

private:
  std::pmr::memory_resource* r_;
};

} // namespace MEMKIT_ABI
} // namespace memkit
