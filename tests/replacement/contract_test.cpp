// SPDX-License-Identifier: BSL-1.0
// tests/replacement/contract_test.cpp: the C allocation entry points' contracts, as glibc 2.36
// (Debian 12) keeps them. The same program runs on glibc and under libmemkit-preload.so, so every
// assertion here is one glibc passes: where memkit must behave as glibc does, the glibc run proves
// the test describes glibc.

#include "harness.hpp"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

extern "C" void* __libc_malloc(std::size_t);

namespace {

using namespace memkit::contract;

constexpr std::size_t max_size = SIZE_MAX;
constexpr std::size_t kib = 1024;
constexpr std::size_t mib = 1024 * kib;

bool all_zero(const void* p, std::size_t n) {
  const auto* b = static_cast<const unsigned char*>(p);
  for (std::size_t i = 0; i < n; ++i) {
    if (b[i] != 0) {
      return false;
    }
  }
  return true;
}

/// realloc and reallocarray called through pointers the compiler cannot see through: GCC's
/// -Wuse-after-free assumes the block is gone after any call, but a failed call keeps it.
void* (*volatile const realloc_kept)(void*, std::size_t) = std::realloc;
void* (*volatile const reallocarray_kept)(void*, std::size_t, std::size_t) = reallocarray;

std::size_t page_size() { return static_cast<std::size_t>(sysconf(_SC_PAGESIZE)); }

/// A block of `n` bytes that must be usable as one: served, writable through its usable size.
bool good_block(void* p, std::size_t n) {
  if (p == nullptr || !served(p) || malloc_usable_size(p) < n) {
    return false;
  }
  const std::size_t usable = malloc_usable_size(p);
  fill(p, usable, 3);
  return check_fill(p, usable, 3);
}

MEMKIT_CONTRACT_CASE(MallocZeroIsAFreeableBlockAndFreeNullIsANoOp, c_api) {
  void* a = escape(std::malloc(opaque(0)));
  void* b = escape(std::malloc(opaque(0)));
  MEMKIT_CHECK(a != nullptr && b != nullptr && a != b);
  MEMKIT_CHECK(served(a));
  std::free(a);
  std::free(b);
  std::free(escape<void>(nullptr));
}

MEMKIT_CONTRACT_CASE(ImpossibleMallocReturnsNullWithEnomem, c_api) {
  for (const std::size_t n : impossible) {
    errno = 0;
    MEMKIT_CHECK(escape(std::malloc(opaque(n))) == nullptr);
    MEMKIT_CHECK(errno == ENOMEM);
  }
}

MEMKIT_CONTRACT_CASE(CallocZeroesFreshAndReusedMemory, c_api) {
  const std::size_t sizes[] = {1,        8,         24,        100,     512,      4000,
                               64 * kib, 300 * kib, mib + 123, 2 * mib, 16 * mib, 40 * mib + 5};
  for (const std::size_t n : sizes) {
    // A freed block of the same size is the likeliest to come back: dirty it first.
    for (int round = 0; round < 4; ++round) {
      void* dirty = escape(std::malloc(n));
      std::memset(dirty, 0xA5, malloc_usable_size(dirty));
      std::free(dirty);
      auto* p = static_cast<unsigned char*>(escape(std::calloc(1, n)));
      MEMKIT_CHECK(p != nullptr && served(p) && all_zero(p, n));
      std::free(p);
    }
    auto* q = static_cast<unsigned char*>(escape(std::calloc(n, 1)));
    MEMKIT_CHECK(q != nullptr && all_zero(q, n));
    std::free(q);
  }
}

MEMKIT_CONTRACT_CASE(CallocOfPagesMovedFromFreedBlocksIsZero, c_api) {
  // Freed, the dirty blocks' regions are kept; the larger request is made of their pages.
  void* dirty[3];
  for (void*& d : dirty) {
    d = escape(std::malloc(9 * mib));
    std::memset(d, 0x5A, 9 * mib);
  }
  for (void* d : dirty) {
    std::free(d);
  }
  auto* p = static_cast<unsigned char*>(escape(std::calloc(24 * mib + 77, 1)));
  MEMKIT_CHECK(p != nullptr && all_zero(p, 24 * mib + 77));
  std::free(p);
}

MEMKIT_CONTRACT_CASE(CallocOverflowReturnsNullWithEnomem, c_api) {
  const std::size_t pairs[][2] = {{max_size / 2, 4},
                                  {4, max_size / 2},
                                  {1ull << 32, 1ull << 32},
                                  {max_size, max_size},
                                  {max_size / 16 + 1, 16}};
  for (const auto& pair : pairs) {
    errno = 0;
    MEMKIT_CHECK(escape(std::calloc(opaque(pair[0]), opaque(pair[1]))) == nullptr);
    MEMKIT_CHECK(errno == ENOMEM);
  }
  for (const std::size_t n : impossible) {
    errno = 0;
    MEMKIT_CHECK(escape(std::calloc(1, opaque(n))) == nullptr);
    MEMKIT_CHECK(errno == ENOMEM);
  }
}

MEMKIT_CONTRACT_CASE(ReallocOfNullIsMalloc, c_api) {
  for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{200}, 1 * mib}) {
    void* p = escape(std::realloc(nullptr, n));
    MEMKIT_CHECK(good_block(p, n));
    std::free(p);
  }
}

