#include "memkit/debug_resource.hpp"

#include <cstdint>
#include <cstring>
#include <gtest/gtest.h>
#include <memory>
#include <string>
#include <vector>

#include "memkit/arena.hpp"
#include "memkit/multipool.hpp"
#include "memkit/pool.hpp"
#include "memkit/stack.hpp"
#include "support/spy_resource.hpp"

namespace {

using memkit::debug_mistake;
using memkit::debug_options;
using memkit::debug_reaction;
using memkit::debug_report;
using memkit::debug_resource;
using spy_ref = memkit::resource_ref<memkit::test::spy_resource>;

static_assert(memkit::is_resource_v<debug_resource<memkit::pool<>>>);
static_assert(memkit::is_resource_v<debug_resource<memkit::resource_ref<memkit::arena<>>>>);
static_assert(memkit::has_owns_v<debug_resource<memkit::stack<>>>);
static_assert(!memkit::has_owns_v<debug_resource<memkit::malloc_resource>>);

/// The block every typed test allocates: a pool's block size is chosen to hold it with the debug
/// overhead, which is what a user of debug_resource<pool> does too.
constexpr std::size_t block = 32;
constexpr std::size_t align = memkit::default_alignment;

// One case per wrapped strategy: its name and how to build it over a given upstream.
struct pool_case {
  static constexpr const char* name = "memkit::debug_resource<memkit::pool>";
  template <class U>
  static auto make(debug_options o, U up) {
    return std::make_unique<debug_resource<memkit::pool<U>>>(
        std::move(o), memkit::debug_block_size(block, align), align, up);
  }
};
struct arena_case {
  static constexpr const char* name = "memkit::debug_resource<memkit::arena>";
  template <class U>
  static auto make(debug_options o, U up) {
    return std::make_unique<debug_resource<memkit::arena<U>>>(std::move(o), up);
  }
};
struct stack_case {
  static constexpr const char* name = "memkit::debug_resource<memkit::stack>";
  template <class U>
  static auto make(debug_options o, U up) {
    return std::make_unique<debug_resource<memkit::stack<U>>>(std::move(o), std::size_t{4096}, up);
  }
};
struct multipool_case {
  static constexpr const char* name = "memkit::debug_resource<memkit::multipool>";
  template <class U>
  static auto make(debug_options o, U up) {
    return std::make_unique<debug_resource<memkit::multipool<U>>>(std::move(o), up);
  }
};

struct case_names {
  template <class T>
  static std::string GetName(int) {
    if (std::is_same_v<T, pool_case>) {
      return "Pool";
    }
    if (std::is_same_v<T, arena_case>) {
      return "Arena";
    }
    if (std::is_same_v<T, stack_case>) {
      return "Stack";
    }
    return "Multipool";
  }
};

/// A debug resource over the case's strategy over a spy, in `handler` mode recording every report.
/// On tear-down the spy must have got every chunk back, as handed out.
template <class Case>
class DebugResource : public ::testing::Test {
protected:
  auto make(bool lifo = false) {
    debug_options o;
    o.reaction = debug_reaction::handler;
    o.handler = [this](const debug_report& r) {
      reports_.push_back(r);
      names_.emplace_back(r.resource);
    };
    o.lifo = lifo;
    return Case::make(std::move(o), spy_ref(spy_));
  }

  void TearDown() override {
    EXPECT_EQ(spy_.blocks_in_use(), 0u);
    EXPECT_TRUE(spy_.errors().empty());
  }

  /// Expects exactly one report, of `m` about `p`, naming the resource.
  void expect_one(debug_mistake m, const void* p) {
    ASSERT_EQ(reports_.size(), 1u);
    EXPECT_EQ(reports_[0].mistake, m) << memkit::to_string(reports_[0].mistake);
    EXPECT_STREQ(reports_[0].resource, Case::name);
    EXPECT_EQ(reports_[0].pointer, p);
    reports_.clear();
  }

