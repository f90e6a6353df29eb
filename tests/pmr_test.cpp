// SPDX-License-Identifier: BSL-1.0
#include "memkit/pmr.hpp"

#include <array>
#include <cstddef>
#include <gtest/gtest.h>
#include <list>
#include <map>
#include <memory_resource>
#include <string>
#include <utility>
#include <vector>

#include "memkit/allocator.hpp"
#include "memkit/audit.hpp"
#include "memkit/node_pool.hpp"
#include "memkit/upstream.hpp"
#include "support/spy_resource.hpp"

namespace {

using memkit::test::misuse_recorder;
using memkit::test::spy_resource;
using spy_ref = memkit::resource_ref<spy_resource>;

static_assert(std::is_final_v<memkit::pmr::resource_adapter<memkit::malloc_resource>>);
static_assert(std::is_base_of_v<std::pmr::memory_resource,
                                memkit::pmr::resource_adapter<memkit::node_pool<>>>);

/// Makes every fallback to the default resource throw, so a test proves that nothing silently
/// reached for the heap.
class no_default_resource {
public:
  no_default_resource() noexcept
      : previous_(std::pmr::set_default_resource(std::pmr::null_memory_resource())) {}
  ~no_default_resource() { std::pmr::set_default_resource(previous_); }
  no_default_resource(const no_default_resource&) = delete;
  no_default_resource& operator=(const no_default_resource&) = delete;

private:
  std::pmr::memory_resource* previous_;
};

TEST(PmrResourceAdapter, ServesPmrContainersFromAMemkitStrategy) {
  spy_resource spy;
  {
    const no_default_resource guard;
    memkit::pmr::resource_adapter<memkit::node_pool<spy_ref>> mr{spy_ref(spy)};
    std::pmr::vector<int> v(&mr);
    std::pmr::string s("a string long enough to leave the small-string buffer", &mr);
    std::pmr::map<int, std::pmr::string> m(&mr);
    for (int i = 0; i < 100; ++i) {
      v.push_back(i);
      m.emplace(i, s);
    }
    EXPECT_EQ(m.at(42).get_allocator().resource(), &mr);
    EXPECT_EQ(v[99], 99);
    EXPECT_GT(spy.blocks_in_use(), 0u);
  }
  EXPECT_EQ(spy.blocks_in_use(), 0u);
  EXPECT_TRUE(spy.errors().empty()) << spy.errors().front();
}

TEST(PmrResourceAdapter, HonoursEveryPowerOfTwoAlignment) {
  memkit::pmr::resource_adapter<memkit::malloc_resource> mr;
  std::pmr::memory_resource& base = mr;
  for (std::size_t a = 1; a <= 4096; a *= 2) {
    void* p = base.allocate(24, a);
    EXPECT_TRUE(memkit::detail::is_aligned(p, a)) << a;
    base.deallocate(p, 24, a);
  }
}

TEST(PmrResourceAdapter, IsEqualOnlyToAdaptersThatCanFreeItsMemory) {
  memkit::node_pool<> p1;
  memkit::node_pool<> p2;
  auto a1 = memkit::pmr::adapt(p1);
  auto a1_again = memkit::pmr::adapt(p1);
  auto a2 = memkit::pmr::adapt(p2);
  EXPECT_TRUE(a1.is_equal(a1));
  EXPECT_TRUE(a1.is_equal(a1_again));
  EXPECT_FALSE(a1.is_equal(a2));
  EXPECT_FALSE(a1.is_equal(*std::pmr::new_delete_resource()));
  memkit::pmr::resource_adapter<memkit::node_pool<>> owning1;
  memkit::pmr::resource_adapter<memkit::node_pool<>> owning2;
  EXPECT_FALSE(owning1.is_equal(owning2));
  EXPECT_TRUE(owning1.is_equal(owning1));
  EXPECT_EQ(&a1.resource().get(), &p1);
}

TEST(PmrResourceAdapter, ThrowsTheResourcesExceptionsAsBadAlloc) {
  alignas(16) std::array<unsigned char, 256> buffer{};
  memkit::pmr::resource_adapter<memkit::buffer_resource> mr(buffer.data(), buffer.size());
  std::pmr::vector<int> v(&mr);
  try {
    for (int i = 0; i < 1000; ++i) {
      v.push_back(i);
    }
    FAIL() << "256 bytes cannot hold 1000 ints";
  } catch (const std::bad_alloc& e) {
    EXPECT_NE(std::string(e.what()).find("memkit::buffer_resource: out of memory"),
              std::string::npos);
  }
  EXPECT_FALSE(v.empty());
  EXPECT_EQ(v.back(), static_cast<int>(v.size()) - 1);
}

TEST(PmrResourceAdapter, ReportsDeallocationMisuseThroughTheResource) {
  misuse_recorder recorder;
  memkit::pmr::resource_adapter<memkit::node_pool<>> mr;
  void* a = mr.allocate(32, 8);
  void* b = mr.allocate(32, 8);
  mr.deallocate(a, 32, 8);
  mr.deallocate(a, 32, 8);
  EXPECT_EQ(recorder.count(memkit::misuse::double_free), 1u);
  mr.deallocate(b, 32, 8);
}

TEST(PmrUpstream, LetsMemkitStrategiesDrawFromAPmrResource) {
  alignas(std::max_align_t) std::array<std::byte, 4096> buffer{};
  std::pmr::monotonic_buffer_resource mono(buffer.data(), buffer.size(),
                                           std::pmr::null_memory_resource());
  memkit::node_pool<memkit::pmr_upstream> np{memkit::pmr_upstream(&mono)};
  std::list<int, memkit::allocator<int, memkit::node_pool<memkit::pmr_upstream>>> l(np);
  for (int i = 0; i < 20; ++i) {
    l.push_back(i);
  }
  for (const int& x : l) {
    EXPECT_TRUE(memkit::detail::in_range(&x, buffer.data(), buffer.size()));
  }
}

TEST(PmrBridge, RoundTripsAMemkitStrategyThroughStdPmrAndBack) {
  spy_resource spy;
  {
    memkit::pmr::resource_adapter<memkit::node_pool<spy_ref>> outer{spy_ref(spy)};
    memkit::node_pool<memkit::pmr_upstream> inner{memkit::pmr_upstream(&outer)};
    void* p = inner.allocate(48, 16);
    EXPECT_GT(spy.blocks_in_use(), 0u);
    inner.deallocate(p, 48, 16);
    inner.release();
  }
  EXPECT_EQ(spy.blocks_in_use(), 0u);
  EXPECT_TRUE(spy.errors().empty());
}

/// An allocator-aware node done right (docs/background.md#pmr-uses-allocator): allocator-extended
/// default, copy and move constructors (the move one noexcept), so a std::pmr::vector of it can
/// grow.
struct record {
  using allocator_type = std::pmr::polymorphic_allocator<std::byte>;