MEMKIT_CONTRACT_CASE(ReallocToZeroFreesAndReturnsNull, c_api) {
  // glibc frees the block and returns NULL (its manual, "Changing the Size of a Block"; C23 made
  // the case undefined), leaving errno alone.
  for (const std::size_t n : {std::size_t{16}, 100 * kib, 4 * mib}) {
    void* p = escape(std::malloc(n));
    errno = 0;
    MEMKIT_CHECK(escape(std::realloc(p, opaque(0))) == nullptr);
    MEMKIT_CHECK(errno == 0);
  }
}

MEMKIT_CONTRACT_CASE(ReallocKeepsEveryUsableByteWhenGrowingAndShrinking, c_api) {
  const std::size_t starts[] = {1, 13, 64, 1000, 8 * kib, 200 * kib, 3 * mib};
  unsigned seed = 1;
  for (const std::size_t start : starts) {
    void* p = escape(std::malloc(start));
    std::size_t kept = malloc_usable_size(p);
    fill(p, kept, seed);
    // Grow in steps past the small, medium and large boundaries up to 16 MiB ...
    for (std::size_t n = start * 3 + 5; n <= 16 * mib; n = n * 3 + 5) {
      p = escape(std::realloc(p, n));
      MEMKIT_CHECK(p != nullptr && served(p) && malloc_usable_size(p) >= n);
      MEMKIT_CHECK(check_fill(p, kept, seed));
      kept = malloc_usable_size(p);
      fill(p, kept, ++seed);
    }
    // ... and shrink back: the first n bytes survive.
    for (std::size_t n = kept / 2; n >= start; n /= 3) {
      p = escape(std::realloc(p, n));
      MEMKIT_CHECK(p != nullptr && served(p) && malloc_usable_size(p) >= n);
      MEMKIT_CHECK(check_fill(p, n, seed));
      fill(p, malloc_usable_size(p), ++seed);
    }
    std::free(p);
  }
}

MEMKIT_CONTRACT_CASE(ReallocGrowingAPageAtATimeKeepsEveryByte, c_api) {
  // A buffer grown a little at a time, as a string builder does: large blocks may grow in place
  // within their mapped region, and every usable byte must survive each step.
  void* aligned = nullptr;
  MEMKIT_CHECK(posix_memalign(&aligned, 64 * kib, 40 * kib) == 0);
  for (void* p : {escape(std::malloc(1000)), aligned}) {
    std::size_t kept = malloc_usable_size(p);
    unsigned seed = 20;
    fill(p, kept, seed);
    bool ok = true;
    for (std::size_t n = kept + 4 * kib; n <= 1 * mib; n += 4 * kib + 17) {
      p = escape(std::realloc(p, n));
      ok &= p != nullptr && served(p) && malloc_usable_size(p) >= n && check_fill(p, kept, seed);
      if (p == nullptr) {
        break;
      }
      kept = malloc_usable_size(p);
      fill(p, kept, ++seed);
    }
    MEMKIT_CHECK(ok);
    std::free(p);
  }
}

