// SPDX-License-Identifier: BSL-1.0
// Detection of the resource interface (memkit/traits.hpp): each trait on hand-made types that have
// or lack exactly one member, and on the library's own resources. Built as C++17 in memkit_tests
// and as C++20 in memkit_traits_cxx20_tests, where every concept must agree with its trait.
#include <cstddef>
#include <gtest/gtest.h>

#include "memkit/memkit.hpp"
#include "memkit/test_resource.hpp"
#include "memkit/traits.hpp"

namespace {

// The smallest resource: the interface and nothing optional.
struct minimal {
  const char* name() const noexcept { return "minimal"; }
  std::size_t max_size() const noexcept { return 0; }
  std::size_t max_alignment() const noexcept { return 1; }
  void* allocate(std::size_t, std::size_t) { return nullptr; }
  void* try_allocate(std::size_t, std::size_t) noexcept { return nullptr; }
  void deallocate(void*, std::size_t, std::size_t) noexcept {}
};

struct no_name : minimal {
  void name() = delete;
};
struct no_max_size : minimal {
  void max_size() = delete;
};
struct no_allocate : minimal {
  void allocate() = delete;
};
struct throwing_try_allocate : minimal {
  void* try_allocate(std::size_t, std::size_t) { return nullptr; }
};
struct throwing_deallocate : minimal {
  void deallocate(void*, std::size_t, std::size_t) {}
};

struct position {};
struct everything : minimal {
  bool owns(const void*) const noexcept { return false; }
  void reset() noexcept {}
  void release() noexcept {}
  position marker() const noexcept { return {}; }
  void rollback(const position&) noexcept {}
  std::size_t used() const noexcept { return 0; }
  void* allocate_array(std::size_t, std::size_t) { return nullptr; }
  void deallocate_array(void*, std::size_t, std::size_t) noexcept {}
  memkit::statistics stats() const noexcept { return {}; }
  std::size_t in_use() const noexcept { return 0; }
  std::size_t live_blocks() const noexcept { return 0; }
  bool operator==(const everything&) const noexcept { return true; }
  bool operator!=(const everything&) const noexcept { return false; }
};

// Markers without `used()` cannot be ordered, so they do not count.
struct markers_without_used : minimal {
  position marker() const noexcept { return {}; }
  void rollback(const position&) noexcept {}
};
// Half an array path is none.
struct allocate_array_only : minimal {
  void* allocate_array(std::size_t, std::size_t) { return nullptr; }
};
// `==` without `!=` is not enough for containers' allocator comparisons (before C++20).
struct equal_only : minimal {
  bool operator==(const equal_only&) const noexcept { return true; }
  bool operator!=(const equal_only&) const = delete;
};

static_assert(memkit::is_resource_v<minimal>);
static_assert(!memkit::is_resource_v<no_name>);
static_assert(!memkit::is_resource_v<no_max_size>);
static_assert(!memkit::is_resource_v<no_allocate>);
static_assert(!memkit::is_resource_v<throwing_try_allocate>, "try_allocate must be noexcept");
static_assert(!memkit::is_resource_v<throwing_deallocate>, "deallocate must be noexcept");
static_assert(!memkit::is_resource_v<int>);

static_assert(!memkit::has_owns_v<minimal> && memkit::has_owns_v<everything>);
static_assert(!memkit::has_reset_v<minimal> && memkit::has_reset_v<everything>);
static_assert(!memkit::has_release_v<minimal> && memkit::has_release_v<everything>);
static_assert(!memkit::has_markers_v<minimal> && memkit::has_markers_v<everything>);
static_assert(!memkit::has_markers_v<markers_without_used>);
static_assert(std::is_same_v<memkit::marker_t<everything>, position>);
static_assert(!memkit::has_array_path_v<minimal> && memkit::has_array_path_v<everything>);
static_assert(!memkit::has_array_path_v<allocate_array_only>);
static_assert(!memkit::has_stats_v<minimal> && memkit::has_stats_v<everything>);
static_assert(!memkit::has_in_use_v<minimal> && memkit::has_in_use_v<everything>);
static_assert(!memkit::has_live_blocks_v<minimal> && memkit::has_live_blocks_v<everything>);
static_assert(!memkit::has_equality_v<minimal> && memkit::has_equality_v<everything>);
static_assert(!memkit::has_equality_v<equal_only>);

// The library's own resources, as the decorators and adapters see them.
using pool = memkit::pool<>;
using arena = memkit::arena<>;
using stack = memkit::stack<>;
using node_pool = memkit::node_pool<>;
using checked_arena = memkit::debug_resource<arena>;
using checked_pool = memkit::debug_resource<pool>;
using locked_pool = memkit::synchronized<pool>;
using locked_arena = memkit::synchronized<arena>;

static_assert(memkit::is_resource_v<pool> && memkit::is_resource_v<memkit::test_resource> &&
              memkit::is_resource_v<memkit::resource_ref<pool>> &&
              memkit::is_resource_v<checked_pool> && memkit::is_resource_v<locked_pool>);
static_assert(memkit::has_owns_v<pool> && !memkit::has_owns_v<memkit::malloc_resource>);
static_assert(memkit::has_reset_v<arena> && memkit::has_release_v<arena>);
static_assert(memkit::has_markers_v<arena> && memkit::has_markers_v<stack>);
static_assert(!memkit::has_markers_v<pool> && !memkit::has_markers_v<memkit::multipool<>>);
static_assert(memkit::has_markers_v<checked_arena> && !memkit::has_markers_v<checked_pool>,
              "debug_resource has markers exactly when what it wraps has them");
static_assert(memkit::has_markers_v<locked_arena> && !memkit::has_markers_v<locked_pool>,
              "synchronized has markers exactly when what it wraps has them");
static_assert(memkit::has_array_path_v<node_pool> && !memkit::has_array_path_v<pool>);
static_assert(memkit::has_stats_v<pool> && memkit::has_stats_v<node_pool> &&
              memkit::has_stats_v<locked_pool>);
static_assert(memkit::has_in_use_v<pool> && memkit::has_live_blocks_v<checked_pool>);
static_assert(memkit::has_equality_v<memkit::malloc_resource> &&
              memkit::has_equality_v<memkit::resource_ref<pool>> && !memkit::has_equality_v<pool>);

#if MEMKIT_CONCEPTS
// Each concept is its trait plus the resource interface.
template <class R>
constexpr bool concepts_agree() {
  return memkit::resource<R> == memkit::is_resource_v<R> &&
         memkit::resource_with_owns<R> ==
             (memkit::is_resource_v<R> && memkit::has_owns_v<R>)&&memkit::resource_with_reset<R> ==
             (memkit::is_resource_v<R> &&
              memkit::has_reset_v<R>)&&memkit::resource_with_release<R> ==
             (memkit::is_resource_v<R> &&
              memkit::has_release_v<R>)&&memkit::resource_with_markers<R> ==
             (memkit::is_resource_v<R> &&
              memkit::has_markers_v<R>)&&memkit::resource_with_array_path<R> ==
             (memkit::is_resource_v<R> &&
              memkit::has_array_path_v<R>)&&memkit::resource_with_stats<R> ==
             (memkit::is_resource_v<R> &&
              memkit::has_stats_v<R>)&&memkit::resource_with_in_use<R> ==
             (memkit::is_resource_v<R> &&
              memkit::has_in_use_v<R>)&&memkit::resource_with_live_blocks<R> ==
             (memkit::is_resource_v<R> &&
              memkit::has_live_blocks_v<R>)&&memkit::interchangeable_resource<R> ==
             (memkit::is_resource_v<R> && memkit::has_equality_v<R>);
}
static_assert(concepts_agree<minimal>() && concepts_agree<everything>() &&
              concepts_agree<no_name>() && concepts_agree<no_max_size>() &&
              concepts_agree<no_allocate>() && concepts_agree<throwing_try_allocate>() &&
              concepts_agree<throwing_deallocate>() && concepts_agree<markers_without_used>() &&
              concepts_agree<allocate_array_only>() && concepts_agree<equal_only>() &&
              concepts_agree<int>());
static_assert(concepts_agree<pool>() && concepts_agree<arena>() && concepts_agree<stack>() &&
              concepts_agree<node_pool>() && concepts_agree<checked_arena>() &&
              concepts_agree<checked_pool>() && concepts_agree<locked_pool>() &&
              concepts_agree<memkit::malloc_resource>() &&
              concepts_agree<memkit::resource_ref<pool>>() &&
              concepts_agree<memkit::test_resource>());
#endif

TEST(Traits, InterchangeableOnlyWhenTheTypeSaysSo) {
  memkit::malloc_resource a;
  memkit::malloc_resource b;
  EXPECT_TRUE(memkit::detail::interchangeable(a, b));
  pool p(32);
  pool q(32);
  EXPECT_FALSE(memkit::detail::interchangeable(p, q)) << "no operator==: equal only to itself";
  EXPECT_TRUE(memkit::detail::interchangeable(memkit::resource_ref<pool>(p),
                                              memkit::resource_ref<pool>(p)));
  EXPECT_FALSE(memkit::detail::interchangeable(memkit::resource_ref<pool>(p),
                                               memkit::resource_ref<pool>(q)));
}

TEST(Traits, ConceptsAreAvailableExactlyFromCxx20) {
#if defined(__cpp_concepts) && __cpp_concepts >= 201907L
  EXPECT_EQ(MEMKIT_CONCEPTS, 1);
#else
  EXPECT_EQ(MEMKIT_CONCEPTS, 0);
#endif
}

} // namespace
