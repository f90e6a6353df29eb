// SPDX-License-Identifier: BSL-1.0
// memkit/synchronized.hpp: `memkit::synchronized<R, Mutex>`, any resource behind a lock, so that
// several threads can share it (docs/concepts.md, "Threads").
#pragma once

#include <cstddef>
#include <mutex>
#include <type_traits>
#include <utility>

#include "config.hpp"
#include "resource.hpp"
#include "traits.hpp"

namespace memkit {
inline namespace MEMKIT_ABI {

namespace detail {

/// What `synchronized` holds instead of a mutex over a resource that is thread-safe already.
struct no_lock {
  constexpr void lock() noexcept {}
  constexpr void unlock() noexcept {}
};

} // namespace detail

/// A resource that serializes every call to the `Resource` it holds: each member locks `Mutex`,
/// forwards, and unlocks. The simplest way to share a strategy between threads, and the baseline a
/// concurrent strategy must beat: every allocation and free is an uncontended lock/unlock pair at
/// best, a wait at worst.
///
/// Memory model:
/// - Any member may be called from any thread while another thread calls any member: `allocate`,
///   `try_allocate`, `deallocate`, `owns`, `reset`, `release`, `marker`, `rollback`, `used`,
///   `stats`, `in_use` and the array path each run under the lock, so they are totally ordered and
///   each sees the effects of those before it. `name()`, `max_size()` and `max_alignment()` read
///   no state that changes after construction and take no lock.
/// - The lock also orders the blocks' bytes: what a thread wrote into a block before freeing it
///   happens-before the return of the `allocate` that hands the block to another thread, so a
///   recycled block never shows the previous owner's writes racing with the new owner's.
/// - A live block belongs to the caller: handing it to another thread needs the caller's own
///   synchronization, as with `malloc`. `reset()`, `release()` and `rollback()` end blocks other
///   threads may still be using; calling them is the caller's decision, as with one thread.
/// - `unlocked()` bypasses the lock; construction and destruction must not race with any call.
///
/// When `Resource` is thread-safe already (`is_thread_safe_v`, e.g. `malloc_resource`), no lock is
/// taken and no mutex is stored. `synchronized<R>` is itself thread-safe, so a decorator or a
/// second `synchronized` over it adds no lock.
///
/// `Mutex` needs `lock()` and `unlock()`: std::mutex, or memkit::spin_mutex (spin_mutex.hpp) for a
/// strategy whose calls are short; docs/threads.md ("Which mutex") has both measured. The
/// `Resource` is built in place from the constructor's arguments; `synchronized<resource_ref<R>>`
/// locks calls to a resource that lives elsewhere, provided every thread goes through it.
template <class Resource, class Mutex = std::mutex>
class synchronized {
  MEMKIT_STATIC_ASSERT_RESOURCE(Resource,
                                "memkit::synchronized<R>: R must implement the resource interface");

  using lock_type = std::conditional_t<is_thread_safe_v<Resource>, detail::no_lock, Mutex>;
  using guard = std::lock_guard<lock_type>;

public:
  using resource_type = Resource;
  using mutex_type = Mutex;
  static constexpr bool thread_safe = true;

  /// \effects builds the `Resource` from `args` (none: default-constructed).
  template <class... Args, class = std::enable_if_t<std::is_constructible_v<Resource, Args&&...>>>
  explicit synchronized(Args&&... args) noexcept(
      std::is_nothrow_constructible_v<Resource, Args&&...>)
      : r_(std::forward<Args>(args)...) {}

  synchronized(const synchronized&) = delete;
  synchronized& operator=(const synchronized&) = delete;

  const char* name() const noexcept { return r_.name(); }
  std::size_t max_size() const noexcept { return r_.max_size(); }
  std::size_t max_alignment() const noexcept { return r_.max_alignment(); }

  /// \returns the resource's `allocate(bytes, alignment)`, called under the lock.
  /// \throws what the resource throws (bad_alignment, bad_size, out_of_memory naming it; a
  /// debug_resource's pending misuse_error); the lock is released as the exception leaves.
  void* allocate(std::size_t bytes, std::size_t alignment = default_alignment) {
    const guard lock(m_);
    return r_.allocate(bytes, alignment);
  }

  void* try_allocate(std::size_t bytes, std::size_t alignment = default_alignment) noexcept {
    const guard lock(m_);
    return r_.try_allocate(bytes, alignment);
  }

  void deallocate(void* p, std::size_t bytes, std::size_t alignment = default_alignment) noexcept {
    const guard lock(m_);
    r_.deallocate(p, bytes, alignment);
  }

  /// Present when the resource has it, as every member below.
  template <class R = Resource, class = std::enable_if_t<has_owns_v<R>>>
  bool owns(const void* p) const noexcept {
    const guard lock(m_);
    return r_.owns(p);
  }

  template <class R = Resource, class = std::enable_if_t<has_reset_v<R>>>
  void reset() noexcept {
    const guard lock(m_);
    r_.reset();
  }

  template <class R = Resource, class = std::enable_if_t<has_release_v<R>>>
  void release() noexcept {
    const guard lock(m_);
    r_.release();
  }

  template <class R = Resource, class = std::enable_if_t<has_markers_v<R>>>
  marker_t<R> marker() {
    const guard lock(m_);
    return r_.marker();
  }

  template <class Marker, class R = Resource, class = std::enable_if_t<has_markers_v<R>>>
  void rollback(const Marker& m) noexcept {
    const guard lock(m_);
    r_.rollback(m);
  }

  template <class R = Resource, class = std::enable_if_t<has_markers_v<R>>>
  std::size_t used() const noexcept {
    const guard lock(m_);
    return r_.used();
  }

  template <class R = Resource, class = std::enable_if_t<has_array_path_v<R>>>
  void* allocate_array(std::size_t bytes, std::size_t alignment = default_alignment) {
    const guard lock(m_);
    return r_.allocate_array(bytes, alignment);
  }

  template <class R = Resource, class = std::enable_if_t<has_array_path_v<R>>>
  void deallocate_array(void* p, std::size_t bytes,
                        std::size_t alignment = default_alignment) noexcept {
    const guard lock(m_);
    r_.deallocate_array(p, bytes, alignment);
  }

  /// \returns the resource's statistics, read under the lock (a consistent snapshot).
  template <class R = Resource, class = std::enable_if_t<has_stats_v<R>>>
  auto stats() const noexcept {
    const guard lock(m_);
    return r_.stats();
  }

  template <class R = Resource, class = std::enable_if_t<has_in_use_v<R>>>
  std::size_t in_use() const noexcept {
    const guard lock(m_);
    return r_.in_use();
  }

  /// \returns `f(resource)`, called under the lock: for several calls that must see one state.
  template <class F>
  decltype(auto) with_lock(F&& f) {
    const guard lock(m_);
    return std::forward<F>(f)(r_);
  }

  /// \returns the resource itself, without locking. \requires no other thread uses this
  /// `synchronized` while the reference is used.
  Resource& unlocked() noexcept { return r_; }
  const Resource& unlocked() const noexcept { return r_; }

private:
  mutable lock_type m_;
  Resource r_;
};

} // namespace MEMKIT_ABI
} // namespace memkit