MEMKIT_CONTRACT_CASE(FailedReallocLeavesTheBlockIntact, c_api) {
  for (const std::size_t n : {std::size_t{100}, 1 * mib}) {
    void* p = escape(std::malloc(n));
    fill(p, n, 9);
    for (const std::size_t huge : impossible) {
      errno = 0;
      MEMKIT_CHECK(escape(realloc_kept(p, huge)) == nullptr);
      MEMKIT_CHECK(errno == ENOMEM);
      MEMKIT_CHECK(check_fill(p, n, 9));
    }
    std::free(p);
  }
}

MEMKIT_CONTRACT_CASE(ReallocarrayChecksTheProductAndPreservesContents, c_api) {
  void* p = escape(std::malloc(100));
  fill(p, 100, 4);
  errno = 0;
  MEMKIT_CHECK(escape(reallocarray_kept(p, max_size / 2, 4)) == nullptr);
  MEMKIT_CHECK(errno == ENOMEM);
  errno = 0;
  MEMKIT_CHECK(escape(reallocarray_kept(p, 1ull << 32, 1ull << 32)) == nullptr);
  MEMKIT_CHECK(errno == ENOMEM);
  MEMKIT_CHECK(check_fill(p, 100, 4));
  p = escape(reallocarray(p, 30, 40));
  MEMKIT_CHECK(p != nullptr && served(p) && malloc_usable_size(p) >= 1200);
  MEMKIT_CHECK(check_fill(p, 100, 4));
  std::free(p);
  errno = 0;
  void* q = escape(reallocarray(nullptr, opaque(max_size / 8), 16));
  MEMKIT_CHECK(q == nullptr && errno == ENOMEM);
}

MEMKIT_CONTRACT_CASE(PosixMemalignRejectsBadAlignmentsAndAlignsGoodOnes, c_api) {
  // Not a power of two, or not a multiple of sizeof(void*): EINVAL, *memptr untouched.
  const std::size_t bad[] = {0, 1, 2, 4, 3, 12, 24, 48, 100, 4097, max_size, max_size / 2 + 2};
  for (const std::size_t alignment : bad) {
    void* p = &errno;
    MEMKIT_CHECK(posix_memalign(&p, opaque(alignment), 16) == EINVAL);
    MEMKIT_CHECK(p == &errno);
  }
  for (std::size_t alignment = sizeof(void*); alignment <= 1 * mib; alignment *= 2) {
    for (const std::size_t n : {std::size_t{0}, std::size_t{1}, alignment, 3 * alignment + 1}) {
      void* p = nullptr;
      MEMKIT_CHECK(posix_memalign(&p, opaque(alignment), n) == 0);
      MEMKIT_CHECK(is_aligned(p, alignment) && good_block(p, n));
      std::free(p);
    }
  }
  // Alignments larger than any chunk or reservation the allocator maps.
  for (const std::size_t alignment : {4 * mib, 16 * mib, 64 * mib}) {
    void* p = nullptr;
    MEMKIT_CHECK(posix_memalign(&p, opaque(alignment), 100) == 0);
    MEMKIT_CHECK(is_aligned(p, alignment) && good_block(p, 100));
    std::free(p);
  }
  for (const std::size_t n : impossible) {
    for (const std::size_t alignment : {std::size_t{64}, std::size_t{1} << 20}) {
      void* p = &errno;
      MEMKIT_CHECK(posix_memalign(&p, alignment, opaque(n)) == ENOMEM);
      MEMKIT_CHECK(p == &errno);
    }
  }
}

