// SPDX-License-Identifier: BSL-1.0
// The container x allocator conformance suite: every standard container with every kind of memkit
// allocator, through insert, erase, copy, move, swap and assign with equal and unequal allocator
// instances. A `tracked` layer under each allocator records every block, so a container freeing a
// block through an allocator that did not allocate it (docs/background.md#stateful-always-equal)
// is caught, and the spies under the strategies prove that nothing leaks.
#include <algorithm>
#include <deque>
#include <forward_list>
#include <gtest/gtest.h>
#include <list>
#include <map>
#include <memory_resource>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "memkit/aligned.hpp"
#include "memkit/allocator.hpp"
#include "memkit/arena.hpp"
#include "memkit/multipool.hpp"
#include "memkit/node_pool.hpp"
#include "memkit/pmr.hpp"
#include "memkit/static_allocator.hpp"
#include "support/spy_resource.hpp"

namespace {

using memkit::test::spy_resource;
using spy_ref = memkit::resource_ref<spy_resource>;

/// A decorator that remembers every block it hands out: a block returned to it that it did not
/// hand out (or with another size, alignment or path) is recorded as an error and not passed on,
/// so the strategy underneath is never corrupted by the mistake it reveals.
template <class R>
class tracked {
public:
  template <class... Args>
  explicit tracked(Args&&... args) : r_(std::forward<Args>(args)...) {}
  tracked(const tracked&) = delete;
  tracked& operator=(const tracked&) = delete;

  const char* name() const noexcept { return r_.name(); }
  std::size_t max_size() const noexcept { return r_.max_size(); }
  std::size_t max_alignment() const noexcept { return r_.max_alignment(); }

  void* allocate(std::size_t bytes, std::size_t alignment = memkit::default_alignment) {
    return memkit::detail::allocate_or_throw(*this, bytes, alignment);
  }
  void* try_allocate(std::size_t bytes,
                     std::size_t alignment = memkit::default_alignment) noexcept {
    return record(r_.try_allocate(bytes, alignment), bytes, alignment, false);
  }
  void deallocate(void* p, std::size_t bytes,
                  std::size_t alignment = memkit::default_alignment) noexcept {
    if (p != nullptr && forget(p, bytes, alignment, false)) {
      r_.deallocate(p, bytes, alignment);
    }
  }

  template <class Q = R, class = std::enable_if_t<memkit::has_array_path_v<Q>>>
  void* allocate_array(std::size_t bytes, std::size_t alignment) {
    return record(r_.allocate_array(bytes, alignment), bytes, alignment, true);
  }
  template <class Q = R, class = std::enable_if_t<memkit::has_array_path_v<Q>>>
  void deallocate_array(void* p, std::size_t bytes, std::size_t alignment) noexcept {
    if (p != nullptr && forget(p, bytes, alignment, true)) {
      r_.deallocate_array(p, bytes, alignment);
    }
  }

  std::size_t live() const noexcept { return live_.size(); }
  const std::vector<std::string>& errors() const noexcept { return errors_; }
  R& inner() noexcept { return r_; }

  void verify() const {
    EXPECT_EQ(live(), 0u) << name() << " still has blocks out";
    for (const std::string& e : errors_) {
      ADD_FAILURE() << e;
    }
  }

private:
  struct block {
    std::size_t bytes;
    std::size_t alignment;
    bool array;
  };

  void* record(void* p, std::size_t bytes, std::size_t alignment, bool array) {
    if (p != nullptr) {
      live_.emplace(p, block{bytes, alignment, array});
    }
    return p;
  }

  bool forget(void* p, std::size_t bytes, std::size_t alignment, bool array) {
    const auto it = live_.find(p);
    if (it == live_.end()) {
      errors_.push_back(std::string(name()) +
                        ": got back a block it never handed out (cross-resource free)");
      return false;
    }
    if (it->second.bytes != bytes || it->second.alignment != alignment ||
        it->second.array != array) {
      errors_.push_back(std::string(name()) + ": a block came back with another size, "
                                              "alignment or array/object path");
      return false;
    }
    live_.erase(it);
    return true;
  }

  R r_;
  std::map<void*, block> live_;
  std::vector<std::string> errors_;
};

// ---- allocator kinds ----------------------------------------------------------------------

/// memkit::allocator over a strategy: two strategy objects give unequal allocators.
template <class Strategy>
struct strategy_kind {
  using resource = tracked<Strategy>;
  using allocator = memkit::allocator<char, resource>;
  static constexpr bool has_unequal = true;

