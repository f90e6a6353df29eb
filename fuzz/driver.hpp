// SPDX-License-Identifier: BSL-1.0
// fuzz/driver.hpp: the libFuzzer driver every fuzz target shares: decodes the input into a stream
// of allocate / deallocate / reset / rollback / release calls on one strategy and checks each
// result against a model of the live blocks (docs/fuzzing.md says what is checked).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

#include "memkit/config.hpp"
#include "memkit/error.hpp"
#include "memkit/resource.hpp"
#include "memkit/traits.hpp"
#include "support/spy_resource.hpp"

#if defined(MEMKIT_ASAN)
#include <sanitizer/asan_interface.h>
#endif

namespace memkit::fuzz {

/// Reads the fuzzer's bytes; once they are used up every read yields 0, so any input decodes.
class byte_reader {
public:
  byte_reader(const std::uint8_t* data, std::size_t size) noexcept : p_(data), end_(data + size) {}

  bool empty() const noexcept { return p_ == end_; }

  std::uint8_t byte() noexcept { return p_ != end_ ? *p_++ : 0; }

  /// \returns a value in [0, n) for n > 0, read from as few bytes as cover n.
  std::size_t below(std::size_t n) noexcept {
    std::size_t v = 0;
    for (unsigned i = 0; i < sizeof(std::size_t) && (std::size_t{1} << (8 * i)) < n; ++i) {
      v = v << 8 | byte();
    }
    return v % n;
  }

  /// \returns 2^k for k in [0, max_log].
  std::size_t power_of_two(unsigned max_log) noexcept {
    return std::size_t{1} << below(max_log + 1);
  }

  /// \returns `v` moved by -2..+2, saturating at 0 and SIZE_MAX: the edges of a limit.
  std::size_t near(std::size_t v) noexcept {
    const std::size_t d = below(5);
    if (d < 2) {
      return v > 2 - d ? v - (2 - d) : 0;
    }
    return v < SIZE_MAX - (d - 2) ? v + (d - 2) : SIZE_MAX;
  }

private:
  const std::uint8_t* p_;
  const std::uint8_t* end_;
};

/// A request size: mostly small, sometimes near the resource's `max_size()`, a power of two or
/// impossibly large.
inline std::size_t fuzz_size(byte_reader& in, std::size_t max_size) noexcept {
  switch (in.byte() % 8) {
  case 0:
    return in.below(17); // zero included
  case 1:
    return in.below(257);
  case 2:
    return in.below(8193);
  case 3:
    return in.near(max_size);
  case 4:
    return in.near(std::size_t{1} << in.below(21));
  case 5:
    return in.below(std::size_t{1} << 20);
  case 6: {
    constexpr std::size_t huge[] = {SIZE_MAX,       SIZE_MAX - 1,         SIZE_MAX / 2 + 1,
                                    unbounded_size, std::size_t{1} << 40, SIZE_MAX - 4095};
    return huge[in.below(std::size(huge))];
  }
  default:
    return in.below(65537);
  }
}

/// A request alignment: mostly a small power of two; sometimes a large one, one near the resource's
/// `max_alignment()`, zero, or not a power of two at all.
inline std::size_t fuzz_alignment(byte_reader& in, std::size_t max_alignment) noexcept {
  switch (in.byte() % 8) {
  case 3:
    return in.power_of_two(13);
  case 4:
    return max_alignment << 1 >> in.below(3); // twice (0 if that overflows), equal, half
  case 5:
    return 0;
  case 6: {
    constexpr std::size_t bad[] = {3,   6,    24, 48, 4095, 4097, SIZE_MAX, (SIZE_MAX >> 1) + 2,
                                   100, 65535};
    return bad[in.below(std::size(bad))];
  }
  case 7:
    return std::size_t{1} << (14 + in.below(50));
  default:
    return in.power_of_two(6);
  }
}

/// Caller storage for the strategies that take a buffer: exactly the bytes decoded, 0 to 63 bytes
/// past a page boundary, in a heap block of its own so that AddressSanitizer flags any access
/// outside it. Default-constructed: no storage.
class caller_storage {
public:
  caller_storage() noexcept = default;
  caller_storage(byte_reader& in, std::size_t max_bytes) {
    const std::size_t offset = in.below(64);
    size_ = in.below(max_bytes + 1);
    base_.reset(
        static_cast<std::byte*>(::operator new (offset + size_, std::align_val_t{page_size})));
    data_ = base_.get() + offset;
  }

