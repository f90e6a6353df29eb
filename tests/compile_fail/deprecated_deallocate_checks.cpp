// SPDX-License-Identifier: BSL-1.0
// tests/compile_fail/deprecated_deallocate_checks.cpp: a translation unit that sets memkit 0.1's
// MEMKIT_DEALLOCATE_CHECKS (CHANGELOG.md): in 0.2.x it compiles with a warning naming MEMKIT_DEBUG
// and means debug level 1; under -Werror the warning fails the build (expect_deprecated.cmake).
#define MEMKIT_DEALLOCATE_CHECKS 1
#include <memkit/pool.hpp>

static_assert(MEMKIT_DEBUG == 1, "MEMKIT_DEALLOCATE_CHECKS=1 must mean MEMKIT_DEBUG 1");

int main() {
  memkit::pool<> p(32);
  p.deallocate(p.allocate(32, 8), 32, 8);
}
