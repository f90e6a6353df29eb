// SPDX-License-Identifier: BSL-1.0
// memkit/detail/thread/registry.hpp: per-thread state keyed by resource instance, found in one
// thread-local load, detected as stale after its instance is gone, and handed back at thread exit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <new>

#include "../../config.hpp"
#include "../base/os.hpp"

namespace memkit {
inline namespace MEMKIT_ABI {
namespace detail {
namespace thread {

/// What a thread holds for one enrolled instance: the instance's id when the binding was made, and
/// the per-thread object (a heap) the instance gave it. A binding whose id is not the slot's
/// current id is stale: its instance was destroyed or released, and the object it names may be
/// gone, so it is never followed.
struct binding {
  std::uint64_t id;
  void* object;
};

/// The registry of instances that keep per-thread state (thread_cached.hpp).
///
/// Each live instance holds one of `capacity` slots and a process-unique 64-bit id; each thread
/// holds a table of `capacity` bindings in plain thread-local storage, so finding "my heap for
/// this instance" is one load of the binding and one compare of its id, with no TLS wrapper call:
/// the table is constant-initialized and trivially destructible. Ids are never reused, so a slot
/// taken over by a new instance, or an instance re-keyed by `release()`, makes every old binding
/// stale at once, without visiting the threads.
///
/// Thread exit: the first binding a thread makes sets the thread's value of a POSIX thread-specific
/// key whose destructor, at thread exit, hands each binding that is still current back to its
/// instance (`detach`). A key, not a `thread_local` object with a destructor, because registering
/// such a destructor (`__cxa_thread_atexit_impl`) allocates with `calloc`, which the malloc
/// replacement built on this registry serves: setting a key's value below
/// PTHREAD_KEY_2NDLEVEL_SIZE (the key is made before any other of the process's libraries run
/// much) allocates nothing. glibc runs the C++ `thread_local` destructors before key destructors,
/// so a program's thread-exit code still frees through the thread's own heap. Destroying or
/// re-keying an instance and detaching a thread's binding of it happen under one mutex, so an
/// instance is never called after its destructor withdrew it, and a thread's exit never races
/// with the instance's `release()`.
///
/// Instances beyond `capacity` get an id no binding ever has (`no_id`): every lookup misses and
/// the instance serves such threads from its shared, locked state.
class registry {
public:
  /// Instances that may keep per-thread state at once: 64 bindings of 16 bytes, 1 KiB of TLS per
  /// thread. A process rarely has more than a handful of thread-caching resources; the malloc
  /// replacement has one.
  static constexpr std::size_t capacity = 64;
  static constexpr std::uint64_t no_id = ~std::uint64_t{0};

  /// Called at thread exit, under the registry's mutex, with the instance and its object.
  using detach_fn = void (*)(void* instance, void* object) noexcept;

  struct key {
    std::size_t slot;
    std::uint64_t id;
  };

  /// \returns the process-wide registry. Never destroyed: threads may exit after static
  /// destructors ran.
  static registry& get() noexcept {
    alignas(registry) static unsigned char storage[sizeof(registry)];
    static registry* const made = ::new (storage) registry;
    return *made;
  }

  /// \returns a slot and a fresh id for `instance`, or `{0, no_id}` when every slot is taken.
  key enroll(void* instance, detach_fn detach) noexcept {
    const std::lock_guard<std::mutex> lock(mutex_);
    for (std::size_t i = 0; i < capacity; ++i) {
      if (slots_[i].instance == nullptr) {
        slots_[i] = {next_id_++, instance, detach};
        return {i, slots_[i].id};
      }
    }
    return {0, no_id};
  }

  /// \returns a new id for the instance in `k.slot`: every binding made so far becomes stale.
  std::uint64_t rekey(const key& k) noexcept {
    if (k.id == no_id) {
      return no_id;
    }
    const std::lock_guard<std::mutex> lock(mutex_);
    slots_[k.slot].id = next_id_++;
    return slots_[k.slot].id;
  }

  /// \effects frees `k.slot`; no detach for it runs after this returns.
  void withdraw(const key& k) noexcept {
    if (k.id == no_id) {
      return;
    }
    const std::lock_guard<std::mutex> lock(mutex_);
    slots_[k.slot] = {0, nullptr, nullptr};
  }

  /// \returns the calling thread's object for `k`, or null (none yet, or stale). The hot path.
  static MEMKIT_ALWAYS_INLINE void* bound(const key& k) noexcept {
    const binding& b = bindings.slot[k.slot];
    return b.id == k.id ? b.object : nullptr;
  }

  /// \effects binds `object` to `k` for the calling thread and makes sure the thread's exit hands
  /// it back. \returns false, binding nothing, once the thread's exit has begun (a destructor of
  /// another key running after the registry's), or for an instance without a slot.
  static bool bind(const key& k, void* object) noexcept {
    if (k.id == no_id || bindings.exiting) {
      return false;
    }
    if (!bindings.armed) {
      // Armed first: should setting the key allocate after all, the allocation binds normally.
      bindings.armed = true;
      if (registry& r = get(); r.has_exit_key_) {
        os::set_thread_value(r.exit_key_, &bindings);
      }
    }
    bindings.slot[k.slot] = {k.id, object};
    return true;
  }

  /// fork(2) support for a malloc replacement (pthread_atfork): the child must not inherit the
  /// registry's mutex held by a thread that does not exist there. `prepare_fork` locks it;
  /// `after_fork` unlocks it, in the parent and in the child.
  void prepare_fork() noexcept { mutex_.lock(); }
  void after_fork() noexcept { mutex_.unlock(); }

private:
  struct slot_state {
    std::uint64_t id;
    void* instance;
    detach_fn detach;
  };

  struct bindings {
    binding slot[capacity];
    bool armed;
    bool exiting;
  };

  // Without a key (the process ran out of them) threads are never detached: their heaps stay
  // bound to no thread, their blocks still free normally from any thread.
  registry() noexcept : has_exit_key_(os::make_thread_key(exit_key_, &on_key_destroyed)) {}

  static void on_key_destroyed(void*) noexcept { get().on_thread_exit(); }

  void on_thread_exit() noexcept {
    bindings.exiting = true;
    const std::lock_guard<std::mutex> lock(mutex_);
    for (std::size_t i = 0; i < capacity; ++i) {
      binding& b = bindings.slot[i];
      if (b.id != 0 && b.id == slots_[i].id) {
        slots_[i].detach(slots_[i].instance, b.object);
      }
      b = {0, nullptr};
    }
  }

  static inline thread_local bindings bindings{};

  std::mutex mutex_;
  os::thread_key exit_key_{};
  bool has_exit_key_;
  std::uint64_t next_id_ = 1; // 0 marks an empty binding
  slot_state slots_[capacity] = {};
};

} // namespace thread
} // namespace detail
} // namespace MEMKIT_ABI
} // namespace memkit
