// SPDX-License-Identifier: BSL-1.0
// Auditing allocators before handing them to containers: memkit's own pass in a static_assert,
// and a hand-written stateful pool allocator that claims is_always_equal and does not propagate
// on move assignment (docs/background.md#stateful-always-equal) is reported, flaw by flaw.
#include <cstddef>
#include <cstdio>
#include <memkit/allocator.hpp>
#include <memkit/audit.hpp>
#include <memkit/node_pool.hpp>
#include <memory>

namespace {

struct pool_state {
  void* free_list = nullptr;
};

/// Stateful, yet claims every instance can free every other's memory, and does not propagate on
/// move assignment: std::list move assignment between two pools would corrupt both.
template <class T>
struct legacy_pool_allocator {
  using value_type = T;
  using is_always_equal = std::true_type;
  explicit legacy_pool_allocator(pool_state& s) noexcept : state(&s) {}
  template <class U>
  legacy_pool_allocator(const legacy_pool_allocator<U>& o) noexcept : state(o.state) {}
  T* allocate(std::size_t n) { return std::allocator<T>().allocate(n); }
  void deallocate(T* p, std::size_t n) noexcept { std::allocator<T>().deallocate(p, n); }
  friend bool operator==(legacy_pool_allocator a, legacy_pool_allocator b) noexcept {
    return a.state == b.state;
  }
  friend bool operator!=(legacy_pool_allocator a, legacy_pool_allocator b) noexcept {
    return !(a == b);
  }
  pool_state* state;
};

} // namespace

static_assert(memkit::audit<memkit::allocator<int, memkit::node_pool<>>>());

int main() {
  using findings = memkit::allocator_audit<legacy_pool_allocator<int>>;
  // static_assert(memkit::audit<legacy_pool_allocator<int>>()) would stop the build with these.
  std::printf("legacy_pool_allocator: sound %s; stateful but is_always_equal %s; unsafe move "
              "assignment %s; rebinds %s\n",
              findings::ok ? "yes" : "no", findings::stateful_always_equal ? "yes" : "no",
              findings::unsafe_move_assignment ? "yes" : "no", findings::rebinds ? "yes" : "no");
  return !findings::ok && findings::stateful_always_equal && findings::unsafe_move_assignment ? 0
                                                                                              : 1;
}
