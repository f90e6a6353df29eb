// SPDX-License-Identifier: BSL-1.0
// tests/valgrind/use_after_free.cpp: reads a freed pool block. Built with MEMKIT_VALGRIND=1 and run
// under memcheck by ctest (valgrind.use_after_free), which passes only if memcheck reports an
// invalid read: the block lies inside a live malloc chunk, so only memkit's client requests can
// tell memcheck it is free.
#include <cstdio>
#include <cstring>

#include <memkit/pool.hpp>

int main() {
  memkit::pool<> pool(32);
  auto* p = static_cast<unsigned char*>(pool.allocate(32));
  std::memset(p, 0x5A, 32);
  void* keep = pool.allocate(32); // the chunk stays in use: only the pool knows p is free
  pool.deallocate(p, 32);
  const unsigned char stale = *static_cast<volatile unsigned char*>(p + 16);
  std::printf("read %d from a freed pool block\n", stale);
  pool.deallocate(keep, 32);
  return 0;
}
