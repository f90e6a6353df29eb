// SPDX-License-Identifier: BSL-1.0
// tests/assert_test.cpp: the assertion levels of detail/base/assert.hpp follow MEMKIT_DEBUG.
#include <memkit/detail/base/assert.hpp>

#include <gtest/gtest.h>

namespace {

int evaluations = 0;

bool counted(bool value) {
  ++evaluations;
  return value;
}

TEST(Assert, PassingAssertionsEvaluateTheirExpressionOnlyAtTheirLevel) {
  evaluations = 0;
  MEMKIT_ASSERT(counted(true));
  MEMKIT_ASSERT_INTERNAL(counted(true));
  MEMKIT_ASSERT_EXPENSIVE(counted(true));
  EXPECT_EQ(evaluations,
            (memkit::debug_level >= 1) + (memkit::debug_level >= 2) + (memkit::debug_level >= 3));
}

TEST(AssertDeathTest, FailureNamesTheExpressionAndAborts) {
  EXPECT_DEATH(MEMKIT_ASSERT_ALWAYS(counted(false)),
               "memkit: assertion failed: counted\\(false\\) \\(.*assert_test.cpp:[0-9]+\\)");
}

TEST(AssertDeathTest, EachLevelFiresOnlyWhenEnabled) {
  if constexpr (memkit::debug_level >= 1) {
    EXPECT_DEATH(MEMKIT_ASSERT(counted(false)), "assertion failed: counted");
  } else {
    MEMKIT_ASSERT(counted(false));
  }
  if constexpr (memkit::debug_level >= 2) {
    EXPECT_DEATH(MEMKIT_ASSERT_INTERNAL(counted(false)), "assertion failed: counted");
  } else {
    MEMKIT_ASSERT_INTERNAL(counted(false));
  }
  if constexpr (memkit::debug_level >= 3) {
    EXPECT_DEATH(MEMKIT_ASSERT_EXPENSIVE(counted(false)), "assertion failed: counted");
  } else {
    MEMKIT_ASSERT_EXPENSIVE(counted(false));
  }
}

} // namespace