  struct env {
    env(spy_resource& sa, spy_resource& sb) : a(spy_ref(sa)), b(spy_ref(sb)) {}
    allocator first() { return allocator(a); }
    allocator second() { return allocator(b); }
    void verify() const {
      a.verify();
      b.verify();
    }
    resource a;
    resource b;
  };
};

struct node_pool_kind : strategy_kind<memkit::node_pool<spy_ref>> {
  static constexpr const char* name = "node_pool";
};
struct multipool_kind : strategy_kind<memkit::multipool<spy_ref>> {
  static constexpr const char* name = "multipool";
};
struct arena_kind : strategy_kind<memkit::arena<spy_ref>> {
  static constexpr const char* name = "arena";
};
struct aligned_kind : strategy_kind<memkit::aligned<spy_ref>> {
  static constexpr const char* name = "aligned";
};

/// std::pmr::polymorphic_allocator over memkit strategies through the pmr bridge.
struct pmr_kind {
  static constexpr const char* name = "pmr bridge";
  using resource = tracked<memkit::node_pool<spy_ref>>;
  using adapter = memkit::pmr::resource_adapter<memkit::resource_ref<resource>>;
  using allocator = std::pmr::polymorphic_allocator<char>;
  static constexpr bool has_unequal = true;

  struct env {
    env(spy_resource& sa, spy_resource& sb)
        : a(spy_ref(sa)), b(spy_ref(sb)), pa(memkit::resource_ref<resource>(a)),
          pb(memkit::resource_ref<resource>(b)) {}
    allocator first() { return allocator(&pa); }
    allocator second() { return allocator(&pb); }
    void verify() const {
      a.verify();
      b.verify();
    }
    resource a;
    resource b;
    adapter pa;
    adapter pb;
  };
};

struct static_tag {};

} // namespace

template <>
struct memkit::static_resource_traits<static_tag> {
  using resource_type = tracked<memkit::multipool<spy_ref>>;
  static resource_type& get() noexcept {
    // Never destroyed, as the default tags' resources are (static_allocator.hpp).
    static resource_type* const r =
        new resource_type(spy_ref(memkit::static_resource<spy_resource, static_tag>()));
    return *r;
  }
};

namespace {

/// memkit::static_allocator: every instance is equal, so there is no unequal case to test.
struct static_kind {
  static constexpr const char* name = "static_allocator";
  using allocator = memkit::static_allocator<char, static_tag>;
  static constexpr bool has_unequal = false;