MEMKIT_CONTRACT_CASE(AlignedAllocAndMemalignAsGlibc236Has, c_api) {
  // glibc 2.36 serves both through one function: an alignment that is not a power of two is
  // rounded up to the next one (glibc 2.38 made aligned_alloc reject it with EINVAL; Debian 12
  // has 2.36), a size need not be a multiple of it, and only an alignment above SIZE_MAX/2 + 1
  // is EINVAL. Each may be called with either.
  void* (*const entries[])(std::size_t, std::size_t) = {aligned_alloc, memalign};
  for (auto* allocate : entries) {
    for (std::size_t alignment = 1; alignment <= 1 * mib; alignment *= 2) {
      for (const std::size_t n : {std::size_t{1}, alignment + 1, 5 * alignment}) {
        void* p = escape(allocate(opaque(alignment), n));
        MEMKIT_CHECK(is_aligned(p, alignment) && good_block(p, n));
        std::free(p);
      }
    }
    const std::size_t rounded[][2] = {{0, 1}, {3, 4}, {24, 32}, {100, 128}, {5000, 8192}};
    for (const auto& r : rounded) {
      void* p = escape(allocate(opaque(r[0]), 48));
      MEMKIT_CHECK(is_aligned(p, r[1]) && good_block(p, 48));
      std::free(p);
    }
    errno = 0;
    MEMKIT_CHECK(escape(allocate(opaque(max_size / 2 + 2), 16)) == nullptr);
    MEMKIT_CHECK(errno == EINVAL);
    for (const std::size_t n : impossible) {
      for (const std::size_t alignment : {std::size_t{64}, std::size_t{1} << 20}) {
        errno = 0;
        MEMKIT_CHECK(escape(allocate(alignment, opaque(n))) == nullptr);
        MEMKIT_CHECK(errno == ENOMEM);
      }
    }
  }
}

MEMKIT_CONTRACT_CASE(VallocAndPvallocArePageAligned, c_api) {
  const std::size_t page = page_size();
  for (const std::size_t n : {std::size_t{1}, std::size_t{100}, page, page + 1, 3 * mib + 7}) {
    void* v = escape(valloc(n));
    MEMKIT_CHECK(is_aligned(v, page) && good_block(v, n));
    std::free(v);
    // pvalloc rounds the size up to whole pages.
    const std::size_t whole = (n + page - 1) / page * page;
    void* p = escape(pvalloc(n));
    MEMKIT_CHECK(is_aligned(p, page) && good_block(p, whole));
    std::free(p);
  }
  for (const std::size_t n : impossible) {
    errno = 0;
    MEMKIT_CHECK(escape(valloc(opaque(n))) == nullptr && errno == ENOMEM);
    errno = 0;
    MEMKIT_CHECK(escape(pvalloc(opaque(n))) == nullptr && errno == ENOMEM);
  }
}

MEMKIT_CONTRACT_CASE(MallocUsableSizeIsAtLeastTheRequestWritableAndStable, c_api) {
  MEMKIT_CHECK(malloc_usable_size(nullptr) == 0);
  for (std::size_t n = 0; n <= 20 * mib; n = n * 2 + 1) {
    void* p = escape(std::malloc(n));
    const std::size_t usable = malloc_usable_size(p);
    MEMKIT_CHECK(usable >= n);
    fill(p, usable, 5);
    MEMKIT_CHECK(malloc_usable_size(p) == usable);
    MEMKIT_CHECK(check_fill(p, usable, 5));
    std::free(p);
  }
}

