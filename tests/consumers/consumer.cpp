// SPDX-License-Identifier: BSL-1.0
// A downstream project's first use of memkit: proves the package's include paths and target work,
// and, where the consumer knows the package's version (find_package), that the headers say it.
#include <cstdio>
#include <memkit/memkit.hpp>

#if defined(EXPECTED_VERSION_MAJOR)
static_assert(MEMKIT_VERSION_MAJOR == EXPECTED_VERSION_MAJOR &&
                  MEMKIT_VERSION_MINOR == EXPECTED_VERSION_MINOR &&
                  MEMKIT_VERSION_PATCH == EXPECTED_VERSION_PATCH,
              "the installed headers' MEMKIT_VERSION_* differ from the package's version");
#endif

int main() {
  memkit::malloc_resource heap;
  void* p = heap.allocate(64, 64);
  const bool ok = memkit::detail::is_aligned(p, 64);
  heap.deallocate(p, 64, 64);
  std::printf("memkit %s consumer: %s\n", MEMKIT_VERSION_STRING, ok ? "ok" : "misaligned block");
  return ok ? 0 : 1;
}