  void* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }

private:
  struct page_delete {
    void operator()(std::byte* p) const noexcept {
      ::operator delete (p, std::align_val_t{page_size});
    }
  };
  std::unique_ptr<std::byte, page_delete> base_;
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

/// A strategy together with the caller storage it manages, built in place by `build(data, size)`.
template <class Resource>
struct with_storage {
  template <class Build>
  with_storage(caller_storage s, Build&& build)
      : storage(std::move(s)), r(build(storage.data(), storage.size())) {}
  caller_storage storage;
  Resource r;
};

template <class Resource, class Build>
std::unique_ptr<with_storage<Resource>> make_with_storage(caller_storage s, Build&& build) {
  return std::make_unique<with_storage<Resource>>(std::move(s), std::forward<Build>(build));
}

template <class Resource>
Resource& resource_of(Resource& r) noexcept {
  return r;
}
template <class Resource>
Resource& resource_of(with_storage<Resource>& h) noexcept {
  return h.r;
}

/// What one run's strategy draws chunks from: a spy_resource (every chunk must come back with its
/// size and alignment, none may stay out) behind limits that keep a run's memory small, counting
/// every request it refuses: a strategy may fail a valid request only when its upstream refused.
struct upstream_state {
  /// Limits of the upstream: 4 MiB per chunk, 1 MiB alignment, 16 MiB in use at once. Above what
  /// most decoded requests need, far below a fuzzer's RSS limit.
  static constexpr std::size_t max_size = std::size_t{4} << 20;
  static constexpr std::size_t max_alignment = std::size_t{1} << 20;
  static constexpr std::size_t budget = std::size_t{16} << 20;

  test::spy_resource spy{budget};
  std::size_t refusals = 0;
};

/// The upstream every fuzzed strategy holds: a handle to the running input's `upstream_state`.
/// Default-constructible, so strategies whose buffer constructors build their upstream in place
/// (stack, multipool's static mode) take it too. Inputs run one at a time, hence one current state.
class upstream {
public:
  upstream() noexcept : s_(current()) {}

  /// Makes `s` the state of every handle built while it lives.
  class scope {
  public:
    explicit scope(upstream_state& s) noexcept { current() = &s; }
    ~scope() { current() = nullptr; }
    scope(const scope&) = delete;
    scope& operator=(const scope&) = delete;
  };

  const char* name() const noexcept { return "memkit::fuzz::upstream"; }
  std::size_t max_size() const noexcept { return upstream_state::max_size; }
  std::size_t max_alignment() const noexcept { return upstream_state::max_alignment; }

  void* allocate(std::size_t bytes, std::size_t alignment = default_alignment) {
    return detail::allocate_or_throw(*this, bytes, alignment);
  }
  void* try_allocate(std::size_t bytes, std::size_t alignment = default_alignment) noexcept {
    void* p = bytes <= max_size() && alignment <= max_alignment()
                  ? s_->spy.try_allocate(bytes, alignment)
                  : nullptr;
    s_->refusals += p == nullptr ? 1 : 0;
    return p;
  }
  void deallocate(void* p, std::size_t bytes, std::size_t alignment = default_alignment) noexcept {
    s_->spy.deallocate(p, bytes, alignment);
  }
  bool owns(const void* p) const noexcept { return s_->spy.owns(p); }

private:
  static upstream_state*& current() noexcept {
    static upstream_state* s = nullptr;
    return s;
  }
  upstream_state* s_;
};

/// A target's capabilities beyond what the driver detects itself (owns, reset, release, markers,
/// in_use). Each target derives from this and overrides what differs.
struct target_defaults {
  /// Blocks must be freed in reverse order (the stack): the driver frees only the newest one.
  static constexpr bool lifo = false;
  /// owns(p) holds for every byte of a live block, not just its first.
  static constexpr bool owns_interior = true;
  /// owns(p) is false for blocks that died in reset() or rollback().
  static constexpr bool forgets_on_reset = false;
  /// Destruction with blocks live is correct use: nothing leaks and nothing is reported.
  static constexpr bool may_abandon = true;
  /// deallocate() poisons the block for AddressSanitizer (blocks that die in reset, rollback or
  /// release are checked for every target).
  static constexpr bool poisons_on_deallocate = true;
  /// \returns whether the strategy's own capacity may explain a failed valid request, with `live`
  /// blocks in use. Upstream refusals are excused without it.
  template <class Resource>
  static bool may_exhaust(const Resource& /*r*/, std::size_t /*live*/, std::size_t /*bytes*/,
                          std::size_t /*alignment*/) noexcept {
    return false;
  }
};

namespace detail {

/// What the model stores for a marker: the strategy's marker type, or nothing without markers.
template <class R, bool = has_markers_v<R>>
struct marker_slot {
  struct type {};
};
template <class R>
struct marker_slot<R, true> {
  using type = marker_t<R>;
};

/// Never owned by any strategy: not from the heap, not from any caller storage.
inline std::byte foreign_bytes[16];

} // namespace detail

/// One input's run: the strategy, the model of its live blocks, and the checks.
template <class Target, class Resource>
class model {
  static constexpr bool has_owns = has_owns_v<Resource>;
  static constexpr bool has_reset = has_reset_v<Resource>;
  static constexpr bool has_release = has_release_v<Resource>;
  static constexpr bool has_markers = has_markers_v<Resource>;
  /// Caps keep the model's scans cheap; the ops past them free blocks or drop markers instead.
  static constexpr std::size_t max_live = 512;
  static constexpr std::size_t max_markers = 16;

public:
  model(Resource& r, upstream_state& up) noexcept : r_(r), up_(up) {}

