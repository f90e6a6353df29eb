// SPDX-License-Identifier: BSL-1.0
// memkit/stats.hpp: per-strategy statistics, compiled out unless MEMKIT_STATISTICS is 1.
#pragma once

#include <atomic>
#include <cstddef>
#include <string>
#include <type_traits>

#include "config.hpp"
#include "detail/text_writer.hpp"

/// The one list of counters: it declares the members of `statistics` and drives `operator==`,
/// `write_json` and `to_json`, so a counter added here appears everywhere. Meanings are in
/// docs/statistics.md.
#define MEMKIT_STATISTICS_FIELDS(X)                                                                \
  X(allocations)                                                                                   \
  X(deallocations)                                                                                 \
  X(failures)                                                                                      \
  X(bytes_in_use)                                                                                  \
  X(blocks_in_use)                                                                                 \
  X(peak_bytes_in_use)                                                                             \
  X(peak_blocks_in_use)                                                                            \
  X(upstream_allocations)                                                                          \
  X(upstream_deallocations)                                                                        \
  X(upstream_bytes_in_use)                                                                         \
  X(fallbacks)

namespace memkit {
inline namespace MEMKIT_ABI {

/// What a strategy's `stats()` returns: counts since construction, all zero when statistics are
/// compiled out. Bytes are the sizes callers pass to allocate and deallocate, not the rounded
/// sizes a strategy occupies. An aggregate of `std::size_t`, in the order of
/// MEMKIT_STATISTICS_FIELDS.
struct statistics {
#define MEMKIT_STATISTICS_MEMBER(name) std::size_t name = 0;
  MEMKIT_STATISTICS_FIELDS(MEMKIT_STATISTICS_MEMBER)
#undef MEMKIT_STATISTICS_MEMBER
};

inline bool operator==(const statistics& a, const statistics& b) noexcept {
#define MEMKIT_STATISTICS_EQUAL(name) &&a.name == b.name
  return true MEMKIT_STATISTICS_FIELDS(MEMKIT_STATISTICS_EQUAL);
#undef MEMKIT_STATISTICS_EQUAL
}

inline bool operator!=(const statistics& a, const statistics& b) noexcept { return !(a == b); }

/// \effects writes `s` as one JSON object, a member per counter named as in `statistics`, in
/// declaration order (`{"allocations":3,"deallocations":1,...}`), into `out`, NUL-terminated and
/// truncated to `size` bytes (if not 0). Allocates nothing: usable where malloc may not be (a
/// signal handler, an exit hook). \returns the whole text's length, without the NUL.
inline std::size_t write_json(const statistics& s, char* out, std::size_t size) noexcept {
  detail::text_writer w{out, size};
  w.put("{");
#define MEMKIT_STATISTICS_JSON(name) w.field(#name, s.name, w.length == 1);
  MEMKIT_STATISTICS_FIELDS(MEMKIT_STATISTICS_JSON)
#undef MEMKIT_STATISTICS_JSON
  w.put("}");
  w.terminate();
  return w.length;
}

/// \returns `s` as write_json writes it.
inline std::string to_json(const statistics& s) {
  std::string out(write_json(s, nullptr, 0), '\0');
  write_json(s, out.data(), out.size() + 1);
  return out;
}

namespace detail {

/// The counters' indices, in the order of MEMKIT_STATISTICS_FIELDS.
enum class stat : std::size_t {
#define MEMKIT_STATISTICS_INDEX(name) name,
  MEMKIT_STATISTICS_FIELDS(MEMKIT_STATISTICS_INDEX)
#undef MEMKIT_STATISTICS_INDEX
      count
};

// How one counter is kept; `counters` below, the one implementation of counting, is written over
// these. Each returns a counter's new value from add and sub.

/// Written and read by one thread at a time (the strategies, which are not thread-safe).
struct plain_cell {
  std::size_t v = 0;
  std::size_t get() const noexcept { return v; }
  void set(std::size_t n) noexcept { v = n; }
  std::size_t add(std::size_t n) noexcept { return v += n; }
  std::size_t sub(std::size_t n) noexcept { return v -= n; }
  void raise(std::size_t n) noexcept {
    if (n > v) {
      v = n;
    }
  }
};

/// Written by one thread at a time, read by any: a relaxed load and store, no read-modify-write
/// (a thread's heap of the thread-caching engine, whose counts stats() sums).
struct owned_cell {
  std::atomic<std::size_t> v{0};
  std::size_t get() const noexcept { return v.load(std::memory_order_relaxed); }
  void set(std::size_t n) noexcept { v.store(n, std::memory_order_relaxed); }
  std::size_t add(std::size_t n) noexcept {
    const std::size_t r = get() + n;
    set(r);
    return r;
  }
  std::size_t sub(std::size_t n) noexcept { return add(0 - n); }
  void raise(std::size_t n) noexcept {
    if (n > get()) {
      set(n);
    }
  }
};

/// Written by any thread at once: relaxed read-modify-writes. Each counter is exact once the
/// threads are done, but a snapshot taken while they run may mix moments, e.g. count a
/// deallocation whose allocation it does not count yet. No counter orders anything else.
struct shared_cell {
  std::atomic<std::size_t> v{0};
  std::size_t get() const noexcept { return v.load(std::memory_order_relaxed); }
  void set(std::size_t n) noexcept { v.store(n, std::memory_order_relaxed); }
  std::size_t add(std::size_t n) noexcept { return v.fetch_add(n, std::memory_order_relaxed) + n; }
  std::size_t sub(std::size_t n) noexcept { return v.fetch_sub(n, std::memory_order_relaxed) - n; }
  // A peak only rises; a lost race retries only while the value seen is still below.
  void raise(std::size_t n) noexcept {
    std::size_t seen = get();
    while (seen < n && !v.compare_exchange_weak(seen, n, std::memory_order_relaxed)) {
    }
  }
};

/// The in-use counts a marker saves, so that a rollback restores them.
struct usage_counts {
  std::size_t bytes = 0;
  std::size_t blocks = 0;
};
struct no_usage {};
/// What a strategy's marker keeps of the counts: nothing when statistics are compiled out.
using usage_mark = std::conditional_t<statistics_enabled, usage_counts, no_usage>;

/// The counting of docs/statistics.md, defined once: a counter per field of
/// MEMKIT_STATISTICS_FIELDS, kept in `Cell`s, and a hook per countable event. The strategies
/// count through it (stats_recorder, atomic_stats_recorder), the thread-caching engine's heaps
/// and shared parts too, and the global replacement's stats:1 (src/stats.cpp), which counts at
/// run time whatever MEMKIT_STATISTICS is. `Peaks`: whether on_allocate keeps the peaks (a
/// thread's heap does not: peaks of a sum are the sum's, taken by its reader).
template <class Cell, bool Peaks = true>
class counters {
public:
  statistics stats() const noexcept {
    statistics s;
    add_to(s);
    return s;
  }

  /// \effects adds every counter to `s`'s.
  void add_to(statistics& s) const noexcept {
#define MEMKIT_STATISTICS_ADD(name) s.name += get(stat::name);
    MEMKIT_STATISTICS_FIELDS(MEMKIT_STATISTICS_ADD)
#undef MEMKIT_STATISTICS_ADD
  }

  void on_allocate(std::size_t bytes) noexcept {
    at(stat::allocations).add(1);
    const std::size_t in_use = at(stat::bytes_in_use).add(bytes);
    const std::size_t blocks = at(stat::blocks_in_use).add(1);
    if constexpr (Peaks) {
      at(stat::peak_bytes_in_use).raise(in_use);
      at(stat::peak_blocks_in_use).raise(blocks);
    }
  }
  void on_deallocate(std::size_t bytes) noexcept {
    at(stat::deallocations).add(1);
    at(stat::bytes_in_use).sub(bytes);
    at(stat::blocks_in_use).sub(1);
  }
  void on_failure() noexcept { at(stat::failures).add(1); }
  void on_fallback() noexcept { at(stat::fallbacks).add(1); }
  void on_upstream_allocate(std::size_t bytes) noexcept {
    at(stat::upstream_allocations).add(1);
    at(stat::upstream_bytes_in_use).add(bytes);
  }
  void on_upstream_deallocate(std::size_t bytes) noexcept {
    at(stat::upstream_deallocations).add(1);
    at(stat::upstream_bytes_in_use).sub(bytes);
  }
  /// A block obtained from the upstream grew by `bytes` where it lies.
  void on_upstream_grow(std::size_t bytes) noexcept { at(stat::upstream_bytes_in_use).add(bytes); }
  /// reset() and release(): every block is free; the totals stay. \requires quiescence.
  void on_reset() noexcept {
    at(stat::bytes_in_use).set(0);
    at(stat::blocks_in_use).set(0);
  }
  /// A part of the blocks became free at once: those `part` (a member strategy's stats) has in use.
  void on_discard(const statistics& part) noexcept {
    at(stat::bytes_in_use).sub(part.bytes_in_use);
    at(stat::blocks_in_use).sub(part.blocks_in_use);
  }
  /// \returns stats() with the upstream calls of a member strategy that shares the upstream added.
  statistics stats_with_upstream_of(const statistics& member) const noexcept {
    statistics s = stats();
    s.upstream_allocations += member.upstream_allocations;
    s.upstream_deallocations += member.upstream_deallocations;
    s.upstream_bytes_in_use += member.upstream_bytes_in_use;
    return s;
  }
  usage_counts usage() const noexcept {
    return {get(stat::bytes_in_use), get(stat::blocks_in_use)};
  }
  /// A rollback: the blocks allocated since `m` was taken are free again.
  void on_rollback(const usage_counts& m) noexcept {
    at(stat::bytes_in_use).set(m.bytes);
    at(stat::blocks_in_use).set(m.blocks);
  }
  /// Counts a try_allocate result: an allocation of `bytes` if `p` is not null, else a failure.
  void* record(void* p, std::size_t bytes) noexcept {
    if (p != nullptr) {
      on_allocate(bytes);
    } else {
      on_failure();
    }
    return p;
  }
  /// \effects every counter is 0 again. \requires quiescence.
  void clear() noexcept {
    for (Cell& c : c_) {
      c.set(0);
    }
  }

private:
  Cell& at(stat f) noexcept { return c_[static_cast<std::size_t>(f)]; }
  std::size_t get(stat f) const noexcept { return c_[static_cast<std::size_t>(f)].get(); }

  Cell c_[static_cast<std::size_t>(stat::count)];
};

/// `counters` compiled out (MEMKIT_STATISTICS 0): no state, every hook an empty inline function,
/// so code counting through it compiles to what it would be without hooks. Same interface.
/// `Owner` gives each user its own empty type (stats_recorder).
template <class Owner>
struct no_counters {
  statistics stats() const noexcept { return {}; }
  void add_to(statistics& /*s*/) const noexcept {}

  void on_allocate(std::size_t /*bytes*/) noexcept {}
  void on_deallocate(std::size_t /*bytes*/) noexcept {}
  void on_failure() noexcept {}
  void on_fallback() noexcept {}
  void on_upstream_allocate(std::size_t /*bytes*/) noexcept {}
  void on_upstream_deallocate(std::size_t /*bytes*/) noexcept {}
  void on_upstream_grow(std::size_t /*bytes*/) noexcept {}
  void on_reset() noexcept {}
  void on_discard(const statistics& /*part*/) noexcept {}
  statistics stats_with_upstream_of(const statistics& /*member*/) const noexcept { return {}; }
  no_usage usage() const noexcept { return {}; }
  void on_rollback(const no_usage& /*m*/) noexcept {}
  void* record(void* p, std::size_t /*bytes*/) noexcept { return p; }
  void clear() noexcept {}
};

/// `counters<Cell, Peaks>` if MEMKIT_STATISTICS is 1, else no_counters<Owner>.
template <class Cell, bool Peaks = true, class Owner = void>
using counters_if_enabled =
    std::conditional_t<statistics_enabled, counters<Cell, Peaks>, no_counters<Owner>>;

/// What a strategy counts with: strategies inherit it privately (so only the `stats()` they
/// re-export is public) and call a hook where something countable happens. `Owner` is the
/// strategy, only to give each strategy its own base type, so that a strategy holding another
/// (fallback, aligned, node_pool) never has two empty bases of one type at one address, which
/// would defeat the empty-base optimization when statistics are off.
template <class Owner>
class stats_recorder : public counters_if_enabled<plain_cell, true, Owner> {};

/// stats_recorder for a strategy whose calls run on several threads at once (concurrent_pool).
/// The counters fill cache lines of their own, so counting does not slow the strategy's other hot
/// fields through false sharing; they still cost every thread a few contended read-modify-writes
/// per call, which is what MEMKIT_STATISTICS=1 buys (docs/statistics.md).
template <class Owner>
class alignas(statistics_enabled ? cache_line_size : 1) atomic_stats_recorder
    : public counters_if_enabled<shared_cell, true, Owner> {};

/// Forwards to an upstream and counts each call that obtains or returns memory in a recorder's
/// upstream counters; for bookkeeping code that takes an upstream as a parameter (multipool's
/// large-block table). With statistics off the counting calls are empty and it inlines away.
template <class Upstream, class Recorder>
class recorded_upstream {
public:
  recorded_upstream(Upstream& upstream, Recorder& recorder) noexcept
      : upstream_(upstream), recorder_(recorder) {}

  void* try_allocate(std::size_t bytes, std::size_t alignment) noexcept {
    void* p = upstream_.try_allocate(bytes, alignment);
    if (p != nullptr) {
      recorder_.on_upstream_allocate(bytes);
    }
    return p;
  }
  void deallocate(void* p, std::size_t bytes, std::size_t alignment) noexcept {
    upstream_.deallocate(p, bytes, alignment);
    recorder_.on_upstream_deallocate(bytes);
  }

private:
  Upstream& upstream_;
  Recorder& recorder_;
};

} // namespace detail
} // namespace MEMKIT_ABI
} // namespace memkit
