// SPDX-License-Identifier: BSL-1.0
// Two subsystems with their own process-wide pools: the audio thread's containers use an
// unsynchronized multipool of their own (no lock on its path), everything else the default,
// thread-safe one. static_allocator is stateless, so containers need no constructor argument.
#include <cstdio>
#include <list>
#include <map>
#include <memkit/static_allocator.hpp>
#include <thread>
#include <vector>

namespace {

struct audio_tag {};

} // namespace

// Only the audio thread touches containers of this tag, so its resource needs no lock.
template <>
struct memkit::static_resource_traits<audio_tag> {
  using resource_type = memkit::multipool<>;
  static resource_type& get() noexcept {
    return memkit::static_resource<resource_type, audio_tag>();
  }
};

int main() {
  long voices_played = 0;
  std::thread audio([&voices_played] {
    std::list<int, memkit::static_allocator<int, audio_tag>> voices;
    for (int frame = 0; frame < 1000; ++frame) {
      voices.push_back(frame);
      if (voices.size() > 16) {
        voices.pop_front();
        ++voices_played;
      }
    }
  });
  // The default tag is shared by every thread, through per-thread caches (thread_cached<>).
  std::map<int, int, std::less<>, memkit::static_allocator<std::pair<const int, int>>> settings;
  for (int i = 0; i < 100; ++i) {
    settings.emplace(i, i * i);
  }
  audio.join();
  const std::size_t audio_in_use = memkit::static_allocator<int, audio_tag>::resource().in_use();
  std::printf("voices played %ld, settings %zu, audio pool blocks in use after the thread: %zu\n",
              voices_played, settings.size(), audio_in_use);
  return voices_played == 984 && settings.at(9) == 81 && audio_in_use == 0 ? 0 : 1;
}
