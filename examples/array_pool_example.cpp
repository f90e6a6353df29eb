// SPDX-License-Identifier: BSL-1.0
// A particle system whose per-particle state is a 2-byte countdown: array_pool packs the states
// back to back (a pointer-linked pool would spend 8 bytes on each) and recycles dead slots.
#include <memkit/array_pool.hpp>

#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

int main() {
  constexpr std::size_t max_particles = 4096;
  memkit::array_pool<> states(sizeof(std::uint16_t), max_particles);
  states.reserve(); // both arrays now, so the frame loop never calls malloc

  std::mt19937 rng(42); // fixed seed: the run is reproducible
  std::uniform_int_distribution<int> lifetime(5, 60);
  std::vector<std::uint16_t*> live;
  std::size_t spawned = 0;
  std::size_t expired = 0;

  for (int frame = 0; frame < 200; ++frame) {
    for (int i = 0; i < 40; ++i) {
      void* slot = states.try_allocate(sizeof(std::uint16_t), alignof(std::uint16_t));
      if (slot == nullptr) {
        break; // the budget is full: spawn fewer this frame
      }
      live.push_back(::new (slot) std::uint16_t(static_cast<std::uint16_t>(lifetime(rng))));
      ++spawned;
    }
    for (std::size_t i = 0; i < live.size();) {
      if (--*live[i] == 0) {
        states.deallocate(live[i], sizeof(std::uint16_t), alignof(std::uint16_t));
        live[i] = live.back();
        live.pop_back();
        ++expired;
      } else {
        ++i;
      }
    }
  }

  std::printf("spawned %zu, expired %zu, %zu alive in %zu bytes of state\n", spawned, expired,
              states.in_use(), states.in_use() * states.block_size());
  const bool consistent = states.in_use() == live.size() && spawned == expired + live.size();
  for (std::uint16_t* p : live) {
    states.deallocate(p, sizeof(std::uint16_t), alignof(std::uint16_t));
  }
  return consistent && states.in_use() == 0 ? 0 : 1;
}
