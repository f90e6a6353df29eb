// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/workloads/stamps.hpp: what the allocator-field workloads (larson.cpp,
// xmalloc.cpp, pareto.cpp, leak_on_exit.cpp, glibc_simple.cpp, large_blocks.cpp) share: a block
// stamped with a value its freer reads back, a hash of such values that does not depend on which
// thread read them, and the variants a general-purpose allocator's workload runs under.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "core/registry.hpp"
#include "policies/memkit.hpp"
#include "policies/threaded.hpp"

namespace memkit::bench {

/// Every block holds a pointer-sized stamp, so every size is served with pointer alignment.
inline constexpr std::size_t stamped_alignment = alignof(std::uint64_t);

/// A live block and the size it was allocated with (the sized deallocation needs it back).
struct stamped_block {
  void* p = nullptr;
  std::size_t size = 0;
};

/// \effects writes `v` into the first word of `p` (at least 8 bytes, pointer-aligned).
inline void write_stamp(void* p, std::uint64_t v) noexcept { std::memcpy(p, &v, sizeof v); }

/// \returns the first word of `p`.
inline std::uint64_t read_stamp(const void* p) noexcept {
  std::uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

/// splitmix64's finalizer: a stamp mixed before it is added to an order-free sum, so that two
/// wrong stamps cannot cancel out as plain numbers can.
inline std::uint64_t mix_stamp(std::uint64_t v) noexcept {
  v = (v ^ (v >> 30)) * 0xbf58476d1ce4e5b9ULL;
  v = (v ^ (v >> 27)) * 0x94d049bb133111ebULL;
  return v ^ (v >> 31);
}

/// The stamps of blocks freed by whichever thread got them first (a consumer, an inheriting
/// thread): a sum, which the order of the additions cannot change. Each thread adds its own
/// subtotal once, at its end.
class stamp_sum {
public:
  void add(std::uint64_t subtotal) noexcept { sum_.fetch_add(subtotal, std::memory_order_relaxed); }
  std::uint64_t value() const noexcept { return sum_.load(std::memory_order_relaxed); }

private:
  std::atomic<std::uint64_t> sum_{0};
};

/// The in-process variants of a workload written for general-purpose allocators, each also run
/// under every preloaded replacement as its std row: glibc (std), memkit's any-size per-thread
/// caches and oneTBB's scalable allocator (where installed).
template <class Iteration>
void add_general_purpose(registry& r, const workload& w, const hint& h,
                         const Iteration& iteration) {
  r.add<std_policy, thread_cached_policy>(w, h, iteration);
  r.add(tbb_policies{}, w, h, iteration);
}

} // namespace memkit::bench