  memkit::test::spy_resource spy_;
  std::vector<debug_report> reports_;
  std::vector<std::string> names_; ///< copies: a report's name lives as long as its resource
};

using cases = ::testing::Types<pool_case, arena_case, stack_case, multipool_case>;
TYPED_TEST_SUITE(DebugResource, cases, case_names);

TYPED_TEST(DebugResource, ServesCheckedBlocksAndNamesItselfAfterTheWrappedResource) {
  auto r = this->make();
  EXPECT_STREQ(r->name(), TypeParam::name);
  void* p = r->allocate(block, align);
  EXPECT_TRUE(memkit::detail::is_aligned(p, align));
  EXPECT_TRUE(r->is_live(p));
  EXPECT_TRUE(r->owns(p));
  std::memset(p, 0x5A, block);
  r->deallocate(p, block, align);
  EXPECT_FALSE(r->is_live(p));
  EXPECT_TRUE(this->reports_.empty());
  EXPECT_EQ(r->allocations(), 1u);
}

TYPED_TEST(DebugResource, ReportsADoubleFreeAndIgnoresIt) {
  auto r = this->make();
  void* p = r->allocate(block, align);
  r->deallocate(p, block, align);
  r->deallocate(p, block, align);
  this->expect_one(debug_mistake::double_free, p);
  EXPECT_EQ(r->mistakes(), 1u);
}

TYPED_TEST(DebugResource, ReportsAForeignPointerAndIgnoresIt) {
  auto r = this->make();
  alignas(16) unsigned char outside[block];
  void* p = r->allocate(block, align);
  r->deallocate(outside, block, align);
  this->expect_one(debug_mistake::foreign_pointer, outside);
  EXPECT_TRUE(r->is_live(p));
  r->deallocate(p, block, align);
  EXPECT_TRUE(this->reports_.empty());
}

TYPED_TEST(DebugResource, ReportsAWrongSizeOnDeallocateAndKeepsTheBlock) {
  auto r = this->make();
  void* p = r->allocate(block, align);
  r->deallocate(p, block - 8, align);
  ASSERT_EQ(this->reports_.size(), 1u);
  EXPECT_EQ(this->reports_[0].size, block - 8);
  EXPECT_EQ(this->reports_[0].block_size, block);
  EXPECT_EQ(this->reports_[0].allocation, 1u);
  this->expect_one(debug_mistake::size_mismatch, p);
  EXPECT_TRUE(r->is_live(p));
  r->deallocate(p, block, align);
  EXPECT_TRUE(this->reports_.empty());
}

TYPED_TEST(DebugResource, ReportsAWrongAlignmentOnDeallocateAndKeepsTheBlock) {
  auto r = this->make();
  void* p = r->allocate(block, align);
  r->deallocate(p, block, align / 2);
  ASSERT_EQ(this->reports_.size(), 1u);
  EXPECT_EQ(this->reports_[0].block_alignment, align);
  this->expect_one(debug_mistake::alignment_mismatch, p);
  EXPECT_TRUE(r->is_live(p));
  r->deallocate(p, block, align);
}

// Under AddressSanitizer this stays valid: the guard bytes belong to the block the debug resource
// got from the strategy.
TYPED_TEST(DebugResource, ReportsAnOverrunByOneByteAndStillFreesTheBlock) {
  auto r = this->make();
  auto* p = static_cast<unsigned char*>(r->allocate(block, align));
  p[block] = 0;
  r->deallocate(p, block, align);
  this->expect_one(debug_mistake::overrun, p);
  EXPECT_FALSE(r->is_live(p));
}

TYPED_TEST(DebugResource, ReportsAnUnderrunByOneByteAndStillFreesTheBlock) {
  auto r = this->make();
  auto* p = static_cast<unsigned char*>(r->allocate(block, align));
  p[-1] = 0;
  r->deallocate(p, block, align);
  this->expect_one(debug_mistake::underrun, p);
  EXPECT_FALSE(r->is_live(p));
}

TYPED_TEST(DebugResource, ReportsALifoViolationWhenAskedAndKeepsBothBlocks) {
  auto r = this->make(true);
  void* a = r->allocate(block, align);
  void* b = r->allocate(block, align);
  r->deallocate(a, block, align);
  this->expect_one(debug_mistake::lifo_violation, a);
  EXPECT_TRUE(r->is_live(a));
  r->deallocate(b, block, align);
  r->deallocate(a, block, align);
  EXPECT_TRUE(this->reports_.empty());
}

TYPED_TEST(DebugResource, ReportsAFreeOfABlockThatDiedInResetAsUseAfterReset) {
  auto r = this->make();
  void* p = r->allocate(block, align);
  r->reset();
  EXPECT_FALSE(r->is_live(p));
  r->deallocate(p, block, align);
  this->expect_one(debug_mistake::use_after_reset, p);
  void* q = r->allocate(block, align);
  r->deallocate(q, block, align);
  EXPECT_TRUE(this->reports_.empty());
}

TYPED_TEST(DebugResource, ReportsEveryLeakAtDestructionOldestFirstAndReturnsTheBlocks) {
  auto r = this->make();
  void* a = r->allocate(block, align);
  void* b = r->allocate(8, 8);
  void* c = r->allocate(block, align);
  r->deallocate(c, block, align);
  r.reset();
  ASSERT_EQ(this->reports_.size(), 2u);
  EXPECT_EQ(this->reports_[0].mistake, debug_mistake::leak);
  EXPECT_EQ(this->reports_[0].pointer, a);
  EXPECT_EQ(this->reports_[0].allocation, 1u);
  EXPECT_EQ(this->reports_[0].block_size, block);
  EXPECT_EQ(this->reports_[1].pointer, b);
  EXPECT_EQ(this->reports_[1].allocation, 2u);
  EXPECT_EQ(this->reports_[1].block_size, 8u);
  EXPECT_EQ(this->reports_[1].block_alignment, 8u);
  EXPECT_EQ(this->names_[1], TypeParam::name);
}

TYPED_TEST(DebugResource, ExhaustionWithANullUpstreamThrowsOutOfMemoryNamingTheDebugResource) {
  auto r = TypeParam::make(debug_options{}, memkit::null_resource{});
  EXPECT_EQ(r->try_allocate(block, align), nullptr);
  try {
    (void)r->allocate(block, align);
    ADD_FAILURE() << "allocate did not throw";
  } catch (const memkit::out_of_memory& e) {
    EXPECT_STREQ(e.resource(), TypeParam::name);
    EXPECT_EQ(e.size(), block);
  }
  EXPECT_EQ(r->live_blocks(), 0u);
}

TYPED_TEST(DebugResource, KeepsTheContentsOfNonOverlappingBlocks) {
  auto r = this->make(true);
  std::vector<unsigned char*> blocks;
  for (int i = 0; i < 20; ++i) {
    blocks.push_back(static_cast<unsigned char*>(r->allocate(block, align)));
    std::memset(blocks.back(), i, block);
  }
  for (int i = 19; i >= 0; --i) {
    for (std::size_t k = 0; k < block; ++k) {
      ASSERT_EQ(blocks[i][k], i);
    }
    r->deallocate(blocks[i], block, align);
  }
  EXPECT_TRUE(this->reports_.empty());
}

std::vector<debug_report>& recorded() {
  static std::vector<debug_report> r;
  return r;
}

debug_options recording() {
  recorded().clear();
  debug_options o;
  o.reaction = debug_reaction::handler;
  o.handler = [](const debug_report& r) { recorded().push_back(r); };
  return o;
}

TEST(DebugResource, HonoursEveryPowerOfTwoAlignmentAndRejectsBadRequests) {
  debug_resource<memkit::malloc_resource> r(recording());
  for (std::size_t a = 1; a <= memkit::page_size; a *= 2) {
    void* p = r.allocate(24, a);
    EXPECT_TRUE(memkit::detail::is_aligned(p, a)) << "alignment " << a;
    r.deallocate(p, 24, a);
  }
  void* z = r.allocate(0, 8);
  void* z2 = r.allocate(0, 8);
  EXPECT_NE(z, z2);
  r.deallocate(z2, 0, 8);
  r.deallocate(z, 0, 8);
  EXPECT_THROW((void)r.allocate(16, 3), memkit::bad_alignment);
  EXPECT_THROW((void)r.allocate(SIZE_MAX, 8), memkit::bad_size);
  EXPECT_EQ(r.try_allocate(SIZE_MAX - 8, 8), nullptr);
  EXPECT_EQ(r.try_allocate(16, 0), nullptr);
  r.deallocate(nullptr, 16, 8);
  EXPECT_TRUE(recorded().empty());
  EXPECT_EQ(r.live_blocks(), 0u);
}

TEST(DebugResource, FillsFreshBlocksWithThePatternAndLeavesGuardsAround) {
  debug_resource<memkit::malloc_resource> r(recording());
  auto* p = static_cast<unsigned char*>(r.allocate(40, 8));
  for (std::size_t k = 0; k < 40; ++k) {
    ASSERT_EQ(p[k], memkit::debug_fresh_byte);
  }
  EXPECT_EQ(p[40], memkit::debug_guard_byte);
  EXPECT_EQ(p[-1], memkit::debug_guard_byte);
  r.deallocate(p, 40, 8);
}

TEST(DebugResource, FillsFreedAndResetBlocksSoALaterReadShowsThePattern) {
#if defined(MEMKIT_ASAN)
  GTEST_SKIP()
      << "AddressSanitizer builds poison memory a strategy holds free: the read is an error";
#else
  debug_resource<memkit::arena<>> r(recording());
  auto* p = static_cast<unsigned char*>(r.allocate(64, 8));
  std::memset(p, 0x11, 64);
  r.reset();
  for (std::size_t k = 0; k < 64; ++k) {
    ASSERT_EQ(p[k], memkit::debug_freed_byte);
  }
#endif
}

TEST(DebugResource, CheckReportsDamagedGuardsOfLiveBlocksOnce) {
  debug_resource<memkit::malloc_resource> r(recording());
  auto* p = static_cast<unsigned char*>(r.allocate(16, 8));
  void* q = r.allocate(16, 8);
  p[16] = 0;
  r.check();
  ASSERT_EQ(recorded().size(), 1u);
  EXPECT_EQ(recorded()[0].mistake, debug_mistake::overrun);
  EXPECT_EQ(recorded()[0].pointer, p);
  r.check();
  r.deallocate(p, 16, 8);
  r.deallocate(q, 16, 8);
  EXPECT_EQ(recorded().size(), 1u);
}

TEST(DebugResource, DamagedHeaderIsReportedAsAnUnderrun) {
  debug_resource<memkit::malloc_resource> r(recording());
  auto* p = static_cast<unsigned char*>(r.allocate(16, 8));
  // Past the 16 guard bytes, into the header recording size, alignment and number.
  p[-20] ^= 0xFF;
  r.deallocate(p, 16, 8);
  ASSERT_EQ(recorded().size(), 1u);
  EXPECT_EQ(recorded()[0].mistake, debug_mistake::underrun);
}

TEST(DebugResource, DeferredThrowThrowsTheFirstMistakeFromTheNextAllocateOrCheck) {
  debug_options o;
  o.reaction = debug_reaction::deferred_throw;
  debug_resource<memkit::malloc_resource> r(o);
  void* p = r.allocate(16, 8);
  r.deallocate(p, 16, 8);
  r.deallocate(p, 16, 8);
  r.deallocate(p, 8, 8);
  try {
    (void)r.allocate(16, 8);
    ADD_FAILURE() << "allocate did not throw";
  } catch (const memkit::misuse_error& e) {
    EXPECT_EQ(e.report().mistake, debug_mistake::double_free);
    EXPECT_NE(std::string(e.what()).find(
                  "memkit::debug_resource<memkit::malloc_resource>: double free at"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(r.mistakes(), 2u);
  EXPECT_NO_THROW(r.check());
  void* q = r.allocate(16, 8);
  static_cast<unsigned char*>(q)[16] = 1;
  EXPECT_THROW(r.check(), memkit::misuse_error);
  r.deallocate(q, 16, 8);
  const std::logic_error& base = memkit::misuse_error(debug_report{});
  EXPECT_NE(base.what(), nullptr);
}

TEST(DebugResource, WrapsAnExistingResourceThroughResourceRef) {
  memkit::arena<> arena;
  {
    debug_resource<memkit::resource_ref<memkit::arena<>>> r(recording(),
                                                            memkit::resource_ref(arena));
    void* p = r.allocate(24, 8);
    EXPECT_TRUE(arena.owns(p));
    EXPECT_STREQ(r.name(), "memkit::debug_resource<memkit::arena>");
    r.deallocate(p, 24, 8);
    r.deallocate(p, 24, 8);
  }
  ASSERT_EQ(recorded().size(), 1u);
  EXPECT_EQ(recorded()[0].mistake, debug_mistake::double_free);
}

TEST(DebugResource, ReportsTheMisuseKindsAsMisuseReports) {
  debug_report r{debug_mistake::lifo_violation, "x", nullptr, 1, 2, 0, 0, 0};
  memkit::misuse_report m = r.to_misuse_report();
  EXPECT_EQ(m.kind, memkit::misuse::lifo_violation);
  EXPECT_EQ(m.alignment, 2u);
  r.mistake = debug_mistake::overrun;
  EXPECT_EQ(r.to_misuse_report().kind, memkit::misuse::overrun);
  EXPECT_STREQ(memkit::to_string(debug_mistake::leak), "leak");
}

TEST(DebugResource, BlockSizeCoversHeaderGuardsAndAlignment) {
  EXPECT_EQ(memkit::debug_block_size(32, 16), 32u + 48u + 16u);
  EXPECT_EQ(memkit::debug_block_size(0, 8), 1u + 48u + 16u);
  EXPECT_EQ(memkit::debug_block_size(32, 64), 64u + 32u + 16u);
  EXPECT_EQ(memkit::debug_block_size(SIZE_MAX, 8), 0u);
  EXPECT_EQ(memkit::debug_block_size(8, std::size_t{1} << 63), 0u);
}

TEST(DebugResource, DefaultReactionAbortsWithAReportNamingTheResourceAddressAndMistake) {
  EXPECT_DEATH(
      {
        debug_resource<memkit::pool<>> r(debug_options{}, memkit::debug_block_size(32));
        void* p = r.allocate(32);
        r.deallocate(p, 32);
        r.deallocate(p, 32);
      },
      "memkit::debug_resource<memkit::pool>: double free at 0x[0-9a-f]+ .*block #1");
}

TEST(DebugResource, DefaultReactionAbortsAtDestructionListingEveryLeak) {
  EXPECT_DEATH(
      {
        debug_resource<memkit::arena<>> r;
        (void)r.allocate(24, 8);
        (void)r.allocate(40, 8);
      },
      "memkit::debug_resource<memkit::arena>: leak at .*block #1 of size 24.*\n.*block #2 of size "
      "40.*\n.*2 block\\(s\\) leaked");
}

} // namespace
