// SPDX-License-Identifier: BSL-1.0
// A message queue for a device with no heap: variable-size messages live in one static buffer,
// served by a static-mode multipool, and are checked when they are consumed.
#include <cstdio>
#include <cstring>
#include <memkit/multipool.hpp>
#include <new>

namespace {

struct message {
  message* next;
  std::size_t length; // payload bytes, stored right after the header
  char* payload() { return reinterpret_cast<char*>(this + 1); }
};

alignas(memkit::page_size) unsigned char storage[std::size_t{256} * 1024];

} // namespace

int main() {
  // 8 KiB chunks: a class that is used little does not hold on to much of the buffer.
  memkit::multipool<> pool(storage, sizeof storage, {1024, std::size_t{8} * 1024});
  message* head = nullptr;
  message** tail = &head;
  unsigned produced = 0;
  unsigned consumed = 0;
  int errors = 0;

  auto produce = [&] {
    const std::size_t length = 8 + (produced * 37) % 600;
    void* memory = pool.try_allocate(sizeof(message) + length, alignof(message));
    if (memory == nullptr) {
      return false;
    }
    auto* m = ::new (memory) message{nullptr, length};
    std::memset(m->payload(), static_cast<int>('a' + produced % 26), length);
    *tail = m;
    tail = &m->next;
    ++produced;
    return true;
  };
  auto consume = [&] {
    message* m = head;
    head = m->next;
    tail = head == nullptr ? &head : tail;
    const char expected = static_cast<char>('a' + consumed % 26);
    for (std::size_t i = 0; i < m->length; ++i) {
      errors += m->payload()[i] != expected ? 1 : 0;
    }
    ++consumed;
    pool.deallocate(m, sizeof(message) + m->length, alignof(message));
  };

  // Bursts of traffic: fill until the buffer is exhausted, drain most, repeat.
  for (int burst = 0; burst < 5; ++burst) {
    while (produce()) {
    }
    while (produced - consumed > 50) {
      consume();
    }
  }
  std::printf("multipool example: %u messages through %zu KiB, %zu live in %zu bytes, %d errors\n",
              produced, sizeof storage / 1024, pool.in_use(), pool.bytes_in_use(), errors);
  while (head != nullptr) {
    consume();
  }
  return errors == 0 && pool.in_use() == 0 && produced > 1000 ? 0 : 1;
}
