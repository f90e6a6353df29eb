// SPDX-License-Identifier: BSL-1.0
// examples/advice_request_example.cpp: a server loop whose header fields die with their request,
// the first of the programs `memkit-bench advise` is checked against
// (docs/TRACE.md#advice-checked-against-the-live-program, bench/advice_proof.sh).
//
// Each request's header lines are parsed into fields, each field copied into one block from one
// call site; they live until the response is made, then all go at once. That is the bulk death the
// advisor finds, and memkit::arena is what it proposes: `malloc` serves each field from the heap
// and frees each, `arena` bumps each into one arena that is reset after the request.
//
// Usage: advice_request_example [malloc|arena ITERATIONS] (examples/advice_main.hpp). Without
// arguments, both forms run 2000 iterations and must agree (the ctest run).
#include "advice_main.hpp"

#include <memkit/arena.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

namespace {

struct field {
  std::uint32_t name;       ///< which header
  std::uint32_t value_size; ///< bytes of the value, which follows the field in its block
  const unsigned char* value;
};

/// The heap: every field its own block, freed one by one when the request is done.
class heap_fields {
public:
  heap_fields() { blocks_.reserve(64); }
  heap_fields(const heap_fields&) = delete;
  heap_fields& operator=(const heap_fields&) = delete;
  ~heap_fields() { end_request(); }

  void* allocate(std::size_t bytes) {
    void* p = std::malloc(bytes);
    if (p == nullptr) {
      throw std::bad_alloc();
    }
    blocks_.push_back(p);
    return p;
  }
  void end_request() noexcept {
    for (void* p : blocks_) {
      std::free(p);
    }
    blocks_.clear();
  }

private:
  std::vector<void*> blocks_;
};

/// The advice applied: the request's fields are bumped into one arena, reset when it is done.
class arena_fields {
public:
  void* allocate(std::size_t bytes) { return arena_.allocate(bytes, alignof(field)); }
  void end_request() noexcept { arena_.reset(); }

private:
  memkit::arena<> arena_;
};

/// Parses one request of 8 to 39 fields, answers it from its fields, then drops them.
template <class Fields>
std::uint64_t serve(Fields& fields, advice::xorshift& input, std::vector<field*>& parsed) {
  const std::size_t count = 8 + input.next() % 32;
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint64_t bits = input.next();
    const auto size = static_cast<std::uint32_t>(8 + bits % 120);
    auto* f = ::new (fields.allocate(sizeof(field) + size))
        field{static_cast<std::uint32_t>(bits >> 32) % 16, size, nullptr};
    auto* value = reinterpret_cast<unsigned char*>(f + 1);
    std::memset(value, static_cast<int>(bits >> 8), size);
    std::memcpy(value, &bits, sizeof bits);
    f->value = value;
    parsed.push_back(f);
  }
  // The response: a digest of the values of the headers it asks for.
  std::uint64_t digest = count;
  for (const field* f : parsed) {
    if (f->name < 4) {
      std::uint64_t head = 0;
      std::memcpy(&head, f->value, sizeof head);
      digest = (digest ^ head ^ f->value[f->value_size - 1]) * 0x100000001b3;
    }
  }
  parsed.clear();
  fields.end_request();
  return digest;
}

template <class Fields>
std::uint64_t run(long requests) {
  Fields fields;
  advice::xorshift input{0x9e3779b97f4a7c15};
  std::vector<field*> parsed;
  parsed.reserve(64);
  std::uint64_t digest = 0;
  for (long r = 0; r < requests; ++r) {
    digest += serve(fields, input, parsed);
  }
  return digest;
}

} // namespace

int main(int argc, char** argv) {
  return advice::main(argc, argv, "arena", 2000, run<heap_fields>, run<arena_fields>);
}