  struct env {
    env(spy_resource&, spy_resource&) noexcept {}
    allocator first() { return {}; }
    allocator second() { return {}; }
    void verify() const { allocator::resource().verify(); }
  };
};

// ---- container families -------------------------------------------------------------------

template <class A, class T>
using rebind = typename std::allocator_traits<A>::template rebind_alloc<T>;
using kv = std::pair<const int, int>;

template <class It>
std::vector<int> sorted(It first, It last) {
  std::vector<int> v(first, last);
  std::sort(v.begin(), v.end());
  return v;
}

template <class C>
std::vector<int> sorted_keys(const C& c) {
  std::vector<int> v;
  for (const auto& [key, value] : c) {
    v.push_back(key);
  }
  std::sort(v.begin(), v.end());
  return v;
}

/// Sequences of ints: list, deque, vector.
template <template <class, class> class Seq>
struct sequence_family {
  template <class A>
  using type = Seq<int, rebind<A, int>>;
  template <class C>
  static void add(C& c, int v) {
    c.push_back(v);
  }
  template <class C>
  static void erase(C& c, int v) {
    c.erase(std::remove(c.begin(), c.end(), v), c.end());
  }
  template <class C>
  static void assign(C& c, const std::vector<int>& v) {
    c.assign(v.begin(), v.end());
  }
  template <class C>
  static std::vector<int> values(const C& c) {
    return sorted(c.begin(), c.end());
  }
};

struct list_family : sequence_family<std::list> {
  static constexpr const char* name = "list";
};
struct deque_family : sequence_family<std::deque> {
  static constexpr const char* name = "deque";
};
struct vector_family : sequence_family<std::vector> {
  static constexpr const char* name = "vector";
};

struct forward_list_family {
  static constexpr const char* name = "forward_list";
  template <class A>
  using type = std::forward_list<int, rebind<A, int>>;
  template <class C>
  static void add(C& c, int v) {
    c.push_front(v);
  }
  template <class C>
  static void erase(C& c, int v) {
    c.remove(v);
  }
  template <class C>
  static void assign(C& c, const std::vector<int>& v) {
    c.assign(v.begin(), v.end());
  }
  template <class C>
  static std::vector<int> values(const C& c) {
    return sorted(c.begin(), c.end());
  }
};

/// A string holds int v as the character '0' + v (values stay below 64 in these tests).
struct string_family {
  static constexpr const char* name = "string";
  template <class A>
  using type = std::basic_string<char, std::char_traits<char>, rebind<A, char>>;
  static char encode(int v) { return static_cast<char>('0' + v); }
  template <class C>
  static void add(C& c, int v) {
    c.push_back(encode(v));
  }
  template <class C>
  static void erase(C& c, int v) {
    c.erase(std::remove(c.begin(), c.end(), encode(v)), c.end());
  }
  template <class C>
  static void assign(C& c, const std::vector<int>& v) {
    c.clear();
    for (int x : v) {
      c.push_back(encode(x));
    }
  }
  template <class C>
  static std::vector<int> values(const C& c) {
    std::vector<int> v;
    for (char ch : c) {
      v.push_back(ch - '0');
    }
    std::sort(v.begin(), v.end());
    return v;
  }
};

/// Associative containers keyed by int: maps hold (v, v), sets hold v.
template <class Derived>
struct associative_family {
  template <class C>
  static void erase(C& c, int v) {
    c.erase(v);
  }
  template <class C>
  static void assign(C& c, const std::vector<int>& v) {
    c.clear();
    for (int x : v) {
      Derived::add(c, x);
    }
  }
};

template <template <class...> class Map>
struct map_family : associative_family<map_family<Map>> {
  template <class A>
  using type = Map<int, int, std::less<>, rebind<A, kv>>;
  template <class C>
  static void add(C& c, int v) {
    c.emplace(v, v);
  }
  template <class C>
  static std::vector<int> values(const C& c) {
    return sorted_keys(c);
  }
};

template <template <class...> class Set>
struct set_family : associative_family<set_family<Set>> {
  template <class A>
  using type = Set<int, std::less<>, rebind<A, int>>;
  template <class C>
  static void add(C& c, int v) {
    c.insert(v);
  }
  template <class C>
  static std::vector<int> values(const C& c) {
    return sorted(c.begin(), c.end());
  }
};

struct unordered_map_family : associative_family<unordered_map_family> {
  static constexpr const char* name = "unordered_map";
  template <class A>
  using type = std::unordered_map<int, int, std::hash<int>, std::equal_to<>, rebind<A, kv>>;
  template <class C>
  static void add(C& c, int v) {
    c.emplace(v, v);
  }
  template <class C>
  static std::vector<int> values(const C& c) {
    return sorted_keys(c);
  }
};

struct unordered_set_family : associative_family<unordered_set_family> {
  static constexpr const char* name = "unordered_set";
  template <class A>
  using type = std::unordered_set<int, std::hash<int>, std::equal_to<>, rebind<A, int>>;
  template <class C>
  static void add(C& c, int v) {
    c.insert(v);
  }
  template <class C>
  static std::vector<int> values(const C& c) {
    return sorted(c.begin(), c.end());
  }
};

struct map_f : map_family<std::map> {
  static constexpr const char* name = "map";
};
struct multimap_f : map_family<std::multimap> {
  static constexpr const char* name = "multimap";
};
struct set_f : set_family<std::set> {
  static constexpr const char* name = "set";
};
struct multiset_f : set_family<std::multiset> {
  static constexpr const char* name = "multiset";
};

// ---- the suite ----------------------------------------------------------------------------

std::vector<int> range(int from, int to) {
  std::vector<int> v;
  for (int i = from; i < to; ++i) {
    v.push_back(i);
  }
  return v;
}

template <class Kind>
struct kind_tag {
  using type = Kind;
};

/// Runs `body(env, kind_tag<Kind>)` for every allocator kind, each with fresh resources, then
/// checks that no block is still out or came back to the wrong resource, and that the strategies
/// returned every chunk to their spies.
template <class Family, class Kind, class Body>
void run_with(Body& body) {
  SCOPED_TRACE(std::string(Family::name) + " with " + Kind::name);
  spy_resource spy_a;
  spy_resource spy_b;
  {
    typename Kind::env env(spy_a, spy_b);
    body(env, kind_tag<Kind>{});
    env.verify();
  }
  EXPECT_EQ(spy_a.blocks_in_use() + spy_b.blocks_in_use(), 0u);
  EXPECT_TRUE(spy_a.errors().empty() && spy_b.errors().empty());
}

template <class Family, class Body>
void for_each_kind(Body body) {
  run_with<Family, node_pool_kind>(body);
  run_with<Family, multipool_kind>(body);
  run_with<Family, arena_kind>(body);
  run_with<Family, aligned_kind>(body);
  run_with<Family, pmr_kind>(body);
  run_with<Family, static_kind>(body);
}

/// The container type of `Family` for the allocator kind `Kind`, and helpers to build one.
template <class Family, class KindTag>
struct subject {
  using kind = typename KindTag::type;
  using container = typename Family::template type<typename kind::allocator>;
  using allocator_type = typename container::allocator_type;
  using traits = std::allocator_traits<allocator_type>;