  explicit record(const allocator_type& a = {}) : label(a), values(a) {}
  record(const record& other, const allocator_type& a)
      : label(other.label, a), values(other.values, a) {}
  record(record&& other, const allocator_type& a) noexcept
      : label(std::move(other.label), a), values(std::move(other.values), a) {}
  record(const record&) = default;
  record(record&&) noexcept = default;
  record& operator=(const record&) = default;
  record& operator=(record&&) noexcept = default;
  ~record() = default;

  allocator_type get_allocator() const noexcept { return label.get_allocator(); }

  std::pmr::string label;
  std::pmr::vector<int> values;
};

static_assert(memkit::audit_allocator_aware<record>());

/// The second uses-allocator pitfall (docs/background.md#pmr-extended-constructors): only the
/// allocator-extended default constructor.
struct half_aware {
  using allocator_type = std::pmr::polymorphic_allocator<std::byte>;
  explicit half_aware(const allocator_type& a) : label(a) {}
  std::pmr::string label;
};

TEST(PmrUsesAllocator, AnAllocatorAwareNodeKeepsItsResourceWhileAPmrVectorGrows) {
  spy_resource spy;
  {
    const no_default_resource guard;
    memkit::pmr::resource_adapter<memkit::node_pool<spy_ref>> mr{spy_ref(spy)};
    std::pmr::vector<record> v(&mr);
    for (int i = 0; i < 50; ++i) {
      // The emplace_back pitfall avoided: no resource argument; the vector passes its own.
      record& r = v.emplace_back();
      r.label.assign(40, static_cast<char>('a' + i % 26));
      r.values.assign(static_cast<std::size_t>(i), i);
    }
    EXPECT_GE(v.capacity(), 50u);
    for (const record& r : v) {
      EXPECT_EQ(r.get_allocator().resource(), &mr);
      EXPECT_EQ(r.values.get_allocator().resource(), &mr);
    }
    memkit::pmr::resource_adapter<memkit::node_pool<spy_ref>> other{spy_ref(spy)};
    const std::pmr::vector<record> copy(v, &other);
    EXPECT_EQ(copy[49].label, v[49].label);
    EXPECT_EQ(copy[49].values.get_allocator().resource(), &other);
  }
  EXPECT_EQ(spy.blocks_in_use(), 0u);
  EXPECT_TRUE(spy.errors().empty());
}

TEST(PmrUsesAllocator, TheAuditNamesWhatAHalfAwareNodeLacks) {
  using audit = memkit::allocator_aware_audit<half_aware, half_aware::allocator_type>;
  EXPECT_TRUE(audit::uses_allocator);
  EXPECT_TRUE(audit::default_extended);
  EXPECT_FALSE(audit::copy_extended);
  EXPECT_FALSE(audit::move_extended);
  EXPECT_FALSE(audit::ok);
  // The emplace_back pitfall: emplace_back(&mr) needs record(memory_resource*, allocator_type).
  EXPECT_FALSE(
      (std::is_constructible_v<record, std::pmr::memory_resource*, const record::allocator_type&>));
}

} // namespace
