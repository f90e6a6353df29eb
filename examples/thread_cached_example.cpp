// SPDX-License-Identifier: BSL-1.0
// Requests built on one worker thread and released on another: a thread_cached resource serves
// both without a lock on the common path, and sends each freed block back to the thread whose
// heap it came from, in batches. A thread_cached_pool does the same for one fixed-size record.
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <memkit/thread_cached.hpp>
#include <mutex>
#include <new>
#include <thread>
#include <vector>

namespace {

struct request {
  std::size_t id;
  std::size_t length; // payload bytes, right after the header
  char* payload() { return reinterpret_cast<char*>(this + 1); }
};

struct record { // fixed size: one per request, from the pool
  std::size_t id;
  std::size_t checksum;
};

// The hand-over between the two workers: any synchronising queue will do.
class queue {
public:
  void push(request* r) {
    {
      const std::lock_guard<std::mutex> lock(m_);
      q_.push_back(r);
    }
    cv_.notify_one();
  }
  request* pop() {
    std::unique_lock<std::mutex> lock(m_);
    cv_.wait(lock, [&] { return !q_.empty(); });
    request* r = q_.front();
    q_.pop_front();
    return r;
  }

private:
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<request*> q_;
};

} // namespace

int main() {
  memkit::thread_cached<> heap;
  memkit::thread_cached_pool<> records(sizeof(record), alignof(record));
  constexpr std::size_t requests = 20000;
  queue q;
  std::size_t errors = 0;
  std::size_t usable_total = 0;

  std::thread builder([&] {
    for (std::size_t i = 0; i < requests; ++i) {
      const std::size_t length = 16 + (i * 37) % 1000;
      auto* r =
          ::new (heap.allocate(sizeof(request) + length, alignof(request))) request{i, length};
      std::memset(r->payload(), static_cast<int>('a' + i % 26), length);
      q.push(r);
    }
    q.push(nullptr);
  });

  std::thread consumer([&] {
    std::vector<record*> kept;
    while (request* r = q.pop()) {
      auto* rec = ::new (records.allocate(sizeof(record), alignof(record))) record{r->id, 0};
      for (std::size_t k = 0; k < r->length; ++k) {
        rec->checksum += static_cast<unsigned char>(r->payload()[k]);
      }
      errors += rec->checksum != r->length * static_cast<std::size_t>('a' + r->id % 26) ? 1 : 0;
      usable_total += heap.usable_size(r) - (sizeof(request) + r->length);
      // Freed without its size, as free(p): the chunk header has it. The block goes back to the
      // builder's heap in a batch with others, not one atomic operation each.
      heap.deallocate(r);
      kept.push_back(rec);
    }
    for (record* rec : kept) {
      records.deallocate(rec, sizeof(record), alignof(record));
    }
  });

  builder.join();
  consumer.join();
  std::printf("%zu requests built on one thread and freed on another, %zu checksum errors\n",
              requests, errors);
  std::printf("size-class slack: %.1f bytes a request on average\n",
              static_cast<double>(usable_total) / requests);
  std::printf("per-thread heaps: %zu for the requests, %zu for the records\n", heap.heap_count(),
              records.heap_count());
  return errors == 0 ? 0 : 1;
}
