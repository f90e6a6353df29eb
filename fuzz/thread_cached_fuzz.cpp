// SPDX-License-Identifier: BSL-1.0
// fuzz/thread_cached_fuzz.cpp: memkit::thread_cached (any size) or memkit::thread_cached_pool (one
// size), chosen by the first byte, with fuzzed options. The model is single-threaded; the frees
// the input marks are remote: a second thread performs them while the fuzzing thread waits, so
// they go through that thread's outgoing batches, its exit and the owner's queue, and the run
// stays deterministic. MEMKIT_DEBUG=3 checks every remote batch and chunk count inside the engine.
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include "driver.hpp"
#include "memkit/thread_cached.hpp"

namespace {

/// A second thread that runs one job at a time for the fuzzing thread, which waits for each.
class helper_thread {
public:
  helper_thread() : thread_([this] { serve(); }) {}
  helper_thread(const helper_thread&) = delete;
  helper_thread& operator=(const helper_thread&) = delete;

  /// \effects the thread exits: its pending batches are posted, its heap abandoned.
  ~helper_thread() {
    {
      const std::lock_guard<std::mutex> lock(m_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }

  /// \effects runs `job` on the helper thread and returns when it is done.
  void run(std::function<void()> job) {
    std::unique_lock<std::mutex> lock(m_);
    job_ = std::move(job);
    wake_.notify_all();
    wake_.wait(lock, [this] { return !job_; });
  }

private:
  void serve() {
    std::unique_lock<std::mutex> lock(m_);
    for (;;) {
      wake_.wait(lock, [this] { return stop_ || static_cast<bool>(job_); });
      if (!job_) {
        return;
      }
      job_();
      job_ = nullptr;
      wake_.notify_all();
    }
  }

  std::mutex m_;
  std::condition_variable wake_;
  std::function<void()> job_;
  bool stop_ = false;
  std::thread thread_; // last: started once the members it uses exist
};

/// A thread-caching resource whose deallocate is sometimes remote and sometimes without a size, as
/// the input says; every other member is the resource's own. Checks `usable_size` at every free.
template <class Resource>
class remote_frees {
public:
  template <class... Args>
  remote_frees(memkit::fuzz::byte_reader& in, Args&&... args)
      : r_(std::forward<Args>(args)...), remote_(bits(in)), unsized_(bits(in)),
        helper_exits_first_(in.byte() % 2 == 0) {}
  remote_frees(const remote_frees&) = delete;
  remote_frees& operator=(const remote_frees&) = delete;

  /// \effects the helper thread exits before the resource is destroyed, or after (its binding is
  /// then stale and never followed), as the input said.
  ~remote_frees() {
    if (helper_exits_first_) {
      helper_.reset();
    }
  }

  const char* name() const noexcept { return r_.name(); }
  std::size_t max_size() const noexcept { return r_.max_size(); }
  std::size_t max_alignment() const noexcept { return r_.max_alignment(); }

  void* allocate(std::size_t bytes, std::size_t alignment) { return r_.allocate(bytes, alignment); }
  void* try_allocate(std::size_t bytes, std::size_t alignment) noexcept {
    return r_.try_allocate(bytes, alignment);
  }

  void deallocate(void* p, std::size_t bytes, std::size_t alignment) {
    if (p == nullptr) {
      r_.deallocate(p, bytes, alignment);
      return;
    }
    if (r_.usable_size(p) < (bytes == 0 ? 1 : bytes)) {
      std::fprintf(stderr, "memkit fuzz: %s: usable_size %zu below the size %zu\n", r_.name(),
                   r_.usable_size(p), bytes);
      std::abort();
    }
    const unsigned k = frees_++ % 64;
    const bool sized = (unsized_ >> k & 1) == 0;
    const auto free = [this, p, bytes, alignment, sized] {
      if (sized) {
        r_.deallocate(p, bytes, alignment);
      } else {
        r_.deallocate(p);
      }
    };
    if ((remote_ >> k & 1) != 0) {
      helper_->run(free);
    } else {
      free();
    }
  }

  bool owns(const void* p) const noexcept { return r_.owns(p); }
  /// \requires quiescence, which holds: the helper runs only while the fuzzing thread waits.
  void release() noexcept { r_.release(); }

private:
  static std::uint64_t bits(memkit::fuzz::byte_reader& in) noexcept {
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i) {
      v = v << 8 | in.byte();
    }
    return v;
  }

  // Before r_, so destroyed after it unless the destructor ends the thread first.
  std::optional<helper_thread> helper_{std::in_place};
  Resource r_;
  std::uint64_t remote_;
  std::uint64_t unsized_;
  unsigned frees_ = 0;
  bool helper_exits_first_;
};

memkit::thread_cached_options fuzz_options(memkit::fuzz::byte_reader& in) {
  memkit::thread_cached_options o;
  o.max_class_size = in.below(8193); // clamped by the resource to [16, 8192]
  o.cached_chunks = in.below(9);
  o.batch_blocks = 1 + in.below(128);
  return o;
}

struct any_size : memkit::fuzz::target_defaults {
  using resource = remote_frees<memkit::thread_cached<memkit::fuzz::upstream>>;

  static std::unique_ptr<resource> make(memkit::fuzz::byte_reader& in) {
    const memkit::thread_cached_options o = fuzz_options(in);
    return std::make_unique<resource>(in, memkit::fuzz::upstream(), o);
  }
};

struct one_size : memkit::fuzz::target_defaults {
  using resource = remote_frees<memkit::thread_cached_pool<memkit::fuzz::upstream>>;

  static std::unique_ptr<resource> make(memkit::fuzz::byte_reader& in) {
    const std::size_t block_size = in.below(8193);
    const std::size_t block_alignment = in.power_of_two(12);
    const memkit::thread_cached_options o = fuzz_options(in);
    return std::make_unique<resource>(in, block_size, block_alignment, memkit::fuzz::upstream(), o);
  }
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) {
    return 0;
  }
  return data[0] % 2 == 0 ? memkit::fuzz::run<any_size>(data + 1, size - 1)
                          : memkit::fuzz::run<one_size>(data + 1, size - 1);
}
