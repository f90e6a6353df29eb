// SPDX-License-Identifier: BSL-1.0
// examples/concurrent_pool_example.cpp: a request pipeline whose messages live in one
// memkit::concurrent_pool shared by every thread.
//
// Producers build messages and hand them to consumers through a queue; consumers free them. Every
// free is on another thread than the allocation, the pattern a per-thread pool cannot serve. The
// pool's allocate and deallocate are one compare-and-swap each, with no lock while it has free
// blocks; it takes a lock only to grow.
#include <memkit/concurrent_pool.hpp>

#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>
#include <new>
#include <thread>
#include <vector>

namespace {

struct message {
  unsigned producer;
  unsigned sequence;
  double payload[6];
};

/// A minimal blocking queue: enough to hand messages across threads.
class queue {
public:
  void push(message* m) {
    {
      const std::lock_guard<std::mutex> lock(m_);
      items_.push_back(m);
    }
    ready_.notify_one();
  }
  /// \returns the next message, or null once `close()` was called and nothing is left.
  message* pop() {
    std::unique_lock<std::mutex> lock(m_);
    ready_.wait(lock, [&] { return !items_.empty() || closed_; });
    if (items_.empty()) {
      return nullptr;
    }
    message* m = items_.front();
    items_.pop_front();
    return m;
  }
  void close() {
    {
      const std::lock_guard<std::mutex> lock(m_);
      closed_ = true;
    }
    ready_.notify_all();
  }

private:
  std::mutex m_;
  std::condition_variable ready_;
  std::deque<message*> items_;
  bool closed_ = false;
};

} // namespace

int main() {
  constexpr unsigned producers = 2;
  constexpr unsigned consumers = 2;
  constexpr unsigned per_producer = 20000;

  memkit::concurrent_pool<> pool(sizeof(message), alignof(message));
  queue q;
  std::vector<unsigned long> checksums(consumers, 0);

  std::vector<std::thread> threads;
  for (unsigned c = 0; c < consumers; ++c) {
    threads.emplace_back([&, c] {
      while (message* m = q.pop()) {
        checksums[c] += m->producer * 1000003UL + m->sequence;
        m->~message();
        pool.deallocate(m, sizeof(message), alignof(message)); // a remote free
      }
    });
  }
  std::vector<std::thread> producing;
  for (unsigned p = 0; p < producers; ++p) {
    producing.emplace_back([&, p] {
      for (unsigned i = 0; i < per_producer; ++i) {
        q.push(::new (pool.allocate(sizeof(message), alignof(message))) message{p, i, {}});
      }
    });
  }
  for (auto& t : producing) {
    t.join();
  }
  q.close();
  for (auto& t : threads) {
    t.join();
  }

  unsigned long expected = 0;
  for (unsigned p = 0; p < producers; ++p) {
    for (unsigned i = 0; i < per_producer; ++i) {
      expected += p * 1000003UL + i;
    }
  }
  unsigned long got = 0;
  for (unsigned long c : checksums) {
    got += c;
  }
  // Every thread is done: in_use() walks the free blocks, which needs quiescence.
  std::printf("%u messages through %zu chunks of %zu blocks of %zu bytes; %zu still in use\n",
              producers * per_producer, pool.chunk_count(), pool.blocks_per_chunk(),
              pool.block_size(), pool.in_use());
  return got == expected && pool.in_use() == 0 ? 0 : 1;
}
