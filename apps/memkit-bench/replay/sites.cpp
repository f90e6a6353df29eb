// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/replay/sites.cpp: the site profiles and the candidate rules.

#include "replay/sites.hpp"

#include <algorithm>
#include <bit>
#include <map>
#include <random>
#include <set>
#include <unordered_map>

namespace memkit::bench::replay {
namespace {

struct live_block {
  std::uint32_t site = 0;
  std::uint32_t thread = 0;
  std::uint64_t born = 0; ///< event index
  std::uint64_t size = 0;
  std::uint64_t id = 0; ///< allocation number, for the LIFO stacks
};

/// What is gathered per site before the profile is summarised.
struct site_state {
  site_profile p;
  std::vector<std::uint64_t> lifetimes; ///< a uniform sample of them (lifetime_sample)
  std::uint64_t lifetimes_seen = 0;
  std::set<std::uint64_t> sizes;
  std::set<std::uint32_t> threads;
  std::unordered_map<std::uint32_t, std::vector<std::uint64_t>> stacks; ///< per thread: ids
  std::uint64_t live = 0;
  std::uint64_t live_bytes = 0;
  std::uint64_t run = 0; ///< frees since the site's last allocation
  std::uint64_t lifo = 0;
  std::uint64_t bulk = 0;
  std::uint64_t cross = 0;
};

/// Lifetimes kept per site for the percentiles: all of them up to this many, then a uniform
/// sample of this many (reservoir sampling, seeded), so a site's memory is bounded whatever the
/// trace's length; at this size a percentile's rank is off by about 1 % of the lifetimes at most
/// (the binomial standard error, sqrt(q (1 - q) / n), is under 0.6 %).
constexpr std::size_t lifetime_sample = 8192;

std::size_t bucket_of(std::uint64_t size) noexcept {
  return std::min<std::size_t>(static_cast<std::size_t>(std::bit_width(size)), size_buckets - 1);
}

} // namespace

class site_profiler::impl {
public:
  void add(const event& e) {
    const std::uint64_t i = index_;
    if (e.kind == event_kind::alloc) {
      if (e.result != 0) {
        born(i, e.result, e.site, e.thread, e.size);
      }
    } else if (e.kind == event_kind::free) {
      died(i, e.ptr, e.thread);
    } else if (e.kind == event_kind::realloc) {
      moved(i, e);
    } else {
      return; // a thread's start or exit: not an event of the lifetimes
    }
    ++index_;
  }

  std::vector<site_profile> finish() {
    const std::uint64_t end = index_;
    for (const auto& [ptr, b] : live_) {
      note_lifetime(sites_[b.site], end - b.born);
    }
    std::vector<site_profile> out;
    for (auto& [site, s] : sites_) {
      out.push_back(summarise(s, end));
    }
    std::stable_sort(out.begin(), out.end(),
                     [](const site_profile& a, const site_profile& b) { return a.ops > b.ops; });
    return out;
  }

private:
  site_state& state(std::uint32_t site) {
    site_state& s = sites_[site];
    s.p.site = site;
    return s;
  }

  void born(std::uint64_t i, std::uint64_t ptr, std::uint32_t site, std::uint32_t thread,
            std::uint64_t size) {
    if (const auto it = live_.find(ptr); it != live_.end()) {
      forget(i, it); // its free was not recorded
    }
    site_state& s = state(site);
    const std::uint64_t id = next_id_++;
    live_[ptr] = {site, thread, i, size, id};
    ++s.p.allocs;
    ++s.p.ops;
    note_size(s, size);
    s.threads.insert(thread);
    dead_.push_back(false);
    auto& stack = s.stacks[thread];
    stack.push_back(id);
    if (stack.size() > 2 * s.live + 64) {
      // Frees out of LIFO order leave dead ids below the top: drop them now and then, so the
      // stack holds about the site's live blocks, not every allocation.
      stack.erase(
          std::remove_if(stack.begin(), stack.end(), [this](std::uint64_t x) { return dead_[x]; }),
          stack.end());
    }
    s.run = 0;
    s.live_bytes += size;
    s.p.peak_live = std::max(s.p.peak_live, ++s.live);
    s.p.peak_live_bytes = std::max(s.p.peak_live_bytes, s.live_bytes);
  }

  void note_size(site_state& s, std::uint64_t size) {
    if (s.sizes.size() <= 64) {
      s.sizes.insert(size);
    }
    s.p.min_size = s.p.allocs + s.p.reallocs == 1 ? size : std::min(s.p.min_size, size);
    s.p.max_size = std::max(s.p.max_size, size);
    ++s.p.size_histogram[bucket_of(size)];
  }

  void died(std::uint64_t i, std::uint64_t ptr, std::uint32_t thread) {
    const auto it = live_.find(ptr);
    if (it == live_.end()) {
      return; // unknown or double free: the compiler counts those
    }
    const live_block b = it->second;
    site_state& s = state(b.site);
    ++s.p.frees;
    ++s.p.ops;
    s.cross += b.thread != thread ? 1 : 0;
    auto& stack = s.stacks[b.thread];
    while (!stack.empty() && dead_[stack.back()]) {
      stack.pop_back();
    }
    if (!stack.empty() && stack.back() == b.id) {
      ++s.lifo;
      stack.pop_back();
    }
    forget(i, it);
    ++s.run;
    if (s.live == 0 && s.run >= bulk_run) {
      s.bulk += s.run;
    }
    if (s.live == 0) {
      s.run = 0;
    }
  }

