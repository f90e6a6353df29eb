// apps/memkit-bench/harness.hpp: workloads, measurements and the registry that pairs them with
// variants. Each workload is written once, as a generic lambda over a policy (variants.hpp).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "variants.hpp"

namespace memkit::bench {

/// The knobs of every workload, from the command line. Sizes are multiplied by `scale` (the smoke
/// test runs everything at a tiny scale).
struct params {
  double scale = 1.0;
  std::size_t iterations = 0; ///< 0: each workload's default
  // json-tree (seed 003)
  int tree_depth = 6;
  int tree_branching = 4;
  int tree_values = 8;
  // pairs
  std::vector<std::size_t> pair_sizes{8, 64, 512, 4096};
  std::size_t pair_blocks = 10'000;
  // node-lists (seed 004)
  std::vector<std::size_t> list_sizes{1'000, 10'000, 100'000, 1'000'000};
  // false-sharing (seed 001)
  unsigned threads = 2;

  /// \returns `n` scaled, at least 1.
  std::size_t scaled(std::size_t n) const noexcept {
    const auto s = static_cast<std::size_t>(static_cast<double>(n) * scale);
    return s == 0 ? 1 : s;
  }
};

/// What one workload is, independent of the variant running it.
struct workload {
  std::string name;
  std::string unit;       ///< what `items` counts: "requests", "elements", ...
  double items = 1;       ///< units of work in one iteration (throughput = items / p50)
  std::size_t iterations; ///< timed iterations by default
  std::string description;
};

/// One (workload, variant) measurement: timed iterations after one untimed cold iteration.
struct measurement {
  std::vector<double> samples_us;
  double cold_us = 0; ///< the first iteration with a freshly built policy
  std::uint64_t hash =
      0; ///< the result hash of the iterations (all equal, or `consistent` is false)
  bool consistent = true; ///< every iteration produced the same hash
  std::size_t peak_rss_kib = 0;
  std::string note; ///< what a workload reports besides time (huge pages obtained, ...)
};

/// A runnable (workload, variant) pair. `run(iterations, probe_rss)` measures peak RSS only when
/// `probe_rss` (the probe resets the process's peak: meaningless with concurrent requests).
struct bench_case {
  const workload* w;
  std::string variant;
  std::function<measurement(std::size_t iterations, bool probe_rss)> run;
};

/// Runs `c` for `iterations` in a forked child process and returns its measurement, or sets
/// `error` (the child crashed, threw or was killed). Each measurement thus starts from the same
/// small heap, and its peak RSS is its own rather than the most any earlier variant reached
/// (glibc keeps freed memory, Boost's singleton pools never return theirs).
measurement run_isolated(const bench_case& c, std::size_t iterations, std::string& error);

/// Resets the process's peak resident set size, so that each measurement reports its own peak
/// (Linux >= 4.0: writing 5 to /proc/self/clear_refs resets VmHWM). \returns false if refused.
bool reset_peak_rss() noexcept;
/// \returns VmHWM from /proc/self/status, in KiB (0 if unreadable).
std::size_t peak_rss_kib() noexcept;
/// \returns VmRSS from /proc/self/status, in KiB (0 if unreadable).
std::size_t rss_kib() noexcept;

/// FNV-1a, 64-bit (the hash seed 003 uses over labels and values).
class fnv1a {
public:
  void add(const void* data, std::size_t n) noexcept {
    const auto* p = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < n; ++i) {
      h_ = (h_ ^ p[i]) * 0x100000001b3ULL;
    }
  }
  void add(std::uint64_t v) noexcept { add(&v, sizeof v); }
  /// One FNV-1a step over a whole value instead of over its bytes, as for a JSON number: the
  /// byte loop's chain of dependent multiplies would otherwise be a fixed cost as large as the
  /// allocations the workload measures.
  void add_value(std::uint64_t v) noexcept { h_ = (h_ ^ v) * 0x100000001b3ULL; }
  std::uint64_t value() const noexcept { return h_; }

private:
  std::uint64_t h_ = 0xcbf29ce484222325ULL;
};

/// A word-at-a-time hash for the workloads whose hash only proves the contents (seed 003 fixes
/// FNV-1a for json-tree only): FNV-1a goes byte by byte, a dependent multiply per byte, which cost
/// about a third of an iteration of vector-strings and so hid the allocators' differences.
class word_hash {
public:
  void add(const void* data, std::size_t n) noexcept {
    const auto* p = static_cast<const unsigned char*>(data);
    for (; n >= sizeof(std::uint64_t); n -= sizeof(std::uint64_t), p += sizeof(std::uint64_t)) {
      std::uint64_t w;
      std::memcpy(&w, p, sizeof w);
      mix(w);
    }
    std::uint64_t tail = n; // the length of the tail, so "a" and "a\0" differ
    std::memcpy(&tail, p, n);
    mix(tail ^ (std::uint64_t{n} << 56));
  }
  std::uint64_t value() const noexcept { return h_; }

private:
  void mix(std::uint64_t w) noexcept {
    h_ = (h_ ^ w) * 0x9e3779b97f4a7c15ULL; // the golden-ratio constant of splitmix64
    h_ ^= h_ >> 29;
  }

