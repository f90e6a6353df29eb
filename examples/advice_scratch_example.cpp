// SPDX-License-Identifier: BSL-1.0
// examples/advice_scratch_example.cpp: a layout pass over a tree of boxes whose scratch arrays are
// freed newest first, the second of the programs `memkit-bench advise` is checked against
// (docs/TRACE.md#advice-checked-against-the-live-program, bench/advice_proof.sh).
//
// Every box lays out its children in a scratch array of their sizes, taken from one call site
// before it recurses into them and given back after: every free is of the newest live block, on
// one thread. That is the LIFO pattern the advisor finds, and memkit::stack is what it proposes:
// `malloc` takes each array from the heap, `stack` from one memkit::stack.
//
// Usage: advice_scratch_example [malloc|stack ITERATIONS] (examples/advice_main.hpp). Without
// arguments, both forms run 200 iterations and must agree (the ctest run).
#include "advice_main.hpp"

#include <memkit/stack.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>

namespace {

struct extent {
  std::int32_t width;
  std::int32_t height;
};

/// The heap: each scratch array its own block.
struct heap_scratch {
  void* allocate(std::size_t bytes) {
    void* p = std::malloc(bytes);
    if (p == nullptr) {
      throw std::bad_alloc();
    }
    return p;
  }
  void deallocate(void* p, std::size_t) noexcept { std::free(p); }
};

/// The advice applied: the arrays come from one stack, whose LIFO order the layout keeps.
class stack_scratch {
public:
  // The deepest path holds at most 7 arrays of 11 extents each, plus the stack's headers.
  stack_scratch() : stack_(16 * 1024) {}

  void* allocate(std::size_t bytes) { return stack_.allocate(bytes, alignof(extent)); }
  void deallocate(void* p, std::size_t bytes) noexcept {
    stack_.deallocate(p, bytes, alignof(extent));
  }

private:
  memkit::stack<> stack_;
};

/// The tree is implicit: a box's children, 0 to 11 of them, follow from its id and the frame.
std::uint32_t children_of(std::uint64_t id, int depth) noexcept {
  if (depth >= 7) {
    return 0;
  }
  const std::uint64_t h = (id ^ (id >> 29)) * 0xbf58476d1ce4e5b9;
  return static_cast<std::uint32_t>((h >> 40) % (depth < 2 ? 12 : 5));
}

/// Lays out box `id`: its children side by side, wrapped at `width`; returns its extent.
template <class Scratch>
extent layout(Scratch& scratch, std::uint64_t id, int depth, std::int32_t width,
              std::uint64_t& placed) {
  const std::uint32_t n = children_of(id, depth);
  if (n == 0) {
    const auto leaf = static_cast<std::int32_t>(8 + id % 40);
    return {leaf, 12 + leaf / 3};
  }
  const std::size_t bytes = n * sizeof(extent);
  auto* sizes = static_cast<extent*>(scratch.allocate(bytes));
  for (std::uint32_t i = 0; i < n; ++i) {
    sizes[i] = layout(scratch, id * 13 + i + 1, depth + 1, width / 2 + 20, placed);
  }
  std::int32_t x = 0;
  std::int32_t y = 0;
  std::int32_t row = 0;
  std::int32_t widest = 0;
  for (std::uint32_t i = 0; i < n; ++i) {
    if (x + sizes[i].width > width && x > 0) {
      y += row;
      x = 0;
      row = 0;
    }
    placed = (placed ^ static_cast<std::uint64_t>(x * 31 + y)) * 0x100000001b3;
    x += sizes[i].width;
    row = sizes[i].height > row ? sizes[i].height : row;
    widest = x > widest ? x : widest;
  }
  scratch.deallocate(sizes, bytes);
  return {widest + 4, y + row + 4};
}

template <class Scratch>
std::uint64_t run(long frames) {
  Scratch scratch;
  std::uint64_t placed = 0;
  for (long f = 0; f < frames; ++f) {
    const extent e = layout(scratch, static_cast<std::uint64_t>(f % 97) + 1, 0, 1280, placed);
    placed += static_cast<std::uint64_t>(e.width) * 65536 + static_cast<std::uint64_t>(e.height);
  }
  return placed;
}

} // namespace

int main(int argc, char** argv) {
  return advice::main(argc, argv, "stack", 200, run<heap_scratch>, run<stack_scratch>);
}