  void forget(std::uint64_t i, std::unordered_map<std::uint64_t, live_block>::iterator it) {
    site_state& s = sites_[it->second.site];
    note_lifetime(s, i - it->second.born);
    dead_[it->second.id] = true;
    --s.live;
    s.live_bytes -= it->second.size;
    live_.erase(it);
  }

  void moved(std::uint64_t i, const event& e) {
    const auto it = e.ptr == 0 ? live_.end() : live_.find(e.ptr);
    if (it == live_.end()) {
      if (e.result != 0) {
        born(i, e.result, e.site, e.thread, e.size);
      }
      return;
    }
    if (e.result == 0) {
      if (e.size == 0) {
        died(i, e.ptr, e.thread);
      }
      return;
    }
    live_block b = it->second;
    live_.erase(it);
    site_state& s = state(b.site);
    ++s.p.reallocs;
    ++s.p.ops;
    s.cross += b.thread != e.thread ? 1 : 0;
    note_size(s, e.size);
    s.live_bytes = s.live_bytes - b.size + e.size;
    s.p.peak_live_bytes = std::max(s.p.peak_live_bytes, s.live_bytes);
    b.size = e.size;
    b.thread = e.thread;
    live_[e.result] = b;
  }

  void note_lifetime(site_state& s, std::uint64_t lifetime) {
    if (s.lifetimes.size() < lifetime_sample) {
      s.lifetimes.push_back(lifetime);
    } else if (const std::uint64_t j = sample_rng_() % (s.lifetimes_seen + 1);
               j < lifetime_sample) {
      s.lifetimes[j] = lifetime;
    }
    ++s.lifetimes_seen;
  }

  static double at(const std::vector<std::uint64_t>& sorted, double q) {
    if (sorted.empty()) {
      return 0;
    }
    return static_cast<double>(sorted[static_cast<std::size_t>(q * double(sorted.size() - 1))]);
  }

  static site_profile summarise(site_state& s, std::uint64_t end) {
    site_profile p = s.p;
    std::sort(s.lifetimes.begin(), s.lifetimes.end());
    p.lifetime_p50 = at(s.lifetimes, 0.50);
    p.lifetime_p90 = at(s.lifetimes, 0.90);
    p.lifetime_p99 = at(s.lifetimes, 0.99);
    p.distinct_sizes = s.sizes.size();
    p.threads = s.threads.size();
    const double frees = static_cast<double>(std::max<std::uint64_t>(p.frees, 1));
    p.lifo_share = static_cast<double>(s.lifo) / frees;
    p.bulk_share = static_cast<double>(s.bulk) / frees;
    p.cross_thread_share = static_cast<double>(s.cross) / frees;
    choose(p, end);
    return p;
  }

  /// The rules, first match wins (docs/TRACE.md, "Advice").
  static void choose(site_profile& p, std::uint64_t end) {
    const bool long_lived = p.lifetime_p50 >= long_lived_rule * static_cast<double>(end);
    if (p.cross_thread_share >= cross_thread_rule) {
      p.candidate = strategy::thread_cached;
      p.reason = "cross-thread frees";
    } else if (p.min_size >= large_rule && long_lived) {
      p.candidate = strategy::huge_page;
      p.reason = "long-lived large blocks";
    } else if (p.frees > 0 && p.lifo_share == 1.0 && p.threads == 1 && p.reallocs == 0) {
      p.candidate = strategy::stack;
      p.reason = "every free LIFO";
    } else if (p.bulk_share >= bulk_rule) {
      p.candidate = strategy::arena;
      p.reason = "bulk death";
    } else if (long_lived) {
      p.reason = "long-lived: nothing to gain";
    } else if (p.distinct_sizes == 1) {
      p.candidate = strategy::pool;
      p.reason = "one size, short lives";
    } else {
      p.candidate = strategy::multipool;
      p.reason = "many sizes, short lives";
    }
  }

  std::map<std::uint32_t, site_state> sites_;
  std::unordered_map<std::uint64_t, live_block> live_;
  std::vector<bool> dead_; ///< per allocation id
  std::uint64_t next_id_ = 0;
  std::uint64_t index_ = 0; ///< block events so far
  std::mt19937_64 sample_rng_{lifetime_sample};
};

site_profiler::site_profiler() : impl_(std::make_unique<impl>()) {}
site_profiler::~site_profiler() = default;
void site_profiler::add(const event& e) { impl_->add(e); }
std::vector<site_profile> site_profiler::finish() { return impl_->finish(); }

std::vector<site_profile> profile_sites(const event_list& events) {
  site_profiler p;
  for (const event& e : events) {
    p.add(e);
  }
  return p.finish();
}

std::vector<site_profile> top_sites(const std::vector<site_profile>& profiles, std::size_t n) {
  std::vector<std::size_t> by_bytes(profiles.size());
  for (std::size_t i = 0; i < by_bytes.size(); ++i) {
    by_bytes[i] = i;
  }
  std::stable_sort(by_bytes.begin(), by_bytes.end(), [&](std::size_t a, std::size_t b) {
    return profiles[a].peak_live_bytes > profiles[b].peak_live_bytes;
  });
  std::vector<bool> chosen(profiles.size(), false);
  for (std::size_t i = 0; i < std::min(n, profiles.size()); ++i) {
    chosen[i] = true; // profiles come most operations first
    chosen[by_bytes[i]] = true;
  }
  std::vector<site_profile> out;
  for (std::size_t i = 0; i < profiles.size(); ++i) {
    if (chosen[i]) {
      out.push_back(profiles[i]);
    }
  }
  return out;
}

} // namespace memkit::bench::replay
