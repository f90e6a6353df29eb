// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/replay/compile.cpp: the causal compiler and the verifier.

#include "replay/compile.hpp"

#include <algorithm>
#include <bit>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

namespace memkit::bench::replay {
namespace {

/// Where a stream's operation is: the stream and how many of its operations are done once this
/// one is (its index + 1), the count a wait for it names.
struct position {
  std::uint32_t stream = 0;
  std::uint64_t done = 0;
};

/// A block live in the trace.
struct live_block {
  std::uint32_t slot = 0;
  position last; ///< its allocation or last realloc
  std::uint64_t size = 0;
};

class compiler {
public:
  program run(const event_list& events) {
    p_.stats.events = events.size();
    for (const event& e : events) {
      const std::uint32_t s = stream_of(e.thread);
      switch (e.kind) {
      case event_kind::alloc:
        allocate(s, e.result, e.size, e.alignment, e.site);
        break;
      case event_kind::free:
        release(s, e.ptr);
        break;
      case event_kind::realloc:
        reallocate(s, e);
        break;
      }
    }
    p_.stats.leaked = live_.size();
    return std::move(p_);
  }

private:
  std::uint32_t stream_of(std::uint32_t thread) {
    const auto [it, added] =
        streams_.try_emplace(thread, static_cast<std::uint32_t>(p_.streams.size()));
    if (added) {
      p_.streams.push_back({thread, {}});
      free_slots_.emplace_back();
      waited_.emplace_back();
    }
    return it->second;
  }

  std::uint32_t site_of(std::uint32_t site) {
    const auto [it, added] = sites_.try_emplace(site, static_cast<std::uint32_t>(p_.sites.size()));
    if (added) {
      p_.sites.push_back(site);
    }
    return it->second;
  }

  /// Appends `o` to stream `s`. \returns where it is.
  position emit(std::uint32_t s, const op& o) {
    auto& ops = p_.streams[s].ops;
    ops.push_back(o);
    return {s, ops.size()};
  }

  /// \effects makes stream `s` wait for `at` unless it is its own or an earlier wait covers it.
  void order_after(std::uint32_t s, position at) {
    if (at.stream == s || at.done == 0) {
      return;
    }
    auto& waited = waited_[s];
    if (waited.size() <= at.stream) {
      waited.resize(p_.streams.size());
    }
    if (waited[at.stream] >= at.done) {
      return;
    }
    waited[at.stream] = at.done;
    emit(s, {at.done, at.stream, 0, op_kind::wait, 0});
    ++p_.stats.waits;
  }

  /// \returns a free slot for stream `s`: its own most recently freed, else one another stream
  /// freed (after a wait for that free), else a new one, only when every slot is live.
  std::uint32_t take_slot(std::uint32_t s) {
    auto& own = free_slots_[s];
    if (!own.empty()) {
      const std::uint32_t slot = own.back();
      own.pop_back();
      return slot;
    }
    while (!donors_.empty()) {
      auto& theirs = free_slots_[donors_.back()];
      if (theirs.empty()) {
        donors_.pop_back();
        continue;
      }
      const std::uint32_t slot = theirs.back();
      theirs.pop_back();
      order_after(s, freed_at_[slot]);
      return slot;
    }
    freed_at_.emplace_back();
    return p_.slots++;
  }

  void give_slot(std::uint32_t s, std::uint32_t slot, position at) {
    freed_at_[slot] = at;
    auto& own = free_slots_[s];
    if (own.empty()) {
      donors_.push_back(s);
    }
    own.push_back(slot);
  }

  void allocate(std::uint32_t s, std::uint64_t ptr, std::uint64_t size, std::uint32_t alignment,
                std::uint32_t site) {
    if (ptr == 0) {
      return; // a failed allocation: nothing to release later
    }
    if (const auto it = live_.find(ptr); it != live_.end()) {
      ++p_.stats.reused_live;
      release_live(s, it);
    }
    freed_.erase(ptr);
    const std::uint32_t slot = take_slot(s);
    const auto align_log2 =
        static_cast<std::uint8_t>(alignment > 1 ? std::bit_width(alignment - 1U) : 0);
    const position at = emit(s, {size, slot, site_of(site), op_kind::alloc, align_log2});
    live_.emplace(ptr, live_block{slot, at, size});
    note_live(size, 1);
    p_.stats.max_size = std::max(p_.stats.max_size, size);
  }

  void release(std::uint32_t s, std::uint64_t ptr) {
    if (ptr == 0) {
      return;
    }
    const auto it = live_.find(ptr);
    if (it == live_.end()) {
      ++(freed_.count(ptr) != 0 ? p_.stats.double_frees : p_.stats.unknown_frees);
      return;
    }
    release_live(s, it);
    freed_.insert(ptr);
  }

  void release_live(std::uint32_t s, std::unordered_map<std::uint64_t, live_block>::iterator it) {
    const live_block b = it->second;
    live_.erase(it);
    if (b.last.stream != s) {
      ++p_.stats.cross_thread;
    }
    order_after(s, b.last);
    const position at = emit(s, {0, b.slot, 0, op_kind::free, 0});
    give_slot(s, b.slot, at);
    note_live(b.size, -1);
  }

