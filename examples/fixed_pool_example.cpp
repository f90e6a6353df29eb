// SPDX-License-Identifier: BSL-1.0
// A receive path whose packets live in a pool inside the receiver: bursts never reach the heap.
#include <memkit/fixed_pool.hpp>

#include <array>
#include <cstdint>
#include <cstdio>
#include <new>

namespace {

struct packet {
  std::uint32_t sequence;
  std::array<char, 60> payload;
};

constexpr std::size_t slots = 16;

class receiver {
public:
  /// Queues a packet, or returns false (dropped, not queued on the heap) when every slot is in use.
  bool receive(std::uint32_t sequence) {
    void* slot = pool_.try_allocate(sizeof(packet), alignof(packet));
    if (slot == nullptr) {
      return false;
    }
    queue_[count_++] = ::new (slot) packet{sequence, {}};
    return true;
  }

  /// Processes every queued packet, returning its slot; \returns the sum of sequence numbers.
  std::uint64_t drain() {
    std::uint64_t sum = 0;
    for (std::size_t i = 0; i < count_; ++i) {
      sum += queue_[i]->sequence;
      queue_[i]->~packet();
      pool_.deallocate(queue_[i], sizeof(packet), alignof(packet));
    }
    count_ = 0;
    return sum;
  }

  std::size_t in_use() const { return pool_.in_use(); }

private:
  memkit::inline_fixed_pool<sizeof(packet), slots, alignof(packet)> pool_;
  std::array<packet*, slots> queue_{};
  std::size_t count_ = 0;
};

} // namespace

int main() {
  receiver rx;
  unsigned long long received = 0, expected = 0; // sums of sequence numbers
  std::uint32_t dropped = 0;
  for (std::uint32_t seq = 1; seq <= 1000; ++seq) {
    if (rx.receive(seq)) {
      expected += seq;
    } else {
      ++dropped;
    }
    if (seq % 20 == 0) { // the consumer wakes up every 20 packets and finds 16 queued
      received += rx.drain();
    }
  }
  received += rx.drain();
  std::printf("received %llu, dropped %u packets through %zu slots\n", received, dropped, slots);
  return received == expected && dropped == 200 && rx.in_use() == 0 ? 0 : 1;
}
