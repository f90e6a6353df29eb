// SPDX-License-Identifier: BSL-1.0
#include "memkit/audit.hpp"

#include <cstddef>
#include <gtest/gtest.h>
#include <memory>
#include <memory_resource>
#include <scoped_allocator>
#include <string>

#include "memkit/allocator.hpp"
#include "memkit/upstream.hpp"

namespace {

// The standard's and memkit's own allocators pass.
static_assert(memkit::audit<std::allocator<int>>());
static_assert(memkit::audit<std::pmr::polymorphic_allocator<int>>());
static_assert(memkit::audit<memkit::allocator<std::string, memkit::malloc_resource>>());
static_assert(memkit::audit<std::scoped_allocator_adaptor<std::allocator<int>>>());

struct pool_handle {
  int blocks[4];
};

/// The allocator of docs/background.md#stateful-always-equal: a stateful pool allocator that
/// claims every instance is interchangeable and does not propagate on move assignment.
template <class T>
struct lying_pool_allocator {
  using value_type = T;
  using is_always_equal = std::true_type;
  explicit lying_pool_allocator(pool_handle& p) noexcept : pool(&p) {}
  template <class U>
  lying_pool_allocator(const lying_pool_allocator<U>& o) noexcept : pool(o.pool) {}
  T* allocate(std::size_t n) { return std::allocator<T>().allocate(n); }
  void deallocate(T* p, std::size_t n) noexcept { std::allocator<T>().deallocate(p, n); }
  friend bool operator==(const lying_pool_allocator& a, const lying_pool_allocator& b) noexcept {
    return a.pool == b.pool;
  }
  friend bool operator!=(const lying_pool_allocator& a, const lying_pool_allocator& b) noexcept {
    return a.pool != b.pool;
  }
  pool_handle* pool;
};

/// The same lie, but propagating on move assignment: move assignment is safe, swap is not.
template <class T>
struct propagating_liar : lying_pool_allocator<T> {
  using propagate_on_container_move_assignment = std::true_type;
  using lying_pool_allocator<T>::lying_pool_allocator;
  template <class U>
  struct rebind {
    using other = propagating_liar<U>;
  };
  template <class U>
  propagating_liar(const propagating_liar<U>& o) noexcept : lying_pool_allocator<T>(*o.pool) {}
};

/// A pool allocator parameterized by a block count (docs/background.md#pool-allocator-rebind): a
/// non-type template parameter defeats the automatic rebind.
template <class T, std::size_t BlockCount>
struct fixed_count_allocator {
  using value_type = T;
  T* allocate(std::size_t n) { return std::allocator<T>().allocate(n); }
  void deallocate(T* p, std::size_t n) noexcept { std::allocator<T>().deallocate(p, n); }
  friend bool operator==(fixed_count_allocator, fixed_count_allocator) noexcept { return true; }
  friend bool operator!=(fixed_count_allocator, fixed_count_allocator) noexcept { return false; }
};

struct no_members {};

template <class T>
struct no_deallocate {
  using value_type = T;
  T* allocate(std::size_t n) { return std::allocator<T>().allocate(n); }
  friend bool operator==(no_deallocate, no_deallocate) noexcept { return true; }
  friend bool operator!=(no_deallocate, no_deallocate) noexcept { return false; }
};

template <class T>
struct copy_not_noexcept {
  using value_type = T;
  copy_not_noexcept() = default;
  copy_not_noexcept(const copy_not_noexcept&) {}
  template <class U>
  copy_not_noexcept(const copy_not_noexcept<U>&) {}
  T* allocate(std::size_t n) { return std::allocator<T>().allocate(n); }
  void deallocate(T* p, std::size_t n) noexcept { std::allocator<T>().deallocate(p, n); }
  friend bool operator==(copy_not_noexcept, copy_not_noexcept) noexcept { return true; }
  friend bool operator!=(copy_not_noexcept, copy_not_noexcept) noexcept { return false; }
};

/// Propagates on move assignment but holds a reference, so it cannot be assigned at all.
template <class T>
struct unassignable {
  using value_type = T;
  using propagate_on_container_move_assignment = std::true_type;
  explicit unassignable(pool_handle& p) noexcept : pool(p) {}
  template <class U>
  unassignable(const unassignable<U>& o) noexcept : pool(o.pool) {}
  T* allocate(std::size_t n) { return std::allocator<T>().allocate(n); }
  void deallocate(T* p, std::size_t n) noexcept { std::allocator<T>().deallocate(p, n); }
  friend bool operator==(const unassignable& a, const unassignable& b) noexcept {
    return &a.pool == &b.pool;
  }
  friend bool operator!=(const unassignable& a, const unassignable& b) noexcept {
    return !(a == b);
  }
  pool_handle& pool;
};

TEST(Audit, AcceptsStandardAndMemkitAllocators) {
  EXPECT_TRUE(memkit::is_sound_allocator_v<std::allocator<double>>);
  EXPECT_TRUE(memkit::is_sound_allocator_v<std::pmr::polymorphic_allocator<double>>);
  EXPECT_TRUE((memkit::is_sound_allocator_v<memkit::allocator<int, memkit::malloc_resource>>));
}

TEST(Audit, FlagsAStatefulPoolAllocatorThatClaimsToBeAlwaysEqual) {
  using a = memkit::allocator_audit<lying_pool_allocator<int>>;
  EXPECT_TRUE(a::stateful);
  EXPECT_TRUE(a::stateful_always_equal);
  EXPECT_TRUE(a::unsafe_move_assignment);
  EXPECT_TRUE(a::rebinds);
  EXPECT_FALSE(a::ok);
}

TEST(Audit, FlagsAStatefulAllocatorClaimingAlwaysEqualEvenWhenItPropagates) {
  using a = memkit::allocator_audit<propagating_liar<int>>;
  EXPECT_TRUE(a::stateful_always_equal);
  EXPECT_FALSE(a::unsafe_move_assignment);
  EXPECT_FALSE(a::ok);
}

TEST(Audit, FlagsAnAllocatorThatCannotBeRebound) {
  using a = memkit::allocator_audit<fixed_count_allocator<int, 64>>;
  EXPECT_TRUE(a::has_allocate && a::has_deallocate && a::equality_comparable);
  EXPECT_FALSE(a::rebinds);
  EXPECT_FALSE(a::ok);
}

TEST(Audit, FlagsMissingMembersWithoutFailingToCompile) {
  using none = memkit::allocator_audit<no_members>;
  EXPECT_FALSE(none::has_value_type);
  EXPECT_FALSE(none::has_allocate);
  EXPECT_FALSE(none::has_deallocate);
  EXPECT_FALSE(none::equality_comparable);
  EXPECT_FALSE(none::rebinds);
  using no_free = memkit::allocator_audit<no_deallocate<int>>;
  EXPECT_TRUE(no_free::has_allocate);
  EXPECT_FALSE(no_free::has_deallocate);
  EXPECT_FALSE(no_free::ok);
}

TEST(Audit, AcceptsACopyConstructorNotDeclaredNoexcept) {
  // The standard requires that copying does not throw, not that it says so.
  EXPECT_TRUE(memkit::allocator_audit<copy_not_noexcept<int>>::copyable);
  EXPECT_TRUE(memkit::allocator_audit<copy_not_noexcept<int>>::ok);
}

TEST(Audit, JudgesAnAdaptorStatelessWhenWhatItAdaptsIs) {
  using stateless = std::scoped_allocator_adaptor<std::allocator<int>>;
  using stateful = std::scoped_allocator_adaptor<lying_pool_allocator<int>, std::allocator<int>>;
  EXPECT_FALSE(std::is_empty_v<stateless>);
  EXPECT_FALSE(memkit::allocator_audit<stateless>::stateful);
  EXPECT_TRUE(memkit::allocator_audit<stateful>::stateful_always_equal);
}

TEST(Audit, FlagsMovePropagationOfAnUnassignableAllocator) {
  using a = memkit::allocator_audit<unassignable<int>>;
  EXPECT_TRUE(a::move_propagation_unusable);
  EXPECT_FALSE(a::stateful_always_equal);
  EXPECT_FALSE(a::ok);
}

} // namespace
