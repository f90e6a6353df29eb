// SPDX-License-Identifier: BSL-1.0
// memkit/debug_resource.hpp: a checking wrapper around any strategy: guard bytes, fill patterns,
// a registry of blocks, and a report naming the resource, the address and the misuse.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iterator>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "config.hpp"
#include "detail/base/align.hpp"
#include "detail/base/poison.hpp"
#include "detail/guard.hpp"
#include "error.hpp"
#include "resource.hpp"
#include "traits.hpp"

namespace memkit {
inline namespace MEMKIT_ABI {

/// What a `debug_resource` does with a misuse.
enum class debug_reaction {
  abort,          ///< print the report to stderr and abort (the default)
  handler,        ///< call `debug_options::handler` and carry on (see `debug_resource`)
  deferred_throw, ///< record it; the next `allocate()` or `check()` throws `misuse_error`
};

/// Per-instance settings of a `debug_resource`.
struct debug_options {
  debug_reaction reaction = debug_reaction::abort;
  /// Called for every misuse in `handler` mode; empty: the report is printed to stderr instead.
  /// It is called from noexcept functions, so it must not throw.
  std::function<void(const misuse_report&)> handler;
  /// Check that blocks are freed in reverse allocation order (a stack's contract).
  bool lifo = false;
  /// Guard bytes on each side of a block, rounded up to a multiple of 8 and at least 8. 16 covers
  /// the usual off-by-one and a stray write of one `long double` past the end.
  std::size_t guard_size = 16;
  /// Fill fresh blocks with `debug_fresh_byte` and freed ones with `debug_freed_byte`.
  bool fill = true;
};

/// 0.1's names, kept for 0.2.x (CHANGELOG.md). `debug_report` became `misuse_report`, whose
/// field `mistake` is now `kind`; a handler taking `const debug_report&` still compiles.
using debug_report [[deprecated("use memkit::misuse_report (field `mistake` is now `kind`)")]] =
    misuse_report;
using debug_mistake [[deprecated("use memkit::misuse")]] = misuse;

/// Written into every fresh block, so reading uninitialised memory shows a recognisable value.
/// The values are MSVC's debug heap's (0xCD fresh, 0xDD freed, 0xFD guard), familiar to many, and
/// those of the global replacement's debug mode (detail/guard.hpp holds them for both).
inline constexpr unsigned char debug_fresh_byte = detail::guard::fresh_byte;
/// Written into a block when it is freed or dies in `reset()`: a later read shows it.
inline constexpr unsigned char debug_freed_byte = detail::guard::freed_byte;
/// The guard bytes around every block.
inline constexpr unsigned char debug_guard_byte = detail::guard::guard_byte;

namespace detail {

/// Written before every block of a `debug_resource`, right before its front guard.
struct debug_header {
  std::size_t size;
  std::size_t alignment;
  std::size_t allocation;
  std::size_t cookie; ///< `allocation ^ debug_cookie`: a damaged header does not match
};

/// An arbitrary odd 64-bit constant; it only has to differ from what a stray write leaves.
inline constexpr std::size_t debug_cookie = static_cast<std::size_t>(0x9E3779B97F4A7C15ull);

constexpr std::size_t debug_guard(std::size_t requested) noexcept {
  return guard::size_for(requested, alignof(debug_header));
}

/// Bytes before the block: header and front guard, rounded so the block keeps `alignment`.
/// 0 if that overflows.
constexpr std::size_t debug_front(std::size_t guard, std::size_t alignment) noexcept {
  return guard > unbounded_size - sizeof(debug_header)
             ? 0
             : round_up(sizeof(debug_header) + guard, alignment);
}

} // namespace detail

/// \returns the bytes a `debug_resource` asks its wrapped resource for to serve `bytes` aligned to
/// `alignment`: what a fixed-block strategy's block size must be to sit under one (e.g.
/// `pool<>(debug_block_size(32))`). 0 if the sum overflows.
constexpr std::size_t
debug_block_size(std::size_t bytes, std::size_t alignment = default_alignment,
                 std::size_t guard_size = debug_options{}.guard_size) noexcept {
  const std::size_t a = std::max(alignment, alignof(detail::debug_header));
  const std::size_t guard = detail::debug_guard(guard_size);
  const std::size_t front = detail::debug_front(guard, a);
  const std::size_t n = bytes == 0 ? 1 : bytes;
  if (front == 0 || front > unbounded_size - guard || n > unbounded_size - front - guard) {
    return 0;
  }
  return front + n + guard;
}

/// A saved position of a `debug_resource` over a strategy with markers (arena, stack), from its
/// `marker()`: the wrapped strategy's marker plus what the registry needs to tell which blocks a
/// `rollback()` frees. A default-constructed one belongs to no resource.
template <class Marker>
class debug_marker {
public:
  debug_marker() noexcept = default;

private:
  template <class>
  friend class debug_resource;

  debug_marker(const void* owner, const Marker& inner, std::size_t serial, std::size_t allocations,
               std::size_t used) noexcept
      : owner_(owner), inner_(inner), serial_(serial), allocations_(allocations), used_(used) {}

  const void* owner_ = nullptr;
  Marker inner_{};
  std::size_t serial_ = 0;      ///< which marker of its resource this is, from 1
  std::size_t allocations_ = 0; ///< blocks numbered above it were allocated after it
  std::size_t used_ = 0;        ///< the wrapped strategy's `used()` when it was taken
};

/// A resource that checks how another is used (docs/debugging.md). Every block is obtained from the
/// wrapped `Resource` with a header and guard bytes on both sides, and is recorded in a registry
/// of live blocks (a hash map: O(1) per call), so `deallocate` can tell a foreign pointer, a
/// double free, a wrong size or alignment, a LIFO violation (opt-in) and a block that died in
/// `reset()` apart, and check the guards for an overrun or underrun. Blocks still live at
/// destruction are reported as leaks, each with its size, alignment and allocation number.
///
/// `Resource` is held by value and built in place from the constructor's arguments;
/// `debug_resource<resource_ref<R>>` checks a resource that lives elsewhere.
///
/// On a misuse (`debug_options::reaction`): `abort` prints the report and aborts; `handler` calls
/// the handler and goes on: a free with a wrong pointer, size, alignment or order is then ignored
/// (the block stays live, the wrapped resource untouched), while damaged guards are reported and
/// the block is still freed, since the call itself was right; `deferred_throw` does the same and
/// throws the first report from the next `allocate()` or `check()`. Leaks are reported by the
/// destructor, which cannot throw: there `deferred_throw` prints and aborts like `abort`; in the
/// other modes leaked blocks are returned to the wrapped resource after the report.
///
/// Not thread-safe, like the strategies it wraps. Each block costs `debug_block_size() - bytes`
/// extra bytes in the wrapped resource plus a registry entry (on the heap) per address ever handed
/// out. Entries of freed blocks are kept, to tell a double free from a foreign pointer, and reused
/// when the address comes back, so a strategy that recycles addresses settles into no registry
/// allocations; beyond 65536 dead entries they are forgotten.
template <class Resource>
class debug_resource {
  MEMKIT_STATIC_ASSERT_RESOURCE(Resource,
                                "memkit::debug_resource<R>: R must implement the resource "
                                "interface (docs/concepts.md)");

public:
  /// \effects wraps a `Resource` built from `args` (none: default-constructed), checking it
  /// as `options` say. Allocates nothing.
  template <class... Args>
  explicit debug_resource(debug_options options, Args&&... args)
      : r_(std::forward<Args>(args)...), options_(std::move(options)),
        guard_(detail::debug_guard(options_.guard_size)) {
    std::snprintf(name_, sizeof(name_), "memkit::debug_resource<%s>", r_.name());
  }

  /// \effects wraps a default-constructed `Resource` with the default options (abort on misuses).
  debug_resource() : debug_resource(debug_options{}) {}

  debug_resource(const debug_resource&) = delete;
  debug_resource& operator=(const debug_resource&) = delete;

  /// \effects reports every live block as a leak, oldest first, then returns them to the
  /// wrapped resource, youngest first (unless the reaction aborted).
  ~debug_resource() { report_leaks(); }

  /// \returns `memkit::debug_resource<` + the wrapped resource's name + `>`.
  const char* name() const noexcept { return name_; }

  /// \returns the wrapped resource's `max_size()` less the debug overhead at default alignment.
  std::size_t max_size() const noexcept {
    const std::size_t overhead = debug_block_size(0, default_alignment, guard_) - 1;
    const std::size_t up = r_.max_size();
    return up > overhead ? up - overhead : 0;
  }

  std::size_t max_alignment() const noexcept { return r_.max_alignment(); }

  /// \returns a block of `bytes` (1 if 0) aligned to `alignment`, filled with `debug_fresh_byte`.
  /// \throws misuse_error first if a misuse is pending (`deferred_throw`); then bad_alignment,
  /// bad_size or out_of_memory, naming this resource (docs/concepts.md, "Errors").
  void* allocate(std::size_t bytes, std::size_t alignment = default_alignment) {
    throw_pending();
    return detail::allocate_or_throw(*this, bytes, alignment);
  }

  /// \returns a checked block, or null if the wrapped resource cannot serve it with the debug
  /// overhead or the registry cannot grow.
  void* try_allocate(std::size_t bytes, std::size_t alignment = default_alignment) noexcept {
    if (!detail::is_valid_alignment(alignment)) {
      return nullptr;
    }
    const std::size_t a = std::max(alignment, alignof(detail::debug_header));
    const std::size_t total = debug_block_size(bytes, a, guard_);
    if (total == 0) {
      return nullptr;
    }
    char* const base = static_cast<char*>(r_.try_allocate(total, a));
    if (base == nullptr) {
      return nullptr;
    }
    char* const p = base + detail::debug_front(guard_, a);
    const std::size_t number = allocations_ + 1;
    if (!remember(p, block_info{bytes, alignment, number, block_state::live})) {
      r_.deallocate(base, total, a);
      return nullptr;
    }
    allocations_ = number;
    const detail::debug_header h{bytes, alignment, number, number ^ detail::debug_cookie};
    const detail::guard::layout g = layout_for(a);
    const std::size_t n = bytes == 0 ? 1 : bytes;
    g.paint_front(base);
    std::memcpy(header_start(p), &h, sizeof(h));
    g.paint_back(base, n);
    if (options_.fill) {
      std::memset(p, debug_fresh_byte, n);
    }
    cover(p, n, a);
    return p;
  }

  /// \effects checks the call against the registry and the block's guards, fills the block with
  /// `debug_freed_byte` and returns it to the wrapped resource. A misuse is reported as the
  /// class comment says; `deallocate(nullptr, …)` does nothing.
  void deallocate(void* p, std::size_t bytes, std::size_t alignment = default_alignment) noexcept {
    if (p == nullptr) {
      return;
    }
    const auto it = blocks_.find(p);
    if (MEMKIT_UNLIKELY(it == blocks_.end() || it->second.state != block_state::live)) {
      report_unknown(p, bytes, alignment);
      return;
    }
    const block_info b = it->second;
    if (MEMKIT_UNLIKELY(bytes != b.size || alignment != b.alignment ||
                        (options_.lifo && order_.back() != p))) {
      report_wrong_call(p, bytes, alignment, b);
      return;
    }
    check_guards(static_cast<char*>(p), b, bytes, alignment);
    if (options_.lifo) {
      order_.pop_back();
    }
    bury(static_cast<char*>(p), it->second, block_state::freed);
    forget_if_too_many();
    const std::size_t a = std::max(b.alignment, alignof(detail::debug_header));
    expose(static_cast<char*>(p), b);
    r_.deallocate(static_cast<char*>(p) - detail::debug_front(guard_, a),
                  debug_block_size(b.size, a, guard_), a);
  }

  /// \returns whether the wrapped resource owns `p`. Present when it can answer.
  template <class R = Resource, class = std::enable_if_t<has_owns_v<R>>>
  bool owns(const void* p) const noexcept {
    return r_.owns(p);
  }

  /// \effects fills every live block with `debug_freed_byte`, marks them dead (a later
  /// `deallocate` of one is reported as `use_after_reset`) and resets the wrapped resource.
  /// Present when the wrapped resource has `reset()`.
  template <class R = Resource, class = std::enable_if_t<has_reset_v<R>>>
  void reset() noexcept {
    bury_all();
    r_.reset();
  }

  /// \returns the current position of the wrapped strategy, to pass to `rollback()`. Present when
  /// it has markers (arena, stack).
  /// \throws std::bad_alloc if the list of valid markers cannot grow.
  template <class R = Resource, class = std::enable_if_t<has_markers_v<R>>>
  auto marker() -> debug_marker<decltype(std::declval<const R&>().marker())> {
    marks_.push_back(marks_taken_ + 1);
    ++marks_taken_;
    return {this, r_.marker(), marks_taken_, allocations_, r_.used()};
  }

  /// \effects fills every block allocated after `m` was taken with `debug_freed_byte` and marks it
  /// dead (a later `deallocate` of one is reported as `use_after_reset`), then rolls the wrapped
  /// strategy back to `m`. O(addresses in the registry). A marker of another resource, from before
  /// a `reset()`, `release()` or a rollback to an older marker, or ahead of the current position
  /// (its blocks freed since) is reported as `bad_marker` and ignored.
  template <class Marker, class R = Resource, class = std::enable_if_t<has_markers_v<R>>>
  void rollback(const debug_marker<Marker>& m) noexcept {
    const auto valid = std::find(marks_.rbegin(), marks_.rend(), m.serial_);
    if (m.owner_ != this || valid == marks_.rend() || m.used_ > r_.used()) {
      react({misuse::bad_marker, name_, &m, 0, 0, 0, 0, 0});
      return;
    }
    marks_.erase(valid.base(), marks_.end()); // markers taken after `m` lie in the freed part
    for (auto& [p, b] : blocks_) {
      if (b.state == block_state::live && b.number > m.allocations_) {
        bury(static_cast<char*>(p), b, block_state::reset);
      }
    }
    while (!order_.empty() && !is_live(order_.back())) {
      order_.pop_back();
    }
    forget_if_too_many();
    r_.rollback(m.inner_);
  }

  /// \returns the wrapped strategy's `used()`: its bytes in use, debug overhead included. Present
  /// when it has markers, so that a `debug_resource` over one has markers too.
  template <class R = Resource, class = std::enable_if_t<has_markers_v<R>>>
  std::size_t used() const noexcept {
    return r_.used();
  }

  /// \effects as `reset()`, then releases the wrapped resource. Present when it has `release()`.
  template <class R = Resource, class = std::enable_if_t<has_release_v<R>>>
  void release() noexcept {
    bury_all();
    r_.release();
  }

  /// \effects checks the guards of every live block, reporting each damaged one once (its guards
  /// are then repainted). O(addresses in the registry).
  /// \throws misuse_error in `deferred_throw` mode if a misuse is pending (then cleared).
  void check() {
    for (const auto& [p, b] : blocks_) {
      if (b.state == block_state::live) {
        check_guards(static_cast<char*>(p), b, b.size, b.alignment);
      }
    }
    throw_pending();
  }

  /// \returns whether `p` is a block handed out and not yet freed. O(1).
  bool is_live(const void* p) const noexcept {
    const auto it = blocks_.find(const_cast<void*>(p));
    return it != blocks_.end() && it->second.state == block_state::live;
  }
  /// \returns the number of blocks handed out and not yet freed.
  std::size_t live_blocks() const noexcept { return live_count_; }
  /// \returns the number of blocks ever handed out; the last one's allocation number.
  std::size_t allocations() const noexcept { return allocations_; }
  /// \returns the number of misuses found so far, in every mode.
  std::size_t misuses() const noexcept { return misuses_; }

  /// The wrapped resource, read-only: allocating or freeing through it would bypass the checks.
  const Resource& resource() const noexcept { return r_; }

private:
  enum class block_state : unsigned char { live, freed, reset };

  struct block_info {
    std::size_t size;
    std::size_t alignment;
    std::size_t number;
    block_state state;
  };

  /// Beyond this many remembered dead blocks they are forgotten: a later double free of one is
  /// then reported as a foreign pointer, still a report. 65536 entries is about 3 MiB.
  static constexpr std::size_t max_remembered_frees = 65536;

  char* header_start(char* p) const noexcept { return p - guard_ - sizeof(detail::debug_header); }

  /// The shared guard layout (detail/guard.hpp) of a block aligned to `a`: the header right
  /// before the front guard, the padding an alignment adds before the header guarded too.
  detail::guard::layout layout_for(std::size_t a) const noexcept {
    const std::size_t front = detail::debug_front(guard_, a);
    return {front - guard_ - sizeof(detail::debug_header), sizeof(detail::debug_header), front,
            guard_};
  }

  /// Records a new live block. An address seen before reuses its entry, so the steady state of a
  /// strategy that recycles addresses allocates nothing for the registry.
  bool remember(char* p, const block_info& b) noexcept {
    try {
      if (options_.lifo) {
        order_.push_back(p);
      }
      try {
        const auto [it, inserted] = blocks_.try_emplace(p, b);
        if (!inserted) {
          dead_count_ -= it->second.state != block_state::live ? 1 : 0;
          live_count_ -= it->second.state == block_state::live ? 1 : 0;
          it->second = b;
        }
      } catch (...) {
        if (options_.lifo) {
          order_.pop_back();
        }
        return false;
      }
    } catch (...) {
      return false;
    }
    ++live_count_;
    return true;
  }

  /// Fills a block that died and marks it, so a second free is named correctly.
  void bury(char* p, block_info& b, block_state how) noexcept {
    if (options_.fill) {
      std::memset(p, debug_freed_byte, b.size == 0 ? 1 : b.size);
    }
    b.state = how;
    --live_count_;
    ++dead_count_;
  }

  void bury_all() noexcept {
    for (auto& [p, b] : blocks_) {
      if (b.state == block_state::live) {
        expose(static_cast<char*>(p), b);
        bury(static_cast<char*>(p), b, block_state::reset);
      }
    }
    order_.clear();
    marks_.clear();
    forget_if_too_many();
  }

  void forget_if_too_many() noexcept {
    if (MEMKIT_LIKELY(dead_count_ <= max_remembered_frees)) {
      return;
    }
    for (auto it = blocks_.begin(); it != blocks_.end();) {
      it = it->second.state == block_state::live ? std::next(it) : blocks_.erase(it);
    }
    dead_count_ = 0;
  }

  /// Poisons the header, the guards and the padding around the block at `p` of `n` bytes (1 if
  /// 0), so that an overrun or underrun into them is reported by AddressSanitizer as it happens.
  void cover(char* p, std::size_t n, std::size_t a) const noexcept {
    if constexpr (detail::poisoning) {
      const std::size_t front = detail::debug_front(guard_, a);
      detail::poison(p - front, front);
      detail::poison(p + n, guard_);
    }
  }

  /// Unpoisons what `cover` poisoned: before the guards are read, and before the whole block goes
  /// back to the wrapped resource, which may use it as it likes.
  void expose(char* p, const block_info& b) const noexcept {
    if constexpr (detail::poisoning) {
      const std::size_t a = std::max(b.alignment, alignof(detail::debug_header));
      const std::size_t front = detail::debug_front(guard_, a);
      detail::unpoison_kept(p - front, debug_block_size(b.size, a, guard_));
    }
  }

  void check_guards(char* p, const block_info& b, std::size_t bytes,
                    std::size_t alignment) noexcept {
    expose(p, b);
    char* const h = header_start(p);
    detail::debug_header stored;
    std::memcpy(&stored, h, sizeof(stored));
    const bool header_ok = stored.size == b.size && stored.alignment == b.alignment &&
                           stored.allocation == b.number &&
                           stored.cookie == (b.number ^ detail::debug_cookie);
    const std::size_t n = b.size == 0 ? 1 : b.size;
    const std::size_t a = std::max(b.alignment, alignof(detail::debug_header));
    const detail::guard::layout g = layout_for(a);
    char* const base = p - g.front;
    if (!header_ok || g.first_bad_before(base) != 0) {
      react({misuse::underrun, name_, p, bytes, alignment, b.size, b.alignment, b.number});
      const detail::debug_header fixed{b.size, b.alignment, b.number,
                                       b.number ^ detail::debug_cookie};
      std::memcpy(h, &fixed, sizeof(fixed));
      g.paint_front(base);
    }
    if (g.first_bad_after(base, n) != 0) {
      react({misuse::overrun, name_, p, bytes, alignment, b.size, b.alignment, b.number});
      g.paint_back(base, n);
    }
    cover(p, n, a);
  }

  MEMKIT_NOINLINE MEMKIT_COLD void report_unknown(void* p, std::size_t bytes,
                                                  std::size_t alignment) noexcept {
    const auto d = blocks_.find(p);
    if (d == blocks_.end()) {
      react({misuse::foreign_pointer, name_, p, bytes, alignment, 0, 0, 0});
      return;
    }
    const block_info& b = d->second;
    react({b.state == block_state::reset ? misuse::use_after_reset : misuse::double_free, name_, p,
           bytes, alignment, b.size, b.alignment, b.number});
  }

  MEMKIT_NOINLINE MEMKIT_COLD void report_wrong_call(void* p, std::size_t bytes,
                                                     std::size_t alignment,
                                                     const block_info& b) noexcept {
    const misuse m = bytes != b.size            ? misuse::size_mismatch
                     : alignment != b.alignment ? misuse::alignment_mismatch
                                                : misuse::lifo_violation;
    react({m, name_, p, bytes, alignment, b.size, b.alignment, b.number});
  }

  MEMKIT_NOINLINE MEMKIT_COLD void react(const misuse_report& r) noexcept {
    ++misuses_;
    char line[256];
    switch (options_.reaction) {
    case debug_reaction::abort:
      std::fprintf(stderr, "memkit: %s\n", format(r, line, sizeof(line)));
      std::abort();
    case debug_reaction::handler:
      if (options_.handler) {
        options_.handler(r);
      } else {
        std::fprintf(stderr, "memkit: %s\n", format(r, line, sizeof(line)));
      }
      return;
    case debug_reaction::deferred_throw:
      if (!pending_) {
        pending_ = true;
        pending_report_ = r;
      }
      return;
    }
  }

  void throw_pending() {
    if (MEMKIT_UNLIKELY(pending_)) {
      pending_ = false;
      throw misuse_error(pending_report_);
    }
  }

  /// Reports every live block as a leak, oldest first, then frees them in the wrapped resource.
  void report_leaks() noexcept {
    if (live_count_ == 0) {
      return;
    }
    std::vector<std::pair<void*, block_info>> leaks;
    try {
      for (const auto& entry : blocks_) {
        if (entry.second.state == block_state::live) {
          leaks.push_back(entry);
        }
      }
    } catch (...) {
      leaks.clear();
    }
    std::sort(leaks.begin(), leaks.end(),
              [](const auto& x, const auto& y) { return x.second.number < y.second.number; });
    const bool print_and_abort = options_.reaction != debug_reaction::handler;
    for (const auto& [p, b] : leaks) {
      const misuse_report r{misuse::leak, name_,  p,           b.size,
                            b.alignment,  b.size, b.alignment, b.number};
      if (print_and_abort) {
        ++misuses_;
        char line[256];
        std::fprintf(stderr, "memkit: %s\n", format(r, line, sizeof(line)));
      } else {
        react(r);
      }
    }
    if (print_and_abort) {
      std::fprintf(stderr, "memkit: %s: %zu block(s) leaked\n", name_, leaks.size());
      std::abort();
    }
    // Youngest first, so a stack underneath gets them back in LIFO order.
    for (auto it = leaks.rbegin(); it != leaks.rend(); ++it) {
      const auto& [p, b] = *it;
      const std::size_t a = std::max(b.alignment, alignof(detail::debug_header));
      expose(static_cast<char*>(p), b);
      r_.deallocate(static_cast<char*>(p) - detail::debug_front(guard_, a),
                    debug_block_size(b.size, a, guard_), a);
    }
    blocks_.clear();
    live_count_ = 0;
  }

  Resource r_;
  debug_options options_;
  std::size_t guard_;
  /// Every block handed out, live or dead, by address: O(1) per call.
  std::unordered_map<void*, block_info> blocks_;
  std::vector<void*> order_;       ///< live blocks in allocation order, kept only with `lifo`
  std::vector<std::size_t> marks_; ///< serials of the markers still valid, oldest first
  std::size_t marks_taken_ = 0;
  std::size_t live_count_ = 0;
  std::size_t dead_count_ = 0;
  std::size_t allocations_ = 0;
  std::size_t misuses_ = 0;
  bool pending_ = false;
  misuse_report pending_report_{};
  char name_[96];
};

} // namespace MEMKIT_ABI
} // namespace memkit