  void step(byte_reader& in) {
    ++op_;
    switch (in.byte() % 20) {
    case 8:
    case 9:
    case 10:
    case 11:
      return live_.empty() ? deallocate_null(in) : deallocate(pick(in));
    case 12:
      return verify();
    case 13:
      if constexpr (has_reset) {
        return reset();
      }
      break;
    case 14:
      if constexpr (has_release) {
        return release();
      }
      break;
    case 15:
      if constexpr (has_markers) {
        return take_marker();
      }
      break;
    case 16:
      if constexpr (has_markers) {
        return marks_.empty() ? take_marker() : rollback(in.below(marks_.size()));
      }
      break;
    case 17:
      return up_.spy.set_budget(up_.spy.bytes_in_use() + in.below(std::size_t{1} << 20));
    case 18:
      return up_.spy.set_budget(upstream_state::budget);
    case 19:
      return deallocate_null(in);
    default:
      break;
    }
    if (live_.size() >= max_live) {
      return deallocate(pick(in));
    }
    allocate(in);
  }

  /// Checks every live block, then frees them all (newest first for a LIFO strategy), unless
  /// `abandon`: then the strategy's destruction must reclaim them.
  void finish(bool abandon) {
    verify();
    if (abandon) {
      return;
    }
    while (!live_.empty()) {
      deallocate(Target::lifo ? live_.size() - 1 : 0);
    }
    verify();
  }

private:
  struct block {
    std::byte* p;
    std::size_t size;
    std::size_t alignment;
    std::byte fill;
    std::size_t seq; ///< allocation number, from 1: orders blocks against markers
  };
  struct mark {
    typename detail::marker_slot<Resource>::type marker;
    std::size_t seq; ///< blocks with a larger number die in a rollback to it
  };

  void expect(bool ok, const char* what, std::size_t size = 0, std::size_t alignment = 0) const {
    if (!ok) {
      std::fprintf(stderr, "memkit fuzz: %s: op %zu: %s (size %zu, alignment %zu)\n", r_.name(),
                   op_, what, size, alignment);
      std::abort();
    }
  }

  static std::size_t extent(std::size_t size) noexcept { return size == 0 ? 1 : size; }

  /// Bytes filled and checked at each end of a block: all of a block up to twice this, which
  /// keeps a run of multi-megabyte blocks fast, and still covers where a neighbour would overlap.
  static constexpr std::size_t filled_end = 32 * 1024;

  /// Calls `f(first, count)` for the filled parts of `b`: all of it, or both ends of a large one.
  template <class F>
  static void filled_parts(const block& b, F&& f) {
    const std::size_t n = extent(b.size);
    if (n <= 2 * filled_end) {
      f(b.p, n);
    } else {
      f(b.p, filled_end);
      f(b.p + n - filled_end, filled_end);
    }
  }

  /// Compared a piece at a time with memcmp: a byte loop here is instrumented for coverage compare
  /// by compare and took most of the time of a run with large blocks.
  static bool intact(const block& b) noexcept {
    std::byte pattern[1024];
    std::memset(pattern, static_cast<int>(b.fill), sizeof pattern);
    bool ok = true;
    filled_parts(b, [&](const std::byte* p, std::size_t n) {
      for (std::size_t i = 0; ok && i < n; i += sizeof pattern) {
        ok = std::memcmp(p + i, pattern, std::min(sizeof pattern, n - i)) == 0;
      }
    });
    return ok;
  }

