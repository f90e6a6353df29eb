// A downstream project's first use of memkit: proves the package's include paths and target work.
#include <cstdio>
#include <memkit/memkit.hpp>

int main() {
  memkit::malloc_resource heap;
  void* p = heap.allocate(64, 64);
  const bool ok = memkit::detail::is_aligned(p, 64);
  heap.deallocate(p, 64, 64);
  std::puts(ok ? "memkit consumer: ok" : "memkit consumer: misaligned block");
  return ok ? 0 : 1;
}
