// SPDX-License-Identifier: BSL-1.0
// tests/valgrind/clean.cpp: correct use of every strategy, built with MEMKIT_VALGRIND=1 and run
// under memcheck by ctest (valgrind.clean), which passes only with zero memcheck errors: the client
// requests must never flag memory a strategy itself reads (free-list links, stack headers) or
// memory handed back to malloc or to a caller's buffer.
#include <cstdio>
#include <cstring>
#include <vector>

#include <memkit/arena.hpp>
#include <memkit/array_pool.hpp>
#include <memkit/fixed_pool.hpp>
#include <memkit/multipool.hpp>
#include <memkit/node_pool.hpp>
#include <memkit/pool.hpp>
#include <memkit/stack.hpp>

namespace {

// Allocates, writes, frees every other block, allocates again and checks what it wrote.
template <class R>
bool churn(R& r, std::size_t n, std::size_t alignment) {
  std::vector<unsigned char*> blocks;
  for (int i = 0; i < 64; ++i) {
    blocks.push_back(static_cast<unsigned char*>(r.allocate(n, alignment)));
    std::memset(blocks.back(), i, n);
  }
  for (std::size_t i = 0; i < blocks.size(); i += 2) {
    r.deallocate(blocks[i], n, alignment);
    blocks[i] = static_cast<unsigned char*>(r.allocate(n, alignment));
    std::memset(blocks[i], static_cast<int>(i), n);
  }
  bool ok = true;
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    ok = ok && blocks[i][n - 1] == i;
  }
  for (std::size_t i = blocks.size(); i-- > 0;) {
    r.deallocate(blocks[i], n, alignment);
  }
  return ok;
}

} // namespace

int main() {
  alignas(64) static unsigned char buffer[8192];
  bool ok = true;
  {
    memkit::fixed_pool fixed(buffer, sizeof buffer, 24, 8);
    ok = churn(fixed, 20, 8) && fixed.in_use() == 0;
  }
  std::memset(buffer, 0, sizeof buffer); // the caller's buffer is usable again
  memkit::pool<> pool(40);
  ok = ok && churn(pool, 40, 8) && pool.in_use() == 0;
  pool.release();
  memkit::array_pool<> array(3, 100, 1);
  ok = ok && churn(array, 3, 1);
  memkit::multipool<> multi;
  ok = ok && churn(multi, 100, 8) && churn(multi, 7, 1);
  multi.reset();
  memkit::node_pool<> nodes;
  ok = ok && churn(nodes, 24, 8);
  {
    memkit::arena<> arena(buffer, 1024);
    const auto mark = arena.marker();
    ok = ok && churn(arena, 48, 8);
    arena.rollback(mark);
    ok = ok && churn(arena, 5, 1);
    arena.reset();
  }
  memkit::stack<> stack(1 << 16);
  const auto top = stack.marker();
  for (int i = 0; i < 10; ++i) {
    std::memset(stack.allocate(10 + i, 1), i, 10 + i);
  }
  stack.rollback(top);
  void* s = stack.allocate(3, 1);
  std::memset(s, 1, 3);
  stack.deallocate(s, 3, 1);
  std::memset(buffer, 1, sizeof buffer);
  std::printf("%s\n", ok ? "every strategy kept its blocks intact" : "a block was corrupted");
  return ok ? 0 : 1;
}
