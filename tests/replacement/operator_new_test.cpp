// SPDX-License-Identifier: BSL-1.0
// tests/replacement/operator_new_test.cpp: every replaceable operator new and delete
// ([new.delete.single], [new.delete.array]) through the replacement, with the failure contract:
// the throwing forms throw std::bad_alloc, the nothrow forms return null, and both call the
// installed std::new_handler until it is removed.

#include "harness.hpp"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <new>
#include <string>
#include <vector>

namespace {

using namespace memkit::contract;

/// A fresh block of `n` bytes (aligned to `alignment`) as the replacement must give it.
bool good_block(void* p, std::size_t n, std::size_t alignment, unsigned seed) {
  if (p == nullptr || !served(p) || !is_aligned(p, alignment)) {
    return false;
  }
  fill(p, n, seed);
  return check_fill(p, n, seed);
}

MEMKIT_CONTRACT_CASE(EveryUnalignedOverloadPairServesWritableBlocks, cxx_api) {
  const std::nothrow_t& nt = std::nothrow;
  for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{24}, std::size_t{1000},
                              std::size_t{100000}, std::size_t{5} << 20}) {
    const std::size_t a = __STDCPP_DEFAULT_NEW_ALIGNMENT__;
    void* p = escape(::operator new(n));
    MEMKIT_CHECK(good_block(p, n, a, 1));
    ::operator delete(p);
    p = escape(::operator new(n));
    MEMKIT_CHECK(good_block(p, n, a, 2));
    ::operator delete(p, n);
    p = escape(::operator new[](n));
    MEMKIT_CHECK(good_block(p, n, a, 3));
    ::operator delete[](p);
    p = escape(::operator new[](n));
    MEMKIT_CHECK(good_block(p, n, a, 4));
    ::operator delete[](p, n);
    p = escape(::operator new(n, nt));
    MEMKIT_CHECK(good_block(p, n, a, 5));
    ::operator delete(p, nt);
    p = escape(::operator new[](n, nt));
    MEMKIT_CHECK(good_block(p, n, a, 6));
    ::operator delete[](p, nt);
  }
}

MEMKIT_CONTRACT_CASE(EveryAlignedOverloadPairServesAlignedBlocks, cxx_api) {
  const std::nothrow_t& nt = std::nothrow;
  for (std::size_t a = 1; a <= std::size_t{1} << 20; a *= 2) {
    const auto al = static_cast<std::align_val_t>(a);
    for (const std::size_t n : {std::size_t{1}, a, 3 * a + 8}) {
      void* p = escape(::operator new(n, al));
      MEMKIT_CHECK(good_block(p, n, a, 1));
      ::operator delete(p, al);
      p = escape(::operator new(n, al));
      MEMKIT_CHECK(good_block(p, n, a, 2));
      ::operator delete(p, n, al);
      p = escape(::operator new[](n, al));
      MEMKIT_CHECK(good_block(p, n, a, 3));
      ::operator delete[](p, al);
      p = escape(::operator new[](n, al));
      MEMKIT_CHECK(good_block(p, n, a, 4));
      ::operator delete[](p, n, al);
      p = escape(::operator new(n, al, nt));
      MEMKIT_CHECK(good_block(p, n, a, 5));
      ::operator delete(p, al, nt);
      p = escape(::operator new[](n, al, nt));
      MEMKIT_CHECK(good_block(p, n, a, 6));
      ::operator delete[](p, al, nt);
    }
  }
}

struct alignas(256) over_aligned {
  unsigned char bytes[300];
};

MEMKIT_CONTRACT_CASE(NewExpressionsAndContainersGoThroughTheReplacement, cxx_api) {
  auto* one = escape(new over_aligned);
  MEMKIT_CHECK(is_aligned(one, 256) && served(one));
  delete one;
  auto* many = escape(new over_aligned[5]);
  MEMKIT_CHECK(is_aligned(many, 256));
  delete[] many;
  auto* ints = escape(new int[1000]());
  MEMKIT_CHECK(served(ints) && ints[999] == 0);
  delete[] ints;
  std::map<std::string, std::vector<int>> m;
  for (int i = 0; i < 2000; ++i) {
    m["key number " + std::to_string(i)].assign(static_cast<std::size_t>(i % 50), i);
  }
  std::size_t total = 0;
  bool all_served = true;
  for (const auto& entry : m) {
    // memkit_owns takes any address inside a block: here, the pair inside the map's node.
    all_served &= served(&entry) && (entry.second.empty() || served(entry.second.data()));
    total += entry.second.size();
  }
  MEMKIT_CHECK(all_served);
  MEMKIT_CHECK(total == 2000 / 50 * (49 * 50 / 2));
}

