// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/workloads/threads.cpp: the threaded workloads of a service: each thread with
// its own blocks (mt-local), every free remote (mt-producer-consumer), and the json-tree request
// on workers sharing one resource (mt-server), each at every count of thread_counts.

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "core/measure.hpp"
#include "memkit_bench/random.hpp"
#include "policies/lists.hpp"
#include "policies/threaded.hpp"
#include "workloads/json_tree.hpp"
#include "workloads/threaded.hpp"
#include "workloads/workloads.hpp"

namespace memkit::bench {
namespace {

/// Every block holds a pointer-sized stamp, so every size is served with pointer alignment.
constexpr std::size_t stamp_alignment = alignof(std::uint64_t);

/// Each thread keeps `slots` blocks live and replaces a random one per operation: it reads the
/// stamp of the block it frees (the hash proves blocks kept their contents), then allocates a
/// block of 16-512 bytes (`fixed` 0) or of `fixed` bytes and stamps it.
auto local(unsigned threads, std::size_t ops, std::size_t fixed) {
  return [threads, ops, fixed](auto& policy, std::string&) {
    return on_threads(threads, [&policy, ops, fixed](unsigned t) {
      constexpr std::size_t slots = 256;
      struct block {
        void* p = nullptr;
        std::size_t size = 0;
      };
      std::array<block, slots> live{};
      rng g(0x10ca1 + t);
      std::uint64_t sum = 0;
      auto drop = [&](block& b) {
        sum = sum * 31 + *static_cast<std::uint64_t*>(b.p);
        policy.deallocate(b.p, b.size, stamp_alignment);
      };
      for (std::size_t i = 0; i < ops; ++i) {
        block& b = live[g.next() % slots];
        if (b.p != nullptr) {
          drop(b);
        }
        b.size = fixed != 0 ? fixed : 8 * static_cast<std::size_t>(g.between(2, 64));
        b.p = policy.allocate(b.size, stamp_alignment);
        *static_cast<std::uint64_t*>(b.p) = i;
      }
      for (block& b : live) {
        if (b.p != nullptr) {
          drop(b);
        }
      }
      return sum;
    });
  };
}

/// A bounded single-producer, single-consumer ring of blocks: a full ring stops its producer, so
/// at most `capacity` blocks per pair are ever in flight.
class ring {
public:
  static constexpr std::size_t capacity = 256;
  bool push(void* p) noexcept {
    const std::size_t tail = tail_.load(std::memory_order_relaxed);
    if (tail - head_.load(std::memory_order_acquire) == capacity) {
      return false;
    }
    slots_[tail % capacity] = p;
    tail_.store(tail + 1, std::memory_order_release);
    return true;
  }
  void* pop() noexcept {
    const std::size_t head = head_.load(std::memory_order_relaxed);
    if (head == tail_.load(std::memory_order_acquire)) {
      return nullptr;
    }
    void* p = slots_[head % capacity];
    head_.store(head + 1, std::memory_order_release);
    return p;
  }

private:
  alignas(cache_line_size) std::atomic<std::size_t> head_{0};
  alignas(cache_line_size) std::atomic<std::size_t> tail_{0};
  alignas(cache_line_size) std::array<void*, capacity> slots_{};
};

/// Resident memory sampled while the threads run: the note reports its range, so a variant
/// whose remote frees are never reused shows a growing figure.
struct rss_samples {
  std::size_t low = SIZE_MAX;
  std::size_t high = 0;
  std::size_t count = 0;
  void take() {
    const std::size_t kib = rss_kib();
    low = std::min(low, kib);
    high = std::max(high, kib);
    ++count;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::string note() const {
    if (count == 0) {
      return "RSS not sampled: the iteration ended within its first 1 ms";
    }
    return "RSS sampled every 1 ms while running (" + std::to_string(count) +
           " samples): " + std::to_string(low) + "-" + std::to_string(high) + " KiB";
  }
};

/// threads / 2 pairs: each producer allocates `ops` blocks of threaded_block_size, stamps and
/// queues them; its consumer checks each stamp and frees the block, so every free is remote.
auto producer_consumer(unsigned threads, std::size_t ops) {
  return [threads, ops](auto& policy, std::string& note) {
    const unsigned pairs = threads / 2;
    std::vector<ring> rings(pairs);
    rss_samples rss;
    const std::uint64_t h = on_threads(
        threads,
        [&policy, &rings, ops, pairs](unsigned t) -> std::uint64_t {
          ring& q = rings[t % pairs];
          if (t < pairs) {
            for (std::size_t i = 0; i < ops; ++i) {
              void* p = policy.allocate(threaded_block_size, stamp_alignment);
              *static_cast<std::uint64_t*>(p) = i * 2 + t;
              while (!q.push(p)) {
                std::this_thread::yield();
              }
            }
            return 0;
          }
          std::uint64_t sum = 0;
          for (std::size_t i = 0; i < ops; ++i) {
            void* p;
            while ((p = q.pop()) == nullptr) {
              std::this_thread::yield();
            }
            sum = sum * 31 + *static_cast<std::uint64_t*>(p);
            policy.deallocate(p, threaded_block_size, stamp_alignment);
          }
          return sum;
        },
        [&rss] { rss.take(); });
    note = rss.note();
    return h;
  };
}

/// Each of `threads` workers serves `requests` json-tree requests from the one shared resource;
/// every fourth request's tree is dropped by the next worker instead (a response released on
/// another thread), so its nodes are freed remotely.
auto server(unsigned threads, std::size_t requests, const tree_shape& shape) {
  return [threads, requests, shape](auto& policy, std::string&) {
    using node = json_node<std::remove_reference_t<decltype(policy)>>;
    struct mailbox {
      std::mutex m;
      std::vector<node> trees;
    };
    std::vector<mailbox> boxes(threads);
    for (mailbox& b : boxes) {
      b.trees.reserve(requests / 4 + 1);
    }
    auto drain = [](mailbox& b) {
      std::lock_guard<std::mutex> lock(b.m);
      b.trees.clear();
    };
    const std::uint64_t h = on_threads(threads, [&](unsigned t) {
      std::uint64_t sum = 0;
      for (std::size_t i = 0; i < requests; ++i) {
        drain(boxes[t]);
        node root(policy);
        sum += build_request(root, policy, shape);
        if (i % 4 == 3) {
          mailbox& next = boxes[(t + 1) % threads];
          std::lock_guard<std::mutex> lock(next.m);
          next.trees.push_back(std::move(root));
        }
      }
      return sum;
    });
    for (mailbox& b : boxes) {
      drain(b);
    }
    return h;
  };
}

} // namespace

void add_threads(registry& r, const params& p) {
  const std::size_t ops = p.scaled(200'000);
  const std::size_t requests = p.scaled(2'000);
  const tree_shape shape{p.tree_depth < 1 ? 1 : p.tree_depth, p.tree_branching, p.tree_values};
  const hint fixed{threaded_block_size, 0};
  for (const unsigned n : thread_counts) {
    const std::string threads = std::to_string(n) + " thread" + (n == 1 ? "" : "s");
    const workload& mixed = r.add_workload(
        {threaded_name("mt-local", n), "operations", static_cast<double>(n * ops), 10,
         threads + ", each replacing a random one of its 256 live blocks " + std::to_string(ops) +
             " times with a block of 16-512 bytes"});
    r.add<std_policy, synchronized_multipool_policy, synchronized_multipool_spin_policy,
          thread_cached_policy, pmr_sync_pool_policy>(mixed, {}, local(n, ops, 0));
    r.add(tbb_policies{}, mixed, {}, local(n, ops, 0));
    const workload& same = r.add_workload(
        {threaded_name("mt-local-fixed", n), "operations", static_cast<double>(n * ops), 10,
         "mt-local with every block " + std::to_string(threaded_block_size) + " bytes"});
    r.add<std_policy, synchronized_pool_policy, synchronized_pool_spin_policy,
          concurrent_pool_policy, thread_cached_pool_policy, pmr_sync_pool_policy,
          boost_singleton_pool_policy, foonathan_thread_safe_pool_policy>(
        same, fixed, local(n, ops, threaded_block_size));
    r.add(adaptive_mutex_policies{}, same, fixed, local(n, ops, threaded_block_size));
    r.add(tbb_policies{}, same, fixed, local(n, ops, threaded_block_size));
    if (n >= 2) { // a producer and a consumer need two threads
      const workload& pc = r.add_workload(
          {threaded_name("mt-producer-consumer", n), "blocks", static_cast<double>(n / 2 * ops), 10,
           std::to_string(n / 2) + " producer/consumer pair(s): " + std::to_string(ops) +
               " blocks of " + std::to_string(threaded_block_size) +
               " bytes each through a ring of " + std::to_string(ring::capacity) +
               ", every free remote"});
      r.add<std_policy, synchronized_pool_policy, concurrent_pool_policy, thread_cached_pool_policy,
            pmr_sync_pool_policy, boost_singleton_pool_policy, foonathan_thread_safe_pool_policy>(
          pc, fixed, producer_consumer(n, ops));
      r.add(tbb_policies{}, pc, fixed, producer_consumer(n, ops));
    }
    const workload& srv = r.add_workload(
        {threaded_name("mt-server", n), "requests", static_cast<double>(n * requests), 10,
         threads + " sharing one resource, " + std::to_string(requests) +
             " json-tree requests each, every fourth request dropped by the next thread"});
    r.add<std_policy, synchronized_multipool_policy, thread_cached_policy, pmr_sync_pool_policy>(
        srv, {}, server(n, requests, shape));
    r.add(tbb_policies{}, srv, {}, server(n, requests, shape));
  }
}

} // namespace memkit::bench