MEMKIT_CONTRACT_CASE(EverySizeUpTo1MiBAndSixteenMiBBlocks, c_api) {
  std::vector<std::size_t> sizes;
  for (std::size_t n = 1; n <= 4 * kib; ++n) {
    sizes.push_back(n);
  }
  for (std::size_t n = 4 * kib; n <= 1 * mib; n += n / 8 + 1) {
    sizes.push_back(n);
  }
  sizes.push_back(1 * mib);
  // Sixty-four blocks live at a time, so neighbours would overwrite each other's patterns.
  constexpr std::size_t live = 64;
  std::vector<std::pair<void*, std::size_t>> blocks;
  unsigned seed = 0;
  bool ok = true;
  for (const std::size_t n : sizes) {
    void* p = escape(std::malloc(n));
    ok &= p != nullptr && served(p);
    if (p == nullptr) {
      break;
    }
    fill(p, n, seed + static_cast<unsigned>(blocks.size()));
    blocks.emplace_back(p, n);
    if (blocks.size() == live) {
      for (std::size_t i = 0; i < blocks.size(); ++i) {
        ok &= check_fill(blocks[i].first, blocks[i].second, seed + static_cast<unsigned>(i));
        std::free(blocks[i].first);
      }
      blocks.clear();
      ++seed;
    }
  }
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    ok &= check_fill(blocks[i].first, blocks[i].second, seed + static_cast<unsigned>(i));
    std::free(blocks[i].first);
  }
  MEMKIT_CHECK(ok);
  void* large[4];
  for (unsigned i = 0; i < 4; ++i) {
    large[i] = escape(std::malloc(16 * mib));
    MEMKIT_CHECK(large[i] != nullptr && served(large[i]));
    fill(large[i], 16 * mib, i);
  }
  for (unsigned i = 0; i < 4; ++i) {
    MEMKIT_CHECK(check_fill(large[i], 16 * mib, i));
    std::free(large[i]);
  }
}

MEMKIT_CONTRACT_CASE(GlibcBlocksFromLibcMallocCanBeFreedAndReallocated, c_api) {
  // A library may hold blocks from glibc's own entry (allocated before a preload took over, or on
  // purpose): free, realloc and malloc_usable_size must hand them to glibc, not misread them.
  void* a = escape(__libc_malloc(100));
  fill(a, 100, 6);
  MEMKIT_CHECK(malloc_usable_size(a) >= 100);
  std::free(a);
  for (const std::size_t n : {std::size_t{40}, std::size_t{5000}, 2 * mib}) {
    void* b = escape(__libc_malloc(100));
    fill(b, 100, 8);
    b = escape(std::realloc(b, n));
    MEMKIT_CHECK(b != nullptr && check_fill(b, n < 100 ? n : 100, 8));
    std::free(b);
  }
}

MEMKIT_CONTRACT_CASE(BlocksLibcAllocatesForTheCallerAreServedAndFreeable, c_api) {
  // glibc's own calls to malloc and realloc go through the interposable symbols, so what strdup,
  // asprintf, getline, open_memstream and realpath hand out is the replacement's, and free takes
  // it.
  char* s = escape(strdup("a string copied by libc"));
  MEMKIT_CHECK(s != nullptr && served(s) && std::strcmp(s, "a string copied by libc") == 0);
  std::free(s);
  char* formatted = nullptr;
  MEMKIT_CHECK(asprintf(&formatted, "%s-%d", "number", 12345) == 12);
  MEMKIT_CHECK(formatted != nullptr && served(formatted) &&
               std::strcmp(formatted, "number-12345") == 0);
  std::free(formatted);
  char* stream_text = nullptr;
  std::size_t stream_size = 0;
  std::FILE* stream = open_memstream(&stream_text, &stream_size);
  for (int i = 0; i < 20000; ++i) {
    std::fprintf(stream, "%d,", i);
  }
  std::fclose(stream);
  MEMKIT_CHECK(stream_text != nullptr && served(stream_text) && stream_size > 100000);
  // getline grows its buffer with realloc: from the stream's text, one long line.
  std::FILE* in = fmemopen(stream_text, stream_size, "r");
  char* line = nullptr;
  std::size_t capacity = 0;
  MEMKIT_CHECK(getline(&line, &capacity, in) == static_cast<ssize_t>(stream_size));
  MEMKIT_CHECK(line != nullptr && served(line) && std::memcmp(line, stream_text, stream_size) == 0);
  std::fclose(in);
  std::free(line);
  std::free(stream_text);
  char* resolved = escape(realpath("/proc/self/exe", nullptr));
  MEMKIT_CHECK(resolved != nullptr && served(resolved));
  std::free(resolved);
}