  void reallocate(std::uint32_t s, const event& e) {
    if (e.ptr == 0) {
      allocate(s, e.result, e.size, 0, e.site);
      return;
    }
    if (e.result == 0) {
      if (e.size == 0) {
        release(s, e.ptr);
      } else {
        ++p_.stats.failed_reallocs;
      }
      return;
    }
    const auto it = live_.find(e.ptr);
    if (it == live_.end()) {
      ++p_.stats.unknown_reallocs;
      allocate(s, e.result, e.size, 0, e.site);
      return;
    }
    live_block b = it->second;
    live_.erase(it);
    if (b.last.stream != s) {
      ++p_.stats.cross_thread;
    }
    order_after(s, b.last);
    if (e.result != e.ptr) {
      freed_.insert(e.ptr);
      if (const auto other = live_.find(e.result); other != live_.end()) {
        ++p_.stats.reused_live;
        release_live(s, other);
      }
      freed_.erase(e.result);
    }
    b.last = emit(s, {e.size, b.slot, site_of(e.site), op_kind::realloc, 0});
    note_live(b.size, -1);
    b.size = e.size;
    note_live(b.size, 1);
    live_.emplace(e.result, b);
    p_.stats.max_size = std::max(p_.stats.max_size, e.size);
  }

  void note_live(std::uint64_t size, int direction) {
    if (direction > 0) {
      live_bytes_ += size;
      p_.stats.peak_live = std::max(p_.stats.peak_live, ++live_blocks_);
      p_.stats.peak_live_bytes = std::max(p_.stats.peak_live_bytes, live_bytes_);
    } else {
      live_bytes_ -= size;
      --live_blocks_;
    }
  }

  program p_;
  std::unordered_map<std::uint32_t, std::uint32_t> streams_; ///< thread id -> stream
  std::unordered_map<std::uint32_t, std::uint32_t> sites_;   ///< site id -> dense index
  std::unordered_map<std::uint64_t, live_block> live_;       ///< address -> block
  std::unordered_set<std::uint64_t> freed_;            ///< addresses freed and not allocated since
  std::vector<std::vector<std::uint32_t>> free_slots_; ///< per stream: its freed slots, a stack
  std::vector<std::uint32_t> donors_;              ///< streams whose free_slots_ may be non-empty
  std::vector<position> freed_at_;                 ///< per slot: the free that released it last
  std::vector<std::vector<std::uint64_t>> waited_; ///< per stream, per stream: waited up to
  std::uint64_t live_bytes_ = 0;
  std::uint64_t live_blocks_ = 0;
};

} // namespace

program compile(const event_list& events) { return compiler{}.run(events); }

verify_result verify(const program& p) {
  verify_result r;
  const std::size_t n = p.streams.size();
  std::vector<std::size_t> next(n, 0); // per stream: its next operation
  // Per stream, per awaited stream: how far it has waited. Grown on demand: a trace of many
  // short-lived threads has few pairs that ever wait for each other.
  std::vector<std::vector<std::uint64_t>> waited(n);
  const auto waited_for = [&waited](std::size_t s, std::size_t on) -> std::uint64_t& {
    if (waited[s].size() <= on) {
      waited[s].resize(on + 1, 0);
    }
    return waited[s][on];
  };
  struct slot_state {
    bool live = false;
    bool used = false;
    std::uint32_t stream = 0;
    std::uint64_t done = 0;
  };
  std::vector<slot_state> slots(p.slots);
  const auto fail = [&](std::size_t s, const std::string& what) {
    std::ostringstream m;
    m << "stream " << s << " (thread " << p.streams[s].thread << "), operation " << next[s] << ": "
      << what;
    r.error = m.str();
    return r;
  };
  for (bool progressed = true; progressed;) {
    progressed = false;
    for (std::size_t s = 0; s < n; ++s) {
      const auto& ops = p.streams[s].ops;
      while (next[s] < ops.size()) {
        const op& o = ops[next[s]];
        if (o.kind == op_kind::wait) {
          if (o.slot >= n || o.slot == s) {
            return fail(s, "waits for stream " + std::to_string(o.slot));
          }
          if (next[o.slot] < o.arg) {
            break; // blocked: try the others
          }
          waited_for(s, o.slot) = std::max(waited_for(s, o.slot), o.arg);
        } else {
          if (o.slot >= slots.size()) {
            return fail(s, "slot " + std::to_string(o.slot) + " out of range");
          }
          slot_state& st = slots[o.slot];
          const bool wants_live = o.kind != op_kind::alloc;
          if (st.live != wants_live) {
            return fail(s, wants_live ? "releases slot " + std::to_string(o.slot) +
                                            ", which holds no block"
                                      : "allocates into slot " + std::to_string(o.slot) +
                                            ", which holds a live block");
          }
          if (st.used && st.stream != s && waited_for(s, st.stream) < st.done) {
            return fail(s, "touches slot " + std::to_string(o.slot) + " after stream " +
                               std::to_string(st.stream) + " without waiting for it");
          }
          st = {o.kind != op_kind::free, true, static_cast<std::uint32_t>(s), next[s] + 1};
        }
        ++next[s];
        ++r.checked;
        progressed = true;
      }
    }
  }
  for (std::size_t s = 0; s < n; ++s) {
    if (next[s] < p.streams[s].ops.size()) {
      return fail(s, "waits for ever (stream " + std::to_string(p.streams[s].ops[next[s]].slot) +
                         " never gets that far)");
    }
  }
  r.ok = true;
  return r;
}

} // namespace memkit::bench::replay