/// \returns how many of the throwing forms (plain, array; with `al` when aligned) threw
/// std::bad_alloc for `size`, and checks that the nothrow forms return null.
int throwing_forms_that_threw(std::size_t size, bool aligned) {
  const auto al = std::align_val_t{64};
  int threw = 0;
  for (int form = 0; form < 2; ++form) {
    try {
      escape(form == 0 ? (aligned ? ::operator new(size, al) : ::operator new(size))
                       : (aligned ? ::operator new[](size, al) : ::operator new[](size)));
    } catch (const std::bad_alloc&) {
      ++threw;
    }
  }
  MEMKIT_CHECK(escape(aligned ? ::operator new(size, al, std::nothrow)
                              : ::operator new(size, std::nothrow)) == nullptr);
  MEMKIT_CHECK(escape(aligned ? ::operator new[](size, al, std::nothrow)
                              : ::operator new[](size, std::nothrow)) == nullptr);
  return threw;
}

MEMKIT_CONTRACT_CASE(ImpossibleNewThrowsBadAllocAndNothrowNewReturnsNull, cxx_api) {
  for (const std::size_t n : impossible) {
    MEMKIT_CHECK(throwing_forms_that_threw(opaque(n), false) == 2);
  }
  // Not SIZE_MAX aligned: libstdc++ 12 (libsupc++/new_opa.cc) rounds the size up to a multiple of
  // the alignment unchecked, so it wraps to 0 and glibc's run returns a block. See below.
  for (const std::size_t n : {SIZE_MAX / 2 + 1, std::size_t{1} << 60}) {
    MEMKIT_CHECK(throwing_forms_that_threw(opaque(n), true) == 2);
  }
}

MEMKIT_CONTRACT_CASE(AlignedNewOfTheLargestSizesFailsInsteadOfWrapping, memkit_api) {
  for (const std::size_t n : {SIZE_MAX, SIZE_MAX - 62, SIZE_MAX - 4095}) {
    MEMKIT_CHECK(throwing_forms_that_threw(opaque(n), true) == 2);
  }
}

/// Deletes blocks with wrong sizes, then checks that later blocks do not overlap. \returns 0 if
/// they do not.
int wrong_size_deletes() {
  for (int round = 0; round < 1000; ++round) {
    const std::size_t n = 16 + static_cast<std::size_t>(round % 50) * 40;
    ::operator delete(escape(::operator new(n)), opaque(round % 2 == 0 ? n / 2 : n * 4 + 100));
  }
  std::vector<void*> blocks;
  for (unsigned i = 0; i < 2000; ++i) {
    const std::size_t n = 16 + (i % 50) * 40;
    blocks.push_back(escape(::operator new(n)));
    fill(blocks.back(), n, i);
  }
  bool ok = true;
  for (unsigned i = 0; i < blocks.size(); ++i) {
    const std::size_t n = 16 + (i % 50) * 40;
    ok &= check_fill(blocks[i], n, i);
    ::operator delete(blocks[i], n);
  }
  return ok ? 0 : 1;
}

const int registered = add_child_action("wrong-size-deletes", wrong_size_deletes);

MEMKIT_CONTRACT_CASE(SizedDeleteWithAWrongSizeCorruptsNothing, cxx_api) {
  // Undefined behaviour, but common (a base class without a virtual destructor): glibc ignores the
  // size, and docs/REPLACEMENT.md says memkit frees by the block's own header. In a child without
  // MEMKIT_OPTIONS, since debug:1 rightly reports it.
  const child_result r = run_self({"child", "wrong-size-deletes"}, {"MEMKIT_OPTIONS="}, 60);
  MEMKIT_CHECK(r.exited && r.code == 0);
}