  std::uint64_t h_ = 0xcbf29ce484222325ULL;
};

/// splitmix64: a tiny deterministic generator, the same sequence on every platform.
class rng {
public:
  explicit rng(std::uint64_t seed) noexcept : s_(seed) {}
  std::uint64_t next() noexcept {
    std::uint64_t z = (s_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  /// \returns a value in [lo, hi], by Lemire's multiply-shift rather than a division: a
  /// workload's generator must cost little next to the allocations it drives.
  int between(int lo, int hi) noexcept {
    const std::uint64_t range = static_cast<std::uint64_t>(hi - lo) + 1;
    return lo + static_cast<int>(((next() >> 32) * range) >> 32);
  }

private:
  std::uint64_t s_;
};

/// Builds a `Policy` from `h`, runs `iteration(policy, note)` once cold and `iterations` times
/// timed, recycling the policy after each, and records times, hash, the note and, if
/// `probe_rss`, the peak RSS. The policy is destroyed before this returns: nothing it allocated
/// outlives the call.
template <class Policy, class Iteration>
measurement measure(const hint& h, std::size_t iterations, const Iteration& iteration,
                    bool probe_rss) {
  using clock = std::chrono::steady_clock;
  measurement m;
  m.samples_us.reserve(iterations);
  std::size_t rss_before = 0;
  if (probe_rss) {
    reset_peak_rss();
    rss_before = rss_kib();
  }
  {
    auto policy = std::make_unique<Policy>(h);
    std::string note;
    for (std::size_t i = 0; i <= iterations; ++i) {
      const auto start = clock::now();
      const std::uint64_t hash = iteration(*policy, note);
      policy->recycle();
      const auto stop = clock::now();
      const double us = std::chrono::duration<double, std::micro>(stop - start).count();
      if (i == 0) {
        m.cold_us = us;
        m.hash = hash;
      } else {
        m.samples_us.push_back(us);
        m.consistent = m.consistent && hash == m.hash;
      }
    }
    m.note = std::move(note);
  }
  const std::size_t peak = probe_rss ? peak_rss_kib() : 0;
  m.peak_rss_kib = peak > rss_before ? peak - rss_before : 0;
  return m;
}

template <class... Policies>
struct policy_list {};

/// The variants that fit a workload allocating objects of many sizes (strings, vectors, trees).
using general_policies =
    policy_list<std_policy, arena_policy, thread_arena_policy, multipool_policy,
                pmr_monotonic_policy, pmr_monotonic_sync_pool_policy, pmr_unsync_pool_policy,
                pmr_sync_pool_policy, boost_pool_policy>;

/// The variants that fit node containers (list, forward_list, map): one node size, which the
/// fixed-size peers are told through the hint. Not boost::pool_allocator: it frees into a sorted
/// free list (ordered_free), linear per free, so a list of 100,000 nodes took 12 s here to
/// fast_pool_allocator's 2 ms; Boost documents fast_pool_allocator for node containers.
using node_policies =
    policy_list<std_policy, node_pool_policy, pool_policy, array_pool_policy, multipool_policy,
                arena_policy, pmr_monotonic_policy, pmr_monotonic_sync_pool_policy,
                pmr_unsync_pool_policy, pmr_sync_pool_policy, boost_fast_pool_policy,
                foonathan_pool_policy>;

/// The (workload, variant) pairs of one run, in registration order.
class registry {
public:
  /// \effects registers `w` and returns the stable copy cases refer to.
  const workload& add_workload(workload w);

  /// \effects registers `iteration` for `w` under every policy in `Policies`.
  template <class... Policies, class Iteration>
  void add(const workload& w, const hint& h, const Iteration& iteration) {
    (cases_.push_back(bench_case{&w, Policies::name,
                                 [h, iteration](std::size_t n, bool probe_rss) {
                                   return measure<Policies>(h, n, iteration, probe_rss);
                                 }}),
     ...);
  }

  /// \effects registers `iteration` for `w` under every policy in the list.
  template <class... Policies, class Iteration>
  void add(policy_list<Policies...>, const workload& w, const hint& h, const Iteration& iteration) {
    add<Policies...>(w, h, iteration);
  }

  const std::vector<bench_case>& cases() const noexcept { return cases_; }

private:
  std::vector<std::unique_ptr<workload>> workloads_;
  std::vector<bench_case> cases_;
};

// Each workload file registers its workloads with every variant that fits them.
void add_json_tree(registry& r, const params& p);
void add_vector_strings(registry& r, const params& p);
void add_lists(registry& r, const params& p);
void add_containers(registry& r, const params& p);
void add_pairs(registry& r, const params& p);
void add_threads_and_pages(registry& r, const params& p);

/// Every workload, in the order the table shows them.
inline void add_all(registry& r, const params& p) {
  add_json_tree(r, p);
  add_vector_strings(r, p);
  add_lists(r, p);
  add_containers(r, p);
  add_pairs(r, p);
  add_threads_and_pages(r, p);
}

} // namespace memkit::bench
