// SPDX-License-Identifier: BSL-1.0
// memkit/stats.hpp: per-strategy statistics, compiled out unless MEMKIT_STATISTICS is 1.
#pragma once

#include <cstddef>
#include <string>

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

#if MEMKIT_STATISTICS

/// The in-use counts a marker saves, so that a rollback restores them.
struct usage_mark {
  std::size_t bytes = 0;
  std::size_t blocks = 0;
};

/// The counting, defined once for every strategy: strategies inherit it privately (so only the
/// `stats()` they re-export is public) and call a hook where something countable happens. `Owner`
/// is the strategy, only to give each strategy its own base type, so that a strategy holding
/// another (fallback, aligned, node_pool) never has two empty bases of one type at one address,
/// which would defeat the empty-base optimization when statistics are off.
template <class Owner>
class stats_recorder {
public:
  statistics stats() const noexcept { return s_; }

  void on_allocate(std::size_t bytes) noexcept {
    ++s_.allocations;
    s_.bytes_in_use += bytes;
    ++s_.blocks_in_use;
    if (s_.bytes_in_use > s_.peak_bytes_in_use) {
      s_.peak_bytes_in_use = s_.bytes_in_use;
    }
    if (s_.blocks_in_use > s_.peak_blocks_in_use) {
      s_.peak_blocks_in_use = s_.blocks_in_use;
    }
  }
  void on_deallocate(std::size_t bytes) noexcept {
    ++s_.deallocations;
    s_.bytes_in_use -= bytes;
    --s_.blocks_in_use;
  }
  void on_failure() noexcept { ++s_.failures; }
  void on_fallback() noexcept { ++s_.fallbacks; }
  void on_upstream_allocate(std::size_t bytes) noexcept {
    ++s_.upstream_allocations;
    s_.upstream_bytes_in_use += bytes;
  }
  void on_upstream_deallocate(std::size_t bytes) noexcept {
    ++s_.upstream_deallocations;
    s_.upstream_bytes_in_use -= bytes;
  }
  /// reset() and release(): every block is free; the totals stay.
  void on_reset() noexcept {
    s_.bytes_in_use = 0;
    s_.blocks_in_use = 0;
  }
  /// A part of the blocks became free at once: those `part` (a member strategy's stats) has in use.
  void on_discard(const statistics& part) noexcept {
    s_.bytes_in_use -= part.bytes_in_use;
    s_.blocks_in_use -= part.blocks_in_use;
  }
  /// \returns stats() with the upstream calls of a member strategy that shares the upstream added.
  statistics stats_with_upstream_of(const statistics& member) const noexcept {
    statistics s = s_;
    s.upstream_allocations += member.upstream_allocations;
    s.upstream_deallocations += member.upstream_deallocations;
    s.upstream_bytes_in_use += member.upstream_bytes_in_use;
    return s;
  }
  usage_mark usage() const noexcept { return {s_.bytes_in_use, s_.blocks_in_use}; }
  /// A rollback: the blocks allocated since `m` was taken are free again.
  void on_rollback(const usage_mark& m) noexcept {
    s_.bytes_in_use = m.bytes;
    s_.blocks_in_use = m.blocks;
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

private:
  statistics s_;
};

#else

struct usage_mark {};

/// Statistics compiled out: no state, and every hook an empty inline function, so a strategy
/// inheriting this (the empty-base optimization makes it take no room) compiles to what it would
/// be without hooks. Same interface as the counting version above.
template <class Owner>
class stats_recorder {
public:
  statistics stats() const noexcept { return {}; }

  void on_allocate(std::size_t /*bytes*/) noexcept {}
  void on_deallocate(std::size_t /*bytes*/) noexcept {}
  void on_failure() noexcept {}
  void on_fallback() noexcept {}
  void on_upstream_allocate(std::size_t /*bytes*/) noexcept {}
  void on_upstream_deallocate(std::size_t /*bytes*/) noexcept {}
  void on_reset() noexcept {}
  void on_discard(const statistics& /*part*/) noexcept {}
  statistics stats_with_upstream_of(const statistics& /*member*/) const noexcept { return {}; }
  usage_mark usage() const noexcept { return {}; }
  void on_rollback(const usage_mark& /*m*/) noexcept {}
  void* record(void* p, std::size_t /*bytes*/) noexcept { return p; }
};

#endif

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