/// \returns the counter `name` of a stats JSON object, or -1.
long long counter(const char* json, const char* name) {
  char key[64];
  std::snprintf(key, sizeof key, "\"%s\":", name);
  const char* at = std::strstr(json, key);
  return at == nullptr ? -1 : std::atoll(at + std::strlen(key));
}

/// memkit_stats_json's contract, in a child run with stats:1 (the counters count only then).
/// \returns 0 if it held.
int stats_json_contract() {
  char full[1024];
  const std::size_t length = stats_json(full, sizeof full);
  bool ok = length > 20 && length < sizeof full && std::strlen(full) == length;
  ok = ok && std::strncmp(full, "{\"memkit\":{", 11) == 0 && full[length - 1] == '}';
  // Nothing allocated by the call itself: the counter is the same when asked again.
  char again[1024];
  stats_json(again, sizeof again);
  ok = ok && counter(full, "allocations") > 0;
  ok = ok && counter(again, "allocations") == counter(full, "allocations");
  // Each operator new counts.
  void* blocks[100];
  for (auto& b : blocks) {
    b = escape(::operator new(200));
  }
  char after[1024];
  stats_json(after, sizeof after);
  for (void* b : blocks) {
    ::operator delete(b);
  }
  ok = ok && counter(after, "allocations") >= counter(again, "allocations") + 100;
  // Truncated to the buffer, NUL-terminated, the whole length returned.
  char small[12];
  std::memset(small, 'x', sizeof small);
  ok = ok && stats_json(small, 10) >= 10;
  ok = ok && small[9] == '\0' && std::strncmp(small, full, 9) == 0 && small[10] == 'x';
  std::memset(small, 'x', sizeof small);
  ok = ok && stats_json(small, 0) >= 10 && small[0] == 'x';
  std::printf("%s\n%s\n", full, after);
  return ok ? 0 : 1;
}

const int registered_stats = add_child_action("stats-json", stats_json_contract);

MEMKIT_CONTRACT_CASE(StatsJsonIsTheStatsLineTruncatesAndAllocatesNothing, memkit_api) {
  const child_result r = run_self({"child", "stats-json"}, {"MEMKIT_OPTIONS=stats:1"}, 60);
  std::fprintf(stderr, "memkit_stats_json: %s", r.out.c_str());
  MEMKIT_CHECK(r.exited && r.code == 0);
}

int handler_calls = 0;

/// Called when operator new fails; removes itself on its second call, so new then throws.
void give_up_on_second_call() {
  if (++handler_calls == 2) {
    std::set_new_handler(nullptr);
  }
}

// A block of the program's malloc deleted: memkit hands it to the program's free, whichever malloc
// that is (glibc's, memkit's preload, jemalloc's: replacement.contract.new_delete-under-*).
MEMKIT_CONTRACT_CASE(DeleteGivesTheProgramsMallocBlocksToItsFree, memkit_api) {
  for (const std::size_t size : {1, 100, 5000, 70000, 1 << 22}) {
    void* p = escape(std::malloc(opaque(size)));
    MEMKIT_CHECK(p != nullptr);
    fill(p, size, 5);
    ::operator delete(p);
  }
  char* s = escape(strdup("a block libc allocated"));
  ::operator delete(s);
}

MEMKIT_CONTRACT_CASE(NewHandlerIsCalledUntilItRemovesItself, cxx_api) {
  const std::size_t size = opaque(SIZE_MAX / 2 + 1);
  const auto al = std::align_val_t{128};
  for (int form = 0; form < 6; ++form) {
    handler_calls = 0;
    std::set_new_handler(give_up_on_second_call);
    bool threw = false;
    void* p = &handler_calls;
    try {
      p = form == 0   ? ::operator new(size)
          : form == 1 ? ::operator new[](size, al)
          : form == 2 ? ::operator new(size, al)
          : form == 3 ? ::operator new[](size)
          : form == 4 ? ::operator new(size, std::nothrow)
                      : ::operator new(size, al, std::nothrow);
    } catch (const std::bad_alloc&) {
      threw = true;
    }
    MEMKIT_CHECK(handler_calls == 2);
    MEMKIT_CHECK(form < 4 ? threw : !threw && p == nullptr);
    MEMKIT_CHECK(std::get_new_handler() == nullptr);
  }
}

} // namespace