  std::size_t pick(byte_reader& in) noexcept {
    return Target::lifo ? live_.size() - 1 : in.below(live_.size());
  }

  bool overlaps(const std::byte* p, std::size_t n) const noexcept {
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    auto it = extents_.lower_bound(a);
    if (it != extents_.end() && it->first - a < n) {
      return true;
    }
    return it != extents_.begin() && a - std::prev(it)->first < std::prev(it)->second;
  }

  void allocate(byte_reader& in) {
    const bool throwing = in.byte() % 4 == 0;
    const std::size_t bytes = fuzz_size(in, r_.max_size());
    const std::size_t alignment = fuzz_alignment(in, r_.max_alignment());
    const bool alignment_ok =
        memkit::detail::is_valid_alignment(alignment) && alignment <= r_.max_alignment();
    const bool valid = alignment_ok && bytes <= r_.max_size();
    const std::size_t refusals = up_.refusals;
    void* p = nullptr;
    if (throwing) {
      try {
        p = r_.allocate(bytes, alignment);
        expect(p != nullptr, "allocate returned null", bytes, alignment);
      } catch (const bad_alignment& e) {
        expect(!alignment_ok, "bad_alignment for a valid alignment", bytes, alignment);
        check_error(e, bytes, alignment);
      } catch (const bad_size& e) {
        expect(alignment_ok && bytes > r_.max_size(), "bad_size for a valid size", bytes,
               alignment);
        check_error(e, bytes, alignment);
      } catch (const out_of_memory& e) {
        expect(valid, "out_of_memory for an invalid request", bytes, alignment);
        check_error(e, bytes, alignment);
      }
    } else {
      p = r_.try_allocate(bytes, alignment);
    }
    if (p == nullptr) {
      // Beyond the upstream's limits a request is impossible, even if no upstream call was made.
      const bool impossible =
          bytes > upstream_state::max_size || alignment > upstream_state::max_alignment;
      expect(!valid || up_.refusals != refusals || impossible ||
                 Target::may_exhaust(r_, live_.size(), bytes, alignment),
             "refused a valid request with memory to spare", bytes, alignment);
      return;
    }
    expect(valid, "served an invalid request", bytes, alignment);
    auto* const b = static_cast<std::byte*>(p);
    expect(memkit::detail::is_aligned(b, alignment), "misaligned block", bytes, alignment);
    expect(!overlaps(b, extent(bytes)), "block overlaps a live block", bytes, alignment);
    if constexpr (has_owns) {
      expect(r_.owns(b), "owns() denies a block it just handed out", bytes, alignment);
      if (Target::owns_interior) {
        expect(r_.owns(b + extent(bytes) - 1), "owns() denies a block's last byte", bytes,
               alignment);
      }
    }
    ++seq_;
    const auto fill = static_cast<std::byte>(seq_ * 37 + 1);
    live_.push_back({b, bytes, alignment, fill, seq_});
    filled_parts(live_.back(),
                 [&](std::byte* p, std::size_t n) { std::memset(p, static_cast<int>(fill), n); });
    extents_.emplace(reinterpret_cast<std::uintptr_t>(b), extent(bytes));
  }

  template <class Error>
  void check_error(const Error& e, std::size_t bytes, std::size_t alignment) const {
    expect(std::strcmp(e.resource(), r_.name()) == 0 && e.size() == bytes &&
               e.alignment() == alignment,
           "exception does not name the resource and the request", bytes, alignment);
  }

  void deallocate(std::size_t k) {
    const block b = live_[k];
    expect(intact(b), "live block overwritten (checked at deallocate)", b.size, b.alignment);
    if constexpr (has_owns) {
      expect(r_.owns(b.p), "owns() denies a live block", b.size, b.alignment);
    }
    r_.deallocate(b.p, b.size, b.alignment);
    if (Target::poisons_on_deallocate) {
      expect_poisoned(b);
    }
    forget(k);
    // A marker taken after b was allocated may now lie above the top.
    while (!marks_.empty() && marks_.back().seq >= b.seq) {
      marks_.pop_back();
    }
  }