/// \returns the resident set of the process in bytes (/proc/self/statm), 0 if unreadable.
std::size_t resident_bytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  unsigned long pages = 0;
  unsigned long resident = 0;
  const bool read = f != nullptr && std::fscanf(f, "%lu %lu", &pages, &resident) == 2;
  if (f != nullptr) {
    std::fclose(f);
  }
  return read ? resident * page_size() : 0;
}

MEMKIT_CONTRACT_CASE(MallocTrimGivesFreedSmallBlocksBackAtOnce, c_api) {
  // 128 MiB of small blocks, touched, freed in an order unlike the allocation's; then
  // malloc_trim(0) must return their pages (glibc: free pages inside its heaps too, since 2.8).
  // Trimmed first: the regions the cases before freed may be kept, resident, and given back
  // during the loop, which would hide its growth.
  malloc_trim(0);
  const std::size_t before = resident_bytes();
  std::vector<void*> blocks;
  std::size_t total = 0;
  for (unsigned i = 0; total < 128 * mib; ++i) {
    const std::size_t n = 16 + (i * 2654435761u) % 1009;
    blocks.push_back(escape(std::malloc(n)));
    std::memset(blocks.back(), 0x5a, n);
    total += n;
  }
  const std::size_t peak = resident_bytes();
  for (std::size_t stride = 0; stride < 7; ++stride) {
    for (std::size_t i = stride; i < blocks.size(); i += 7) {
      std::free(blocks[i]);
    }
  }
  blocks = std::vector<void*>();
  malloc_trim(0);
  const std::size_t after = resident_bytes();
  std::printf("rss: %zu MiB before, %zu MiB at the peak, %zu MiB after malloc_trim\n", before / mib,
              peak / mib, after / mib);
  MEMKIT_CHECK(peak >= before + 100 * mib);
  MEMKIT_CHECK(after <= before + 32 * mib);
}

/// Under RLIMIT_DATA 384 MiB above the start: 256 MiB of 256-byte blocks touched and freed, then
/// 256 MiB of 1 MiB blocks must all be had; after they are freed and malloc_trim(0), the data
/// size must be back within 64 MiB of the start (memkit keeps each chunk's header page: 16 MiB
/// for these 256 MiB). Prints the sizes; exits 0, or 4 and 5 for each
/// failure.
int freed_memory_leaves_the_data_limit() {
  const std::size_t start = data_bytes();
  const rlimit data{start + 384 * mib, RLIM_INFINITY};
  if (setrlimit(RLIMIT_DATA, &data) != 0) {
    return 3;
  }
  std::vector<void*> blocks;
  blocks.reserve(256 * mib / 256);
  for (std::size_t i = 0; i < 256 * mib / 256; ++i) {
    blocks.push_back(escape(std::malloc(opaque(256))));
    if (blocks.back() == nullptr) {
      return 3;
    }
    std::memset(blocks.back(), 1, 256);
  }
  const std::size_t peak = data_bytes();
  for (void* p : blocks) {
    std::free(p);
  }
  std::size_t had = 0;
  for (std::size_t i = 0; i < 256; ++i) {
    blocks[i] = escape(std::malloc(opaque(mib)));
    if (blocks[i] != nullptr) {
      std::memset(blocks[i], 2, mib);
      had += mib;
    }
  }
  for (std::size_t i = 0; i < 256; ++i) {
    std::free(blocks[i]);
  }
  malloc_trim(0);
  const std::size_t after = data_bytes();
  std::printf("VmData %zu MiB at the start, %zu MiB at the small peak; %zu of 256 MiB of 1 MiB "
              "blocks had after it was freed; %zu MiB after malloc_trim\n",
              start / mib, peak / mib, had / mib, after / mib);
  return had != 256 * mib ? 4 : after > start + 64 * mib ? 5 : 0;
}

