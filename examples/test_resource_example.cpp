// SPDX-License-Identifier: BSL-1.0
// Proves that a small phone book keeps its promises when memory runs out: every allocation it
// makes is failed in turn by memkit::exception_test_loop, and after each failure the book must be
// unchanged and nothing may have leaked. It must also never fall back on the default resource.
#include <memkit/test_resource.hpp>

#include <cstdio>
#include <map>
#include <memory_resource>
#include <string>

namespace {

class phone_book {
public:
  explicit phone_book(std::pmr::memory_resource* r) : entries_(r) {}

  /// Strong guarantee: on std::bad_alloc the book is unchanged.
  void add(const char* name, const char* number) {
    entries_.emplace(std::pmr::string(name, entries_.get_allocator()),
                     std::pmr::string(number, entries_.get_allocator()));
  }
  std::size_t size() const { return entries_.size(); }

private:
  std::pmr::map<std::pmr::string, std::pmr::string> entries_;
};

} // namespace

int main() {
  memkit::test_resource memory("phone book memory");
  memkit::default_resource_guard no_default_resource;
  bool kept_its_promise = true;
  const std::size_t runs = memkit::exception_test_loop(memory, [&] {
    phone_book book(&memory);
    book.add("Ada Lovelace, Analytical Engines Ltd", "+44 20 7946 0000");
    try {
      book.add("Charles Babbage, Difference Engines Ltd", "+44 20 7946 0001");
    } catch (const std::bad_alloc&) {
      kept_its_promise = kept_its_promise && book.size() == 1;
      throw;
    }
  });
  std::printf("%zu runs, %zu allocations failed on purpose, peak %zu bytes, nothing leaked\n", runs,
              memory.failures(), memory.peak_bytes());
  return kept_its_promise && memory.blocks_in_use() == 0 && no_default_resource.requests() == 0 ? 0
                                                                                                : 1;
}
