// SPDX-License-Identifier: BSL-1.0
// Worker threads share one pool of message buffers through memkit::synchronized: every allocate
// and deallocate runs under its mutex, so a buffer one thread fills can be freed by another.
#include <array>
#include <cstdio>
#include <cstring>
#include <memkit/pool.hpp>
#include <memkit/synchronized.hpp>
#include <mutex>
#include <queue>
#include <thread>
#include <vector>

namespace {

struct message {
  int producer;
  std::array<char, 56> text;
};

} // namespace

int main() {
  memkit::synchronized<memkit::pool<>> buffers(sizeof(message), alignof(message));
  std::mutex queue_lock;
  std::queue<message*> queue;

  // Producers take buffers from the shared pool and post them...
  std::vector<std::thread> producers;
  for (int id = 0; id < 3; ++id) {
    producers.emplace_back([&, id] {
      for (int i = 0; i < 1000; ++i) {
        auto* m = static_cast<message*>(buffers.allocate(sizeof(message), alignof(message)));
        m->producer = id;
        std::snprintf(m->text.data(), m->text.size(), "message %d from %d", i, id);
        const std::lock_guard<std::mutex> lock(queue_lock);
        queue.push(m);
      }
    });
  }
  for (auto& t : producers) {
    t.join();
  }

  // ...and this thread reads and frees them: the pool's lock makes the cross-thread free safe.
  int per_producer[3] = {};
  while (!queue.empty()) {
    message* m = queue.front();
    queue.pop();
    per_producer[m->producer] += std::strncmp(m->text.data(), "message ", 8) == 0 ? 1 : 0;
    buffers.deallocate(m, sizeof(message), alignof(message));
  }
  const std::size_t in_use = buffers.in_use();
  std::printf("read %d + %d + %d messages; buffers in use: %zu\n", per_producer[0], per_producer[1],
              per_producer[2], in_use);
  return per_producer[0] == 1000 && per_producer[1] == 1000 && per_producer[2] == 1000 &&
                 in_use == 0
             ? 0
             : 1;
}
