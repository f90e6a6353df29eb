// SPDX-License-Identifier: BSL-1.0
#include "memkit/debug_resource.hpp"

#include <cstdint>
#include <cstring>
#include <gtest/gtest.h>
#include <memory>
#include <string>
#include <vector>

#include "memkit/arena.hpp"
#include "memkit/detail/base/poison.hpp"
#include "memkit/multipool.hpp"
#include "memkit/pool.hpp"
#include "memkit/stack.hpp"
#include "support/spy_resource.hpp"

namespace {

using memkit::debug_options;
using memkit::debug_reaction;
using memkit::debug_resource;
using memkit::misuse;
using memkit::misuse_report;
using spy_ref = memkit::resource_ref<memkit::test::spy_resource>;

static_assert(memkit::is_resource_v<debug_resource<memkit::pool<>>>);
static_assert(memkit::is_resource_v<debug_resource<memkit::resource_ref<memkit::arena<>>>>);
static_assert(memkit::has_owns_v<debug_resource<memkit::stack<>>>);
static_assert(!memkit::has_owns_v<debug_resource<memkit::malloc_resource>>);

/// Damages a byte as a stray write from code AddressSanitizer does not see would (a library built
/// without it, a device): AddressSanitizer builds poison the guards and the header, so an
/// instrumented write into them is reported as it happens
/// (`DebugResource.PoisonsGuardsSoAnOverrunIsReportedAsItHappens`) and the guard checks are
/// exercised this way.
void scribble(unsigned char* at) {
  memkit::detail::unpoison_kept(at, 1);
  *at ^= 0xFF;
}

/// Reads a byte the debug resource or its strategy may have poisoned, leaving it poisoned.
unsigned char peek(const unsigned char* at) {
  return memkit::detail::load_hidden<unsigned char>(at);
}

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
    o.handler = [this](const misuse_report& r) {
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
  void expect_one(misuse m, const void* p) {
    ASSERT_EQ(reports_.size(), 1u);
    EXPECT_EQ(reports_[0].kind, m) << memkit::to_string(reports_[0].kind);
    EXPECT_STREQ(reports_[0].resource, Case::name);
    EXPECT_EQ(reports_[0].pointer, p);
    reports_.clear();
  }

  memkit::test::spy_resource spy_;
  std::vector<misuse_report> reports_;
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
  this->expect_one(misuse::double_free, p);
  EXPECT_EQ(r->misuses(), 1u);
}

TYPED_TEST(DebugResource, ReportsAForeignPointerAndIgnoresIt) {
  auto r = this->make();
  alignas(16) unsigned char outside[block];
  void* p = r->allocate(block, align);
  r->deallocate(outside, block, align);
  this->expect_one(misuse::foreign_pointer, outside);
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
  this->expect_one(misuse::size_mismatch, p);
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
  this->expect_one(misuse::alignment_mismatch, p);
  EXPECT_TRUE(r->is_live(p));
  r->deallocate(p, block, align);
}

TYPED_TEST(DebugResource, ReportsAnOverrunByOneByteAndStillFreesTheBlock) {
  auto r = this->make();
  auto* p = static_cast<unsigned char*>(r->allocate(block, align));
  scribble(p + block);
  r->deallocate(p, block, align);
  this->expect_one(misuse::overrun, p);
  EXPECT_FALSE(r->is_live(p));
}

TYPED_TEST(DebugResource, ReportsAnUnderrunByOneByteAndStillFreesTheBlock) {
  auto r = this->make();
  auto* p = static_cast<unsigned char*>(r->allocate(block, align));
  scribble(p - 1);
  r->deallocate(p, block, align);
  this->expect_one(misuse::underrun, p);
  EXPECT_FALSE(r->is_live(p));
}

TYPED_TEST(DebugResource, ReportsALifoViolationWhenAskedAndKeepsBothBlocks) {
  auto r = this->make(true);
  void* a = r->allocate(block, align);
  void* b = r->allocate(block, align);
  r->deallocate(a, block, align);
  this->expect_one(misuse::lifo_violation, a);
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
  this->expect_one(misuse::use_after_reset, p);
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
  EXPECT_EQ(this->reports_[0].kind, misuse::leak);
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

std::vector<misuse_report>& recorded() {
  static std::vector<misuse_report> r;
  return r;
}

debug_options recording() {
  recorded().clear();
  debug_options o;
  o.reaction = debug_reaction::handler;
  o.handler = [](const misuse_report& r) { recorded().push_back(r); };
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
  EXPECT_EQ(peek(p + 40), memkit::debug_guard_byte);
  EXPECT_EQ(peek(p - 1), memkit::debug_guard_byte);
  r.deallocate(p, 40, 8);
}

#if !defined(MEMKIT_ASAN)
// AddressSanitizer builds poison that memory, so there the read is an error:
// DebugResource.PoisonsFreedAndResetBlocksWhichStillHoldThePattern is the counterpart.
TEST(DebugResource, FillsFreedAndResetBlocksSoALaterReadShowsThePattern) {
  debug_resource<memkit::arena<>> r(recording());
  auto* p = static_cast<unsigned char*>(r.allocate(64, 8));
  std::memset(p, 0x11, 64);
  r.reset();
  for (std::size_t k = 0; k < 64; ++k) {
    ASSERT_EQ(p[k], memkit::debug_freed_byte);
  }
}
#else
bool all_poisoned(const unsigned char* p, std::size_t n) {
  for (std::size_t k = 0; k < n; ++k) {
    if (__asan_address_is_poisoned(p + k) == 0) {
      return false;
    }
  }
  return true;
}

void read_byte(const void* p) { (void)*static_cast<const volatile unsigned char*>(p); }
void write_byte(void* p) { *static_cast<volatile unsigned char*>(p) = 0; }

TEST(DebugResource, PoisonsFreedAndResetBlocksWhichStillHoldThePattern) {
  debug_resource<memkit::arena<>> r(recording());
  auto* p = static_cast<unsigned char*>(r.allocate(64, 8));
  std::memset(p, 0x11, 64);
  r.reset();
  EXPECT_TRUE(all_poisoned(p, 64));
  EXPECT_DEATH(read_byte(p), "use-after-poison");
  for (std::size_t k = 0; k < 64; ++k) {
    ASSERT_EQ(peek(p + k), memkit::debug_freed_byte);
  }
  debug_resource<memkit::pool<>> pool(recording(), memkit::debug_block_size(32));
  auto* q = static_cast<unsigned char*>(pool.allocate(32));
  std::memset(q, 0x11, 32);
  pool.deallocate(q, 32);
  EXPECT_TRUE(all_poisoned(q, 32));
  EXPECT_DEATH(read_byte(q + 31), "use-after-poison");
  for (std::size_t k = 0; k < 32; ++k) {
    ASSERT_EQ(peek(q + k), memkit::debug_freed_byte);
  }
}

TEST(DebugResource, PoisonsGuardsSoAnOverrunIsReportedAsItHappens) {
  debug_resource<memkit::malloc_resource> r(recording());
  auto* p = static_cast<unsigned char*>(r.allocate(13, 8));
  write_byte(p + 12);
  EXPECT_TRUE(all_poisoned(p + 13, 16));
  EXPECT_TRUE(all_poisoned(p - 16, 16));
  EXPECT_DEATH(write_byte(p + 13), "use-after-poison");
  EXPECT_DEATH(write_byte(p - 1), "use-after-poison");
  r.check(); // reads the guards without tripping over their poison
  r.deallocate(p, 13, 8);
  EXPECT_TRUE(recorded().empty());
}
#endif

TEST(DebugResource, CheckReportsDamagedGuardsOfLiveBlocksOnce) {
  debug_resource<memkit::malloc_resource> r(recording());
  auto* p = static_cast<unsigned char*>(r.allocate(16, 8));
  void* q = r.allocate(16, 8);
  scribble(p + 16);
  r.check();
  ASSERT_EQ(recorded().size(), 1u);
  EXPECT_EQ(recorded()[0].kind, misuse::overrun);
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
  scribble(p - 20);
  r.deallocate(p, 16, 8);
  ASSERT_EQ(recorded().size(), 1u);
  EXPECT_EQ(recorded()[0].kind, misuse::underrun);
}

// An alignment of 64 puts 16 bytes of padding before the 32-byte header (debug_front rounds 16 +
// 32 up to 64): they are guard bytes of the shared layout (detail/guard.hpp), checked like the
// rest.
TEST(DebugResource, DamagedPaddingBeforeTheHeaderIsReportedAsAnUnderrun) {
  debug_resource<memkit::malloc_resource> r(recording());
  auto* p = static_cast<unsigned char*>(r.allocate(16, 64));
  EXPECT_EQ(peek(p - 64), memkit::debug_guard_byte);
  scribble(p - 64);
  r.deallocate(p, 16, 64);
  ASSERT_EQ(recorded().size(), 1u);
  EXPECT_EQ(recorded()[0].kind, misuse::underrun);
  EXPECT_EQ(recorded()[0].pointer, p);
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
    EXPECT_EQ(e.report().kind, misuse::double_free);
    EXPECT_NE(std::string(e.what()).find(
                  "memkit::debug_resource<memkit::malloc_resource>: double free at"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(r.misuses(), 2u);
  EXPECT_NO_THROW(r.check());
  void* q = r.allocate(16, 8);
  scribble(static_cast<unsigned char*>(q) + 16);
  EXPECT_THROW(r.check(), memkit::misuse_error);
  r.deallocate(q, 16, 8);
  const std::exception& base = memkit::misuse_error(misuse_report{});
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
  EXPECT_EQ(recorded()[0].kind, misuse::double_free);
}

TEST(DebugResource, FormatsAReportWithTheBlockWhenItKnowsIt) {
  misuse_report r{misuse::lifo_violation, "x", nullptr, 1, 2, 0, 0, 0};
  char line[256];
  const std::string plain = memkit::format(r, line, sizeof line);
  EXPECT_EQ(plain.rfind("x: LIFO violation at ", 0), 0u) << plain;
  EXPECT_NE(plain.find("(size 1, alignment 2)"), std::string::npos) << plain;
  r.allocation = 3;
  r.block_size = 32;
  r.block_alignment = 16;
  const std::string known = memkit::format(r, line, sizeof line);
  EXPECT_NE(known.find("(size 1, alignment 2; block #3 of size 32, alignment 16)"),
            std::string::npos)
      << known;
  EXPECT_STREQ(memkit::to_string(misuse::leak), "leak");
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

namespace {

// Allocates two blocks, takes a marker, allocates two more, rolls back: the younger two must be
// dropped from the registry (a later free is a use after reset) and filled with the freed pattern.
template <class Strategy, class... Args>
void expect_rollback_drops_younger_blocks(bool lifo, Args... args) {
  debug_options o = recording();
  o.lifo = lifo;
  debug_resource<Strategy> r(std::move(o), args...);
  void* a = r.allocate(16, 8);
  void* b = r.allocate(24, 8);
  const auto m = r.marker();
  auto* c = static_cast<unsigned char*>(r.allocate(40, 8));
  void* d = r.allocate(8, 8);
  std::memset(c, 0x11, 40);
  r.rollback(m);
  EXPECT_TRUE(recorded().empty());
  EXPECT_EQ(r.live_blocks(), 2u);
  EXPECT_TRUE(r.is_live(a) && r.is_live(b));
  EXPECT_FALSE(r.is_live(c) || r.is_live(d));
  for (std::size_t k = 0; k < 40; ++k) {
    ASSERT_EQ(peek(c + k), memkit::debug_freed_byte);
  }
  r.deallocate(c, 40, 8);
  ASSERT_EQ(recorded().size(), 1u);
  EXPECT_EQ(recorded()[0].kind, misuse::use_after_reset);
  EXPECT_EQ(recorded()[0].pointer, c);
  recorded().clear();
  r.rollback(m); // still valid: a mark-work-rollback loop reuses one marker
  void* e = r.allocate(8, 8);
  r.deallocate(e, 8, 8);
  r.deallocate(b, 24, 8);
  r.deallocate(a, 16, 8);
  EXPECT_TRUE(recorded().empty());
  EXPECT_EQ(r.live_blocks(), 0u);
}

} // namespace

TEST(DebugResource, RollbackDropsTheBlocksAllocatedAfterTheMarkerAndFillsThem) {
  expect_rollback_drops_younger_blocks<memkit::arena<>>(false);
  expect_rollback_drops_younger_blocks<memkit::stack<>>(false, std::size_t{4096});
  expect_rollback_drops_younger_blocks<memkit::stack<>>(true, std::size_t{4096});
}

TEST(DebugResource, RollbackToABadMarkerIsReportedAndIgnored) {
  debug_resource<memkit::stack<>> r(recording(), std::size_t{4096});
  debug_resource<memkit::stack<>> other(recording(), std::size_t{4096});
  const auto foreign = other.marker();
  const auto outer = r.marker();
  void* a = r.allocate(16, 8);
  const auto inner = r.marker();
  void* b = r.allocate(16, 8);
  const auto ahead = r.marker();
  r.deallocate(b, 16, 8); // `ahead` now points past the top
  r.rollback(ahead);
  r.rollback(foreign);
  r.rollback(memkit::debug_marker<memkit::stack_marker>{});
  r.rollback(outer); // valid: frees `a`
  r.rollback(inner); // taken after `outer`: gone with it
  void* c = r.allocate(16, 8);
  r.reset();
  r.rollback(outer); // from before the reset
  ASSERT_EQ(recorded().size(), 5u);
  for (const misuse_report& report : recorded()) {
    EXPECT_EQ(report.kind, misuse::bad_marker);
  }
  EXPECT_EQ(recorded()[0].pointer, &ahead);
  EXPECT_EQ(recorded()[1].pointer, &foreign);
  EXPECT_EQ(recorded()[3].pointer, &inner);
  EXPECT_FALSE(r.is_live(a));
  EXPECT_FALSE(r.is_live(c));
  EXPECT_EQ(r.live_blocks(), 0u);
}

TEST(DebugResource, RollbackToABadMarkerAbortsByDefaultNamingTheMistake) {
  EXPECT_DEATH(
      {
        debug_resource<memkit::arena<>> r;
        debug_resource<memkit::arena<>> other;
        r.rollback(other.marker());
      },
      "memkit::debug_resource<memkit::arena>: bad marker");
}