  static container make(const typename kind::allocator& a, int from, int to) {
    container c{allocator_type(a)};
    for (int i = from; i < to; ++i) {
      Family::add(c, i);
    }
    return c;
  }
};

template <class Family>
class Containers : public ::testing::Test {};

using families = ::testing::Types<list_family, forward_list_family, deque_family, vector_family,
                                  string_family, map_f, multimap_f, set_f, multiset_f,
                                  unordered_map_family, unordered_set_family>;

struct family_names {
  template <class T>
  static std::string GetName(int) {
    return T::name;
  }
};
TYPED_TEST_SUITE(Containers, families, family_names);

TYPED_TEST(Containers, InsertAndEraseReturnEveryBlock) {
  for_each_kind<TypeParam>([](auto& env, auto kind) {
    using s = subject<TypeParam, decltype(kind)>;
    auto c = s::make(env.first(), 0, 40);
    for (int i = 0; i < 40; i += 2) {
      TypeParam::erase(c, i);
    }
    std::vector<int> odd;
    for (int i = 1; i < 40; i += 2) {
      odd.push_back(i);
    }
    EXPECT_EQ(TypeParam::values(c), odd);
    for (int i = 0; i < 40; i += 2) {
      TypeParam::add(c, i);
    }
    EXPECT_EQ(TypeParam::values(c), range(0, 40));
    c.clear();
    EXPECT_TRUE(TypeParam::values(c).empty());
  });
}

TYPED_TEST(Containers, CopyConstructionUsesTheAllocatorTheTraitsSelect) {
  for_each_kind<TypeParam>([](auto& env, auto kind) {
    using s = subject<TypeParam, decltype(kind)>;
    const auto src = s::make(env.first(), 0, 30);
    const typename s::container copy(src);
    EXPECT_EQ(TypeParam::values(copy), range(0, 30));
    EXPECT_TRUE(copy.get_allocator() ==
                s::traits::select_on_container_copy_construction(src.get_allocator()));
    const typename s::container on_second(src, typename s::allocator_type(env.second()));
    EXPECT_EQ(TypeParam::values(on_second), range(0, 30));
    EXPECT_TRUE(on_second.get_allocator() == typename s::allocator_type(env.second()));
  });
}

TYPED_TEST(Containers, CopyAssignmentWithEqualAndUnequalAllocators) {
  for_each_kind<TypeParam>([](auto& env, auto kind) {
    using s = subject<TypeParam, decltype(kind)>;
    constexpr bool propagates = s::traits::propagate_on_container_copy_assignment::value;
    for (const bool unequal : {false, true}) {
      SCOPED_TRACE(unequal ? "unequal allocators" : "equal allocators");
      auto dst = s::make(env.first(), 0, 10);
      const auto src = s::make(unequal ? env.second() : env.first(), 20, 45);
      const auto before = dst.get_allocator();
      dst = src;
      EXPECT_EQ(TypeParam::values(dst), range(20, 45));
      EXPECT_TRUE(dst.get_allocator() == (propagates ? src.get_allocator() : before));
      TypeParam::add(dst, 50);
      EXPECT_EQ(TypeParam::values(src), range(20, 45));
    }
  });
}

TYPED_TEST(Containers, MoveConstructionTakesTheBlocksOrMovesElementwise) {
  for_each_kind<TypeParam>([](auto& env, auto kind) {
    using s = subject<TypeParam, decltype(kind)>;
    auto src = s::make(env.first(), 0, 30);
    typename s::container dst(std::move(src));
    EXPECT_EQ(TypeParam::values(dst), range(0, 30));
    EXPECT_TRUE(dst.get_allocator() == typename s::allocator_type(env.first()));
    src.clear();
    TypeParam::add(src, 7);
    EXPECT_EQ(TypeParam::values(src), std::vector<int>{7});
    // Allocator-extended move onto another resource: the elements move, the blocks stay.
    auto src2 = s::make(env.first(), 0, 20);
    typename s::container on_second(std::move(src2), typename s::allocator_type(env.second()));
    EXPECT_EQ(TypeParam::values(on_second), range(0, 20));
    EXPECT_TRUE(on_second.get_allocator() == typename s::allocator_type(env.second()));
  });
}

TYPED_TEST(Containers, MoveAssignmentWithEqualAndUnequalAllocators) {
  for_each_kind<TypeParam>([](auto& env, auto kind) {
    using s = subject<TypeParam, decltype(kind)>;
    constexpr bool propagates = s::traits::propagate_on_container_move_assignment::value;
    for (const bool unequal : {false, true}) {
      SCOPED_TRACE(unequal ? "unequal allocators" : "equal allocators");
      auto dst = s::make(env.first(), 0, 10);
      auto src = s::make(unequal ? env.second() : env.first(), 20, 45);
      const auto before = dst.get_allocator();
      const auto src_allocator = src.get_allocator();
      dst = std::move(src);
      EXPECT_EQ(TypeParam::values(dst), range(20, 45));
      EXPECT_TRUE(dst.get_allocator() == (propagates ? src_allocator : before));
      TypeParam::add(dst, 50);
      src.clear();
      TypeParam::add(src, 1);
      EXPECT_EQ(TypeParam::values(src), std::vector<int>{1});
    }
  });
}

TYPED_TEST(Containers, SwapWithEqualAndUnequalAllocators) {
  for_each_kind<TypeParam>([](auto& env, auto kind) {
    using s = subject<TypeParam, decltype(kind)>;
    using kind_type = typename decltype(kind)::type;
    constexpr bool propagates = s::traits::propagate_on_container_swap::value;
    for (const bool unequal : {false, true}) {
      SCOPED_TRACE(unequal ? "unequal allocators" : "equal allocators");
      // Swapping containers with unequal, non-propagating allocators is undefined behaviour
      // (std::pmr's choice); memkit::allocator propagates, so it is defined and tested.
      if (unequal && !propagates && kind_type::has_unequal) {
        continue;
      }
      auto x = s::make(env.first(), 0, 10);
      auto y = s::make(unequal ? env.second() : env.first(), 20, 45);
      const auto ax = x.get_allocator();
      const auto ay = y.get_allocator();
      x.swap(y);
      EXPECT_EQ(TypeParam::values(x), range(20, 45));
      EXPECT_EQ(TypeParam::values(y), range(0, 10));
      EXPECT_TRUE(x.get_allocator() == (propagates ? ay : ax));
      TypeParam::add(x, 50);
      TypeParam::erase(y, 3);
    }
  });
}

TYPED_TEST(Containers, AssignReplacesTheContentsInPlace) {
  for_each_kind<TypeParam>([](auto& env, auto kind) {
    using s = subject<TypeParam, decltype(kind)>;
    auto c = s::make(env.first(), 0, 30);
    TypeParam::assign(c, range(30, 50));
    EXPECT_EQ(TypeParam::values(c), range(30, 50));
    TypeParam::assign(c, range(0, 5));
    EXPECT_EQ(TypeParam::values(c), range(0, 5));
    EXPECT_TRUE(c.get_allocator() == typename s::allocator_type(env.first()));
  });
}

// ---- the stateful is_always_equal container bug, and exhaustion ----------------------------

using pool_resource = tracked<memkit::node_pool<spy_ref>>;
using pool_list = std::list<int, memkit::allocator<int, pool_resource>>;

TEST(ContainersIncident, ListMoveAssignedBetweenTwoPoolsThenClearedAndDestroyedIsClean) {
  spy_resource spy_a;
  spy_resource spy_b;
  {
    pool_resource pool_a{spy_ref(spy_a)};
    pool_resource pool_b{spy_ref(spy_b)};
    {
      pool_list a(pool_a);
      pool_list b(pool_b);
      for (int i = 0; i < 1000; ++i) {
        a.push_back(i);
        b.push_back(-i);
      }
      a = std::move(b);
      // a's own nodes went back to pool A at once; a now uses pool B and holds B's nodes.
      EXPECT_EQ(pool_a.live(), 0u);
      EXPECT_EQ(&a.get_allocator().resource(), &pool_b);
      EXPECT_EQ(pool_b.live(), 1000u);
      a.clear();
      EXPECT_EQ(pool_b.live(), 0u);
      a.push_back(1);
      b.push_back(2);
    }
    pool_a.verify();
    pool_b.verify();
  }
  EXPECT_EQ(spy_a.blocks_in_use() + spy_b.blocks_in_use(), 0u);
  EXPECT_TRUE(spy_a.errors().empty() && spy_b.errors().empty());
}

TEST(ContainersExhaustion, ListPushBackOnAnExhaustedPoolLeavesTheListIntact) {
  // The pool halves its first chunk down to what the upstream allows: 8 nodes here.
  spy_resource spy(8 * 24 + 2 * sizeof(void*));
  {
    pool_resource pool{spy_ref(spy)};
    pool_list l(pool);
    int pushed = 0;
    try {
      for (; pushed < 100; ++pushed) {
        l.push_back(pushed);
      }
      FAIL() << "the upstream holds only a handful of nodes";
    } catch (const memkit::out_of_memory& e) {
      EXPECT_STREQ(e.resource(), "memkit::node_pool");
    }
    EXPECT_GT(pushed, 0);
    EXPECT_EQ(l.size(), static_cast<std::size_t>(pushed));
    EXPECT_EQ(l.back(), pushed - 1);
    l.pop_front();
    l.push_back(-1);
    EXPECT_EQ(l.back(), -1);
    l.clear();
    pool.verify();
  }
  EXPECT_EQ(spy.blocks_in_use(), 0u);
}

TEST(ContainersExhaustion, MapCopyThatRunsOutMidwayFreesWhatItBuilt) {
  using pool_map = std::map<int, int, std::less<>, memkit::allocator<kv, pool_resource>>;
  spy_resource roomy;
  spy_resource tight(1024);
  {
    pool_resource pool_a{spy_ref(roomy)};
    pool_resource pool_b{spy_ref(tight)};
    pool_map src(pool_a);
    for (int i = 0; i < 500; ++i) {
      src.emplace(i, i);
    }
    EXPECT_THROW(pool_map copy(src, pool_b), memkit::out_of_memory);
    EXPECT_EQ(pool_b.live(), 0u);
    EXPECT_EQ(src.size(), 500u);
    pool_map small(pool_b);
    small.emplace(1, 1);
    EXPECT_EQ(small.at(1), 1);
    src.clear();
    small.clear();
    pool_a.verify();
    pool_b.verify();
  }
  EXPECT_EQ(roomy.blocks_in_use() + tight.blocks_in_use(), 0u);
}

TEST(ContainersExhaustion, VectorGrowthThatFailsKeepsTheOldElements) {
  spy_resource spy(1000);
  {
    pool_resource pool{spy_ref(spy)};
    std::vector<int, memkit::allocator<int, pool_resource>> v(pool);
    std::size_t size_before_failure = 0;
    try {
      for (int i = 0; i < 1000; ++i) {
        size_before_failure = v.size();
        v.push_back(i);
      }
      FAIL() << "1000 bytes cannot hold 1000 ints";
    } catch (const memkit::out_of_memory&) {
    }
    EXPECT_EQ(v.size(), size_before_failure);
    for (std::size_t i = 0; i < v.size(); ++i) {
      ASSERT_EQ(v[i], static_cast<int>(i));
    }
    v.clear();
    v.shrink_to_fit();
    pool.verify();
  }
  EXPECT_EQ(spy.blocks_in_use(), 0u);
}

TEST(ContainersExhaustion, UnorderedMapThatCannotRehashStaysUsable) {
  using pool_umap = std::unordered_map<int, int, std::hash<int>, std::equal_to<>,
                                       memkit::allocator<kv, pool_resource>>;
  spy_resource spy(4096);
  {
    pool_resource pool{spy_ref(spy)};
    {
      pool_umap m(pool);
      int inserted = 0;
      try {
        for (; inserted < 10000; ++inserted) {
          m.emplace(inserted, inserted);
        }
        FAIL() << "4 KiB cannot hold 10000 entries";
      } catch (const memkit::out_of_memory&) {
      }
      EXPECT_EQ(m.size(), static_cast<std::size_t>(inserted));
      for (int i = 0; i < inserted; ++i) {
        ASSERT_EQ(m.at(i), i);
      }
      m.erase(0);
      m.emplace(0, 0);
    }
    pool.verify();
  }
  EXPECT_EQ(spy.blocks_in_use(), 0u);
}

} // namespace