  /// In AddressSanitizer builds, a dead block's first 8-byte granule must be poisoned: strategies
  /// poison what they hold free, and a block that went back to the heap is poisoned by ASan itself.
  /// A granule the block shares with its neighbours may stay addressable, so only whole ones count.
  void expect_poisoned([[maybe_unused]] const block& b) const {
#if defined(MEMKIT_ASAN)
    if (reinterpret_cast<std::uintptr_t>(b.p) % 8 == 0 && extent(b.size) >= 8) {
      expect(__asan_address_is_poisoned(b.p) != 0, "a dead block is not poisoned", b.size,
             b.alignment);
    }
#endif
  }

  void forget(std::size_t k) {
    extents_.erase(reinterpret_cast<std::uintptr_t>(live_[k].p));
    live_[k] = live_.back();
    live_.pop_back();
  }

  /// deallocate(nullptr, ...) does nothing, whatever the size and alignment.
  void deallocate_null(byte_reader& in) {
    const std::size_t bytes = fuzz_size(in, r_.max_size());
    r_.deallocate(nullptr, bytes, fuzz_alignment(in, r_.max_alignment()));
  }

  void verify() const {
    for (const block& b : live_) {
      expect(intact(b), "live block overwritten", b.size, b.alignment);
    }
    if constexpr (has_in_use_v<Resource>) {
      expect(r_.in_use() == live_.size(), "in_use() disagrees with the live blocks", r_.in_use());
    }
    if constexpr (has_live_blocks_v<Resource>) {
      expect(r_.live_blocks() == live_.size(), "live_blocks() disagrees with the live blocks",
             r_.live_blocks());
    }
    if constexpr (has_owns) {
      const std::byte local{};
      expect(!r_.owns(&local) && !r_.owns(detail::foreign_bytes) &&
                 !r_.owns(detail::foreign_bytes + sizeof detail::foreign_bytes - 1),
             "owns() claims a pointer it never handed out");
    }
  }

  /// Drops the blocks with a number above `seq` from the model: they died in a reset, release or
  /// rollback. `forgotten` says whether owns() must now deny them.
  void bury_after(std::size_t seq, bool forgotten) {
    for (std::size_t k = live_.size(); k-- > 0;) {
      if (live_[k].seq > seq) {
        if constexpr (has_owns) {
          expect(!forgotten || !r_.owns(live_[k].p), "owns() still claims a dead block",
                 live_[k].size, live_[k].alignment);
        }
        expect_poisoned(live_[k]);
        forget(k);
      }
    }
    // forget() moves blocks around; a LIFO strategy needs them in allocation order.
    std::sort(live_.begin(), live_.end(),
              [](const block& a, const block& b) { return a.seq < b.seq; });
  }

  void reset() {
    verify();
    r_.reset();
    bury_after(0, Target::forgets_on_reset);
    marks_.clear();
  }

  void release() {
    verify();
    r_.release();
    bury_after(0, true);
    marks_.clear();
  }

  void take_marker() {
    if (marks_.size() == max_markers) {
      marks_.erase(marks_.begin());
    }
    marks_.push_back({r_.marker(), seq_});
  }

  void rollback(std::size_t k) {
    verify();
    marks_.resize(k + 1);
    r_.rollback(marks_[k].marker);
    bury_after(marks_[k].seq, Target::forgets_on_reset);
  }

  Resource& r_;
  upstream_state& up_;
  std::vector<block> live_;
  std::map<std::uintptr_t, std::size_t> extents_; ///< live blocks' extents by address
  std::vector<mark> marks_;
  std::size_t op_ = 0;
  std::size_t seq_ = 0;
};

/// Runs one input against the strategy `Target::make` builds from its first bytes; aborts with a
/// message on the first violation. \returns 0, as libFuzzer expects.
template <class Target>
int run(const std::uint8_t* data, std::size_t size) {
  byte_reader in(data, size);
  upstream_state state;
  {
    const upstream::scope bind(state);
    auto holder = Target::make(in);
    auto& r = resource_of(*holder);
    const bool abandon = Target::may_abandon && in.byte() % 2 == 1;
    model<Target, std::remove_reference_t<decltype(r)>> m(r, state);
    while (!in.empty()) {
      m.step(in);
    }
    m.finish(abandon);
  }
  if (state.spy.blocks_in_use() != 0 || !state.spy.errors().empty()) {
    std::fprintf(stderr, "memkit fuzz: %zu chunk(s) not returned to the upstream; %s\n",
                 state.spy.blocks_in_use(),
                 state.spy.errors().empty() ? "no mismatch" : state.spy.errors().front().c_str());
    std::abort();
  }
  return 0;
}

} // namespace memkit::fuzz
