// SPDX-License-Identifier: BSL-1.0
#include "memkit/unique.hpp"

#include <gtest/gtest.h>
#include <memory>
#include <memory_resource>
#include <stdexcept>
#include <string>

#include "memkit/allocator.hpp"
#include "memkit/node_pool.hpp"
#include "memkit/pmr.hpp"
#include "support/spy_resource.hpp"

namespace {

using memkit::test::spy_resource;
using spy_alloc = memkit::allocator<int, spy_resource>;

/// Records, from its destructor, whether its memory was still allocated at that moment.
struct witness {
  witness(spy_resource& spy, bool& destroyed_while_live) noexcept
      : spy_(spy), destroyed_while_live_(destroyed_while_live) {}
  witness(const witness&) = delete;
  witness& operator=(const witness&) = delete;
  ~witness() { destroyed_while_live_ = spy_.blocks_in_use() == 1; }

  spy_resource& spy_;
  bool& destroyed_while_live_;
};

struct throws_on_construction {
  explicit throws_on_construction(int) { throw std::runtime_error("constructor failed"); }
};

struct base {
  virtual ~base() = default;
};
struct derived : base {
  char payload[64] = {};
};

template <class T>
using unique_for = memkit::unique_ptr_for<T, memkit::allocator<T, spy_resource>>;

// Converting to a base deleter would free a derived object with the base's size.
static_assert(!std::is_convertible_v<unique_for<derived>, unique_for<base>>);

TEST(AllocateUnique, DestroysThenDeallocatesWithTheSameSizeAndAlignment) {
  spy_resource spy;
  bool destroyed_while_live = false;
  {
    auto p = memkit::allocate_unique<witness>(spy, spy, destroyed_while_live);
    EXPECT_EQ(spy.blocks_in_use(), 1u);
    EXPECT_EQ(spy.bytes_in_use(), sizeof(witness));
  }
  EXPECT_TRUE(destroyed_while_live);
  EXPECT_EQ(spy.blocks_in_use(), 0u);
  EXPECT_TRUE(spy.errors().empty()) << spy.errors().front();
}

TEST(AllocateUnique, TakesAnAllocatorOfAnyValueTypeAndRebindsIt) {
  spy_resource spy;
  {
    auto s = memkit::allocate_unique<std::string>(spy_alloc(spy), 100, 'x');
    EXPECT_EQ(s->size(), 100u);
    EXPECT_EQ(&s.get_deleter().get_allocator().resource(), &spy);
    auto moved = std::move(s);
    EXPECT_EQ(s, nullptr);
    EXPECT_EQ(spy.blocks_in_use(), 1u);
  }
  EXPECT_EQ(spy.blocks_in_use(), 0u);
  EXPECT_TRUE(spy.errors().empty());
}

TEST(AllocateUnique, ReturnsTheMemoryWhenTheConstructorThrows) {
  spy_resource spy;
  EXPECT_THROW((void)memkit::allocate_unique<throws_on_construction>(spy, 1), std::runtime_error);
  EXPECT_EQ(spy.allocations(), 1u);
  EXPECT_EQ(spy.blocks_in_use(), 0u);
  EXPECT_TRUE(spy.errors().empty());
}

TEST(AllocateUnique, PassesTheExceptionOfAnExhaustedResourceAndAllocatesNothing) {
  spy_resource spy(0);
  EXPECT_THROW((void)memkit::allocate_unique<int>(spy, 1), memkit::out_of_memory);
  EXPECT_EQ(spy.blocks_in_use(), 0u);
}

TEST(AllocateUnique, LetsAPolymorphicAllocatorPassItselfToAnAllocatorAwareObject) {
  spy_resource spy;
  {
    memkit::pmr::resource_adapter<memkit::resource_ref<spy_resource>> mr{
        memkit::resource_ref<spy_resource>(spy)};
    const std::pmr::polymorphic_allocator<std::byte> a(&mr);
    auto s = memkit::allocate_unique<std::pmr::string>(a, "long enough to need its own buffer..");
    EXPECT_EQ(s->get_allocator().resource(), &mr);
    EXPECT_EQ(spy.blocks_in_use(), 2u);
  }
  EXPECT_EQ(spy.blocks_in_use(), 0u);
}

TEST(AllocateUnique, CostsOnePointerWithAStatelessAllocator) {
  auto p = memkit::allocate_unique<int>(std::allocator<char>(), 7);
  EXPECT_EQ(*p, 7);
  EXPECT_EQ(sizeof(p), sizeof(int*));
  EXPECT_EQ(sizeof(unique_for<int>), 2 * sizeof(void*));
}

TEST(AllocateUnique, ServesObjectsFromANodePool) {
  memkit::node_pool<> np;
  auto a = memkit::allocate_unique<derived>(np);
  auto b = memkit::allocate_unique<derived>(np);
  EXPECT_EQ(np.node_size(), sizeof(derived));
  EXPECT_EQ(np.nodes_in_use(), 2u);
  a.reset();
  EXPECT_EQ(np.nodes_in_use(), 1u);
}

} // namespace
