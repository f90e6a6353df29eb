// SPDX-License-Identifier: BSL-1.0
// examples/huge_page_example.cpp: 8 MiB of ints in a std::vector backed by transparent huge pages.
//
// A large array read at random touches many pages; with 2 MiB pages four TLB entries cover all
// 8 MiB instead of 2048. The kernel may still use regular pages, so the program reports which.
#include <memkit/huge_page.hpp>

#include <cstdio>
#include <new>
#include <vector>

namespace {

// The smallest allocator that lets a standard container draw from huge_page_resource.
template <class T>
struct huge_page_allocator {
  using value_type = T;
  huge_page_allocator() = default;
  template <class U>
  huge_page_allocator(const huge_page_allocator<U>&) noexcept {}

  T* allocate(std::size_t n) {
    if (n > memkit::huge_page_resource{}.max_size() / sizeof(T)) {
      throw std::bad_array_new_length();
    }
    return static_cast<T*>(memkit::huge_page_resource{}.allocate(n * sizeof(T), alignof(T)));
  }
  void deallocate(T* p, std::size_t n) noexcept {
    memkit::huge_page_resource{}.deallocate(p, n * sizeof(T), alignof(T));
  }
  friend bool operator==(huge_page_allocator, huge_page_allocator) noexcept { return true; }
  friend bool operator!=(huge_page_allocator, huge_page_allocator) noexcept { return false; }
};

} // namespace

int main() {
  constexpr std::size_t count = (std::size_t{8} << 20) / sizeof(int);
  std::vector<int, huge_page_allocator<int>> values;
  values.reserve(count); // one region: growing step by step would map a region per step
  long long sum = 0;
  for (std::size_t i = 0; i < count; ++i) {
    values.push_back(static_cast<int>(i % 1000));
    sum += values.back();
  }

  const std::size_t bytes = values.capacity() * sizeof(int);
  const std::size_t huge = memkit::huge_page_resource::huge_page_bytes(values.data(), bytes);
  const bool available = memkit::huge_page_resource::transparent_huge_pages_available();
  std::printf("%zu ints (%zu MiB): %zu of %zu MiB on huge pages (THP %s)\n", values.size(),
              bytes >> 20, huge >> 20, memkit::huge_page_resource::region_size(bytes) >> 20,
              available ? "available" : "off");

  long long expected = 0;
  for (std::size_t i = 0; i < count; ++i) {
    expected += static_cast<long long>(i % 1000);
  }
  const bool consistent =
      huge <= memkit::huge_page_resource::region_size(bytes) && (available || huge == 0);
  return sum == expected && consistent ? 0 : 1;
}
