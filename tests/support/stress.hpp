// SPDX-License-Identifier: BSL-1.0
// tests/support/stress.hpp: a seeded multi-threaded stress run for any thread-safe resource. Every
// block is stamped with its owner and a sequence number when allocated and checked byte for byte
// when freed, so a block handed to two threads at once, freed into the wrong place or overwritten
// by the allocator shows up as a content error, not as "it did not crash".
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace memkit::test {

/// What a stress run does. Sizes are drawn uniformly from [min_size, max_size] (equal for a
/// fixed-size resource); `remote_percent` of the frees hand the block to another thread through its
/// inbox, and that thread checks and frees it.
struct stress_options {
  unsigned threads = 4;
  std::size_t operations = 20'000; ///< allocations or frees per thread
  std::size_t max_live = 64;       ///< blocks a thread holds at most
  std::size_t min_size = 16;
  std::size_t max_size = 512;
  std::size_t alignment = alignof(std::max_align_t);
  unsigned remote_percent = 30;
  std::uint64_t seed = 20261124;
};

/// What happened, summed over the threads. `errors` holds the first few content errors.
struct stress_result {
  std::size_t allocations = 0;
  std::size_t failed_allocations = 0; ///< try_allocate returned null (exhaustion)
  std::size_t local_frees = 0;
  std::size_t remote_frees = 0;
  std::size_t misaligned = 0;
  std::size_t corrupted = 0; ///< blocks whose stamp did not survive until their free
  std::vector<std::string> errors;
};

namespace detail {

struct stamped_block {
  unsigned char* p;
  std::size_t size;
  std::uint64_t stamp;
};

/// The byte `i` of a block stamped `stamp`: differs between blocks and between offsets, so a block
/// that overlaps another or was written by a third party fails the check.
inline unsigned char stamp_byte(std::uint64_t stamp, std::size_t i) noexcept {
  std::uint64_t x = stamp + 0x9e3779b97f4a7c15ULL * (i + 1);
  x ^= x >> 29;
  return static_cast<unsigned char>(x);
}

class stress_run {
public:
  explicit stress_run(const stress_options& o) : o_(o), inboxes_(o.threads) {}

  template <class Resource>
  stress_result run(Resource& r) {
    std::vector<std::thread> workers;
    std::vector<stress_result> results(o_.threads);
    std::atomic<unsigned> ready{0};
    for (unsigned t = 0; t < o_.threads; ++t) {
      workers.emplace_back([&, t] {
        ready.fetch_add(1);
        while (ready.load() < o_.threads) {
          std::this_thread::yield();
        }
        work(r, t, results[t]);
      });
    }
    for (auto& w : workers) {
      w.join();
    }
    stress_result total;
    for (unsigned t = 0; t < o_.threads; ++t) {
      drain(r, t, results[t]); // blocks sent to a thread after it finished
      add(total, results[t]);
    }
    return total;
  }

private:
  struct inbox {
    std::mutex m;
    std::deque<stamped_block> blocks;
  };

  template <class Resource>
  void work(Resource& r, unsigned t, stress_result& res) {
    std::mt19937_64 rng(o_.seed + t);
    std::vector<stamped_block> live;
    std::uint64_t sequence = 0;
    for (std::size_t op = 0; op < o_.operations; ++op) {
      if (op % 16 == 0) {
        drain(r, t, res);
      }
      const bool allocate = live.empty() || (live.size() < o_.max_live && rng() % 2 == 0);
      if (allocate) {
        const std::size_t size = o_.min_size + rng() % (o_.max_size - o_.min_size + 1);
        void* p = r.try_allocate(size, o_.alignment);
        if (p == nullptr) {
          ++res.failed_allocations;
          continue;
        }
        ++res.allocations;
        if (reinterpret_cast<std::uintptr_t>(p) % o_.alignment != 0) {
          ++res.misaligned;
        }
        const std::uint64_t stamp = (std::uint64_t{t} << 40) ^ (o_.seed << 20) ^ ++sequence;
        auto* bytes = static_cast<unsigned char*>(p);
        for (std::size_t i = 0; i < size; ++i) {
          bytes[i] = stamp_byte(stamp, i);
        }
        live.push_back({bytes, size, stamp});
        continue;
      }
      const std::size_t k = rng() % live.size();
      const stamped_block b = live[k];
      live[k] = live.back();
      live.pop_back();
      if (o_.threads > 1 && rng() % 100 < o_.remote_percent) {
        const unsigned to = (t + 1 + static_cast<unsigned>(rng() % (o_.threads - 1))) % o_.threads;
        const std::lock_guard<std::mutex> lock(inboxes_[to].m);
        inboxes_[to].blocks.push_back(b);
      } else {
        free(r, b, res);
        ++res.local_frees;
      }
    }
    for (const stamped_block& b : live) {
      free(r, b, res);
      ++res.local_frees;
    }
  }

  template <class Resource>
  void drain(Resource& r, unsigned t, stress_result& res) {
    std::deque<stamped_block> mine;
    {
      const std::lock_guard<std::mutex> lock(inboxes_[t].m);
      mine.swap(inboxes_[t].blocks);
    }
    for (const stamped_block& b : mine) {
      free(r, b, res);
      ++res.remote_frees;
    }
  }

  template <class Resource>
  void free(Resource& r, const stamped_block& b, stress_result& res) {
    for (std::size_t i = 0; i < b.size; ++i) {
      if (b.p[i] != stamp_byte(b.stamp, i)) {
        ++res.corrupted;
        if (res.errors.size() < 4) {
          res.errors.push_back("block of " + std::to_string(b.size) + " bytes stamped " +
                               std::to_string(b.stamp) + " changed at byte " + std::to_string(i));
        }
        break;
      }
    }
    r.deallocate(b.p, b.size, o_.alignment);
  }

  static void add(stress_result& total, const stress_result& r) {
    total.allocations += r.allocations;
    total.failed_allocations += r.failed_allocations;
    total.local_frees += r.local_frees;
    total.remote_frees += r.remote_frees;
    total.misaligned += r.misaligned;
    total.corrupted += r.corrupted;
    total.errors.insert(total.errors.end(), r.errors.begin(), r.errors.end());
  }

  stress_options o_;
  std::vector<inbox> inboxes_;
};

} // namespace detail

/// Runs `o.threads` threads against `r` (which must be safe to call from all of them at once) and
/// \returns the counts; the caller asserts on them (e.g. `corrupted == 0`, and every allocation
/// freed: `allocations == local_frees + remote_frees`). Print `o.seed` on failure.
template <class Resource>
stress_result run_stress(Resource& r, const stress_options& o) {
  return detail::stress_run(o).run(r);
}

} // namespace memkit::test
