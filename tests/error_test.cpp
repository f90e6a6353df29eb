// SPDX-License-Identifier: BSL-1.0
// What memkit throws and reports (memkit/error.hpp). Built as its own program, memkit_error_tests,
// because it replaces the global operator new and delete: with the heap switched off, every memkit
// exception must still be constructed, thrown, copied, caught and explained, as the exception
// itself and as the standard type callers catch (docs/concepts.md, "Errors"). The exception
// object's own storage comes from the C++ runtime (__cxa_allocate_exception, which has an
// emergency pool for a failing malloc), not from operator new.
#include "memkit/error.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <gtest/gtest.h>
#include <new>
#include <type_traits>

#include "memkit/debug_resource.hpp"
#include "memkit/upstream.hpp"

namespace {

std::atomic<bool> heap_off{false};
std::atomic<std::size_t> refused{0};

void* heap(std::size_t n) noexcept {
  if (heap_off.load(std::memory_order_relaxed)) {
    refused.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  return std::malloc(n == 0 ? 1 : n);
}

} // namespace

// Every unaligned form is replaced, so that under AddressSanitizer (which defines them all) each
// block from malloc here goes back to free here.
void* operator new(std::size_t n) {
  if (void* p = heap(n)) {
    return p;
  }
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return ::operator new(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return heap(n); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return heap(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

namespace {

/// Switches the heap off for its lifetime and counts the requests refused meanwhile.
class without_heap {
public:
  without_heap() noexcept : before_(refused.load()) { heap_off = true; }
  ~without_heap() { heap_off = false; }
  without_heap(const without_heap&) = delete;
  without_heap& operator=(const without_heap&) = delete;
  std::size_t refused_so_far() const noexcept { return refused.load() - before_; }

private:
  std::size_t before_;
};

/// What a handler saw, copied out with the heap off (no std::string).
struct seen {
  bool caught_as_itself = false;
  bool caught_as_base = false;
  char what[256] = {};
};

/// Throws `make()` twice with the heap off: caught as `E` and copied, and caught as `Base`.
template <class E, class Base, class Make>
seen throw_without_heap(Make make, std::size_t& refused_requests) {
  seen s;
  {
    const without_heap off;
    try {
      throw make();
    } catch (const E& e) {
      const E copy = e; // as std::exception_ptr and rethrowing by value do
      s.caught_as_itself = true;
      std::strncpy(s.what, copy.what(), sizeof s.what - 1);
    }
    try {
      throw make();
    } catch (const Base&) {
      s.caught_as_base = true;
    }
    refused_requests = off.refused_so_far();
  }
  return s;
}

TEST(Errors, TheSwitchReallyTurnsTheHeapOff) {
  std::size_t refused_requests = 0;
  {
    const without_heap off;
    EXPECT_THROW((void)::operator new(16), std::bad_alloc);
    EXPECT_EQ(::operator new(16, std::nothrow), nullptr);
    refused_requests = off.refused_so_far();
  }
  EXPECT_EQ(refused_requests, 2u);
}

TEST(Errors, OutOfMemoryIsThrownAndExplainedWithoutTheHeap) {
  std::size_t refused_requests = 0;
  const seen s = throw_without_heap<memkit::out_of_memory, std::bad_alloc>(
      [] { return memkit::out_of_memory("memkit::pool", 32, 8); }, refused_requests);
  EXPECT_TRUE(s.caught_as_itself && s.caught_as_base);
  EXPECT_STREQ(s.what, "memkit::pool: out of memory (size 32, alignment 8)");
  EXPECT_EQ(refused_requests, 0u);
}

TEST(Errors, BadSizeIsThrownAndExplainedWithoutTheHeap) {
  std::size_t refused_requests = 0;
  const seen s = throw_without_heap<memkit::bad_size, std::bad_array_new_length>(
      [] { return memkit::bad_size("memkit::arena", SIZE_MAX, 8); }, refused_requests);
  EXPECT_TRUE(s.caught_as_itself && s.caught_as_base);
  EXPECT_NE(std::strstr(s.what, "memkit::arena: size exceeds max_size()"), nullptr) << s.what;
  EXPECT_EQ(refused_requests, 0u);
}

// It used to derive from std::invalid_argument, whose constructor copies its message to the heap:
// with the heap exhausted the caller got that std::bad_alloc instead of a bad_alignment.
TEST(Errors, BadAlignmentIsThrownAndExplainedWithoutTheHeap) {
  std::size_t refused_requests = 0;
  const seen s = throw_without_heap<memkit::bad_alignment, std::bad_alloc>(
      [] { return memkit::bad_alignment("memkit::stack", 8, 3); }, refused_requests);
  EXPECT_TRUE(s.caught_as_itself && s.caught_as_base);
  EXPECT_STREQ(s.what, "memkit::stack: alignment not a power of two or above max_alignment() "
                       "(size 8, alignment 3)");
  EXPECT_EQ(refused_requests, 0u);
}

TEST(Errors, MisuseErrorIsThrownAndExplainedWithoutTheHeap) {
  int x = 0;
  const memkit::misuse_report r{memkit::misuse::double_free, "memkit::pool", &x, 16, 8, 16, 8, 4};
  std::size_t refused_requests = 0;
  const seen s = throw_without_heap<memkit::misuse_error, std::exception>(
      [&] { return memkit::misuse_error(r); }, refused_requests);
  EXPECT_TRUE(s.caught_as_itself && s.caught_as_base);
  EXPECT_EQ(std::strncmp(s.what, "memkit::pool: double free at ", 29), 0) << s.what;
  EXPECT_NE(std::strstr(s.what, "(size 16, alignment 8; block #4 of size 16, alignment 8)"),
            nullptr)
      << s.what;
  EXPECT_EQ(refused_requests, 0u);
}

// The same through the paths that throw them: the shared diagnosis of a failed request, and a debug
// resource's deferred report.
TEST(Errors, AllocateDiagnosesFailuresWithoutTheHeap) {
  memkit::debug_options o;
  o.reaction = memkit::debug_reaction::deferred_throw;
  memkit::debug_resource<memkit::malloc_resource> checked(o);
  void* p = checked.allocate(16, 8);
  checked.deallocate(p, 16, 8);
  checked.deallocate(p, 16, 8); // a double free, reported by the next allocate()

  bool alignment = false;
  bool size = false;
  bool exhausted = false;
  bool misuse = false;
  std::size_t refused_requests = 0;
  {
    const without_heap off;
    try {
      (void)memkit::malloc_resource{}.allocate(8, 6);
    } catch (const memkit::bad_alignment&) {
      alignment = true;
    }
    try {
      (void)memkit::malloc_resource{}.allocate(SIZE_MAX, 8);
    } catch (const memkit::bad_size&) {
      size = true;
    }
    try {
      (void)memkit::null_resource{}.allocate(8, 8);
    } catch (const memkit::out_of_memory&) {
      exhausted = true;
    }
    try {
      (void)checked.allocate(16, 8);
    } catch (const memkit::misuse_error& e) {
      misuse = e.report().kind == memkit::misuse::double_free;
    }
    refused_requests = off.refused_so_far();
  }
  EXPECT_TRUE(alignment);
  EXPECT_TRUE(size);
  EXPECT_TRUE(exhausted);
  EXPECT_TRUE(misuse);
  EXPECT_EQ(refused_requests, 0u);
}

TEST(Errors, ExceptionsDeriveFromTheDocumentedStandardTypes) {
  static_assert(std::is_base_of_v<std::bad_alloc, memkit::out_of_memory>);
  static_assert(std::is_base_of_v<std::bad_array_new_length, memkit::bad_size>);
  static_assert(std::is_base_of_v<std::bad_alloc, memkit::bad_alignment>);
  static_assert(std::is_base_of_v<std::exception, memkit::misuse_error> &&
                !std::is_base_of_v<std::bad_alloc, memkit::misuse_error>);
  static_assert(std::is_nothrow_constructible_v<memkit::bad_alignment, const char*, std::size_t,
                                                std::size_t> &&
                std::is_nothrow_copy_constructible_v<memkit::bad_alignment> &&
                std::is_nothrow_copy_constructible_v<memkit::misuse_error>);
  EXPECT_THROW((void)memkit::malloc_resource{}.allocate(8, 6), memkit::bad_alignment);
  EXPECT_THROW((void)memkit::malloc_resource{}.allocate(8, 6), std::bad_alloc);
  EXPECT_THROW((void)memkit::malloc_resource{}.allocate(SIZE_MAX, 8), std::bad_array_new_length);
  EXPECT_THROW((void)memkit::malloc_resource{}.allocate(SIZE_MAX, 8), std::bad_alloc);
  EXPECT_THROW((void)memkit::null_resource{}.allocate(8, 8), std::bad_alloc);
}

TEST(Errors, DefaultMisuseHandlerAbortsWithAReportNamingTheMistake) {
  memkit::null_resource r;
  int x = 0;
  EXPECT_DEATH(r.deallocate(&x, 4, 4), "memkit::null_resource: foreign pointer");
}

} // namespace
