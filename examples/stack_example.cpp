// SPDX-License-Identifier: BSL-1.0
// Merge sort whose temporary buffers come from a stack allocator: every recursion level frees its
// scratch before returning, so the order is LIFO by construction (and checked by the stack).
#include <memkit/stack.hpp>

#include <algorithm>
#include <cstdio>
#include <random>
#include <vector>

namespace {

void merge_sort(memkit::stack<>& scratch, int* v, std::size_t n) {
  if (n < 2) {
    return;
  }
  const std::size_t half = n / 2;
  merge_sort(scratch, v, half);
  merge_sort(scratch, v + half, n - half);
  int* merged = static_cast<int*>(scratch.allocate(n * sizeof(int), alignof(int)));
  std::merge(v, v + half, v + half, v + n, merged);
  std::copy(merged, merged + n, v);
  scratch.deallocate(merged, n * sizeof(int), alignof(int));
}

} // namespace

int main() {
  constexpr std::size_t count = 100000;
  std::mt19937 rng(42);
  std::vector<int> values(count);
  for (int& v : values) {
    v = static_cast<int>(rng() % 1000000);
  }
  std::vector<int> expected = values;
  std::sort(expected.begin(), expected.end());

  // One region for every temporary: the largest is the whole array, plus a header.
  memkit::stack<> scratch(count * sizeof(int) + 64);
  merge_sort(scratch, values.data(), values.size());

  std::printf("sorted %zu ints with %zu bytes of stack scratch, %zu in use afterwards\n", count,
              scratch.capacity(), scratch.used());
  return values == expected && scratch.used() == 0 ? 0 : 1;
}