/// Frees a dirty 8 MiB block and callocs the same size, which reuses its region; prints the minor
/// page faults that writing a byte of each of its pages then took, and the anonymous resident KiB
/// a calloc of 64 MiB added, whose pages are fresh. Exits 0, 3 if an allocation fails, 4 if the
/// reused block is not zero.
int calloc_reuse_faults() {
  constexpr std::size_t n = 8 * mib;
  void* const dirty = escape(std::malloc(n));
  if (dirty == nullptr) {
    return 3;
  }
  std::memset(dirty, 0xA5, n);
  std::free(dirty);
  auto* const p = static_cast<unsigned char*>(escape(std::calloc(1, n)));
  if (p == nullptr) {
    return 3;
  }
  if (!all_zero(p, n)) {
    return 4;
  }
  rusage before{};
  getrusage(RUSAGE_SELF, &before);
  for (std::size_t i = 0; i < n; i += 4 * kib) {
    p[i] = 1;
  }
  rusage after{};
  getrusage(RUSAGE_SELF, &after);
  std::free(p);
  const long resident = status_kib("RssAnon");
  void* const fresh = escape(std::calloc(1, 64 * mib));
  if (fresh == nullptr) {
    return 3;
  }
  const long with_fresh = status_kib("RssAnon");
  std::free(fresh);
  std::printf("%ld %ld\n", after.ru_minflt - before.ru_minflt, with_fresh - resident);
  return 0;
}

const int registered =
    add_child_action("freed-memory-leaves-the-data-limit", freed_memory_leaves_the_data_limit) +
    add_child_action("calloc-reuse-faults", calloc_reuse_faults);

// calloc writes the pages of a large block that are in memory rather than giving them back, which
// would make the program's first touch of each a page fault (2,048 here); the pages of a fresh
// region, never touched, stay so. memkit's own choice: glibc's calloc takes such a block from a new
// mapping, and so does memkit where the region heap could not be reserved (an address-space
// limit, as in replacement.contract.memkit-no-arena), which unmaps a freed region: there the block
// is fresh memory, which faults in whoever zeroes it.
MEMKIT_CONTRACT_CASE(CallocWritesAReusedBlocksPagesAndLeavesFreshOnesUntouched, preload_options) {
  rlimit address_space{};
  MEMKIT_CHECK(getrlimit(RLIMIT_AS, &address_space) == 0);
  const bool regions_kept = address_space.rlim_cur == RLIM_INFINITY;
  const child_result r = run_self({"child", "calloc-reuse-faults"}, {"MEMKIT_OPTIONS="}, 60);
  MEMKIT_CHECK(r.exited && r.code == 0);
  long faults = -1;
  long fresh_kib = -1;
  MEMKIT_CHECK(std::sscanf(r.out.c_str(), "%ld %ld", &faults, &fresh_kib) == 2);
  std::fprintf(stderr,
               "calloc: %ld page faults writing a reused 8 MiB block, %ld KiB resident "
               "for a fresh 64 MiB one\n",
               faults, fresh_kib);
  MEMKIT_CHECK(faults >= 0 && (faults < 64 || !regions_kept));
  // Below 0 if calloc gave back pages it took from a kept region.
  MEMKIT_CHECK(fresh_kib < 4 * 1024);
}

MEMKIT_CONTRACT_CASE(FreedMemoryNoLongerCountsAgainstTheDataLimit, c_api) {
  // Without debug:1, whose guards and quarantine would not fit the limit.
  const child_result r =
      run_self({"child", "freed-memory-leaves-the-data-limit"}, {"MEMKIT_OPTIONS="}, 60);
  std::printf("%s", r.out.c_str());
  MEMKIT_CHECK(r.exited && r.code == 0);
}

} // namespace
