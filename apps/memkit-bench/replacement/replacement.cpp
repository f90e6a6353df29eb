// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/replacement/replacement.cpp: re-executing memkit-bench under a preloaded malloc
// and proving, from inside the child, that the preloaded library really serves allocation. A
// replacement that did not intercept "will perform like glibc malloc", as the json-tree service
// workload's source warns (docs/background.md#json-tree): here such a variant is an error, never a
// row.

#include "replacement.hpp"

#include <dlfcn.h>

#include <cstdint>
#include <memory>

#include <memkit/config.hpp>

namespace memkit::bench {
namespace {

/// The library paths found by CMake (apps/memkit-bench/CMakeLists.txt), "" when not found.
#ifndef MEMKIT_BENCH_MIMALLOC
#define MEMKIT_BENCH_MIMALLOC ""
#endif
#ifndef MEMKIT_BENCH_JEMALLOC
#define MEMKIT_BENCH_JEMALLOC ""
#endif
#ifndef MEMKIT_BENCH_TCMALLOC
#define MEMKIT_BENCH_TCMALLOC ""
#endif
#ifndef MEMKIT_BENCH_TBBMALLOC
#define MEMKIT_BENCH_TBBMALLOC ""
#endif
/// memkit's own libmemkit-preload.so (src/), built with memkit-bench unless sanitizers are on.
#ifndef MEMKIT_BENCH_MEMKIT
#define MEMKIT_BENCH_MEMKIT ""
#endif

/// \returns the file of the shared object that defines `symbol` as the program sees it.
std::string defining_object(const char* symbol) {
  void* address = dlsym(RTLD_DEFAULT, symbol);
  Dl_info info{};
  if (address == nullptr || dladdr(address, &info) == 0 || info.dli_fname == nullptr) {
    return "";
  }
  return info.dli_fname;
}

template <class F>
F* lookup(const char* symbol) {
  return reinterpret_cast<F*>(dlsym(RTLD_DEFAULT, symbol));
}

/// \returns "" if the library's own API claims a block from operator new, else why not.
std::string check_ownership(const std::string& name) {
  auto probe = std::make_unique<char[]>(1000);
  const void* p = probe.get();
  if (name == "memkit") {
    // include/memkit/replacement.h: 1 if the address lies in a block the replacement handed out.
    auto* owns = lookup<int(const void*)>("memkit_owns");
    if (owns == nullptr) {
      return "memkit_owns not found";
    }
    return owns(p) == 1 ? "" : "memkit_owns says operator new's block is not memkit's";
  }
  if (name == "mimalloc") {
    auto* in_heap = lookup<bool(const void*)>("mi_is_in_heap_region");
    if (in_heap == nullptr) {
      return "mi_is_in_heap_region not found";
    }
    return in_heap(p) ? "" : "mi_is_in_heap_region says operator new's block is not mimalloc's";
  }
  if (name == "tcmalloc") {
    auto* ownership = lookup<int(const void*)>("MallocExtension_GetOwnership");
    if (ownership == nullptr) {
      return "MallocExtension_GetOwnership not found";
    }
    // gperftools/malloc_extension_c.h: MallocExtension_kOwned == 1.
    return ownership(p) == 1 ? "" : "MallocExtension_GetOwnership says the block is not tcmalloc's";
  }
  if (name == "tbbmalloc") {
    // The proxy forwards to libtbbmalloc, whose safer msize returns 0 for a block it does not
    // own when given no fallback (oneTBB's src/tbbmalloc/frontend.cpp).
    auto* msize = lookup<std::size_t(void*, std::size_t (*)(void*))>("__TBB_malloc_safer_msize");
    if (msize == nullptr) {
      return "__TBB_malloc_safer_msize not found";
    }
    return msize(probe.get(), nullptr) != 0 ? ""
                                            : "tbbmalloc's msize says the block is not its own";
  }
  if (name == "jemalloc") {
    // jemalloc counts the bytes each thread allocated ("thread.allocated"): a block from operator
    // new must move the counter if jemalloc serves it.
    auto* mallctl = lookup<int(const char*, void*, std::size_t*, void*, std::size_t)>("mallctl");
    if (mallctl == nullptr) {
      return "mallctl not found";
    }
    std::uint64_t before = 0;
    std::uint64_t after = 0;
    std::size_t size = sizeof before;
    if (mallctl("thread.allocated", &before, &size, nullptr, 0) != 0) {
      return "mallctl(\"thread.allocated\") failed";
    }
    auto block = std::make_unique<char[]>(4096);
    asm volatile("" : : "r"(block.get()) : "memory"); // the allocation must happen
    size = sizeof after;
    mallctl("thread.allocated", &after, &size, nullptr, 0);
    return after >= before + 4096 ? "" : "jemalloc's thread.allocated did not count operator new";
  }
  return "unknown replacement " + name;
}

} // namespace

std::vector<replacement> known_replacements() {
  return {{"memkit", MEMKIT_BENCH_MEMKIT},
          {"mimalloc", MEMKIT_BENCH_MIMALLOC},
          {"jemalloc", MEMKIT_BENCH_JEMALLOC},
          {"tcmalloc", MEMKIT_BENCH_TCMALLOC},
          {"tbbmalloc", MEMKIT_BENCH_TBBMALLOC}};
}

std::string why_missing(const replacement& r) {
  return r.name == "memkit" ? "not built with this memkit-bench: src/ builds libmemkit-preload.so "
                              "only without sanitizers"
                            : "not installed (scripts/install-deps.sh bench installs it)";
}

bool is_replacement(const std::string& name) {
  for (const auto& r : known_replacements()) {
    if (r.name == name) {
      return true;
    }
  }
  return false;
}

std::string replacements_unavailable_reason() {
#if defined(MEMKIT_ASAN)
  return "built with AddressSanitizer, whose runtime replaces malloc itself";
#elif defined(MEMKIT_TSAN)
  return "built with ThreadSanitizer, whose runtime replaces malloc itself";
#else
  return "";
#endif
}

std::string check_interception(const std::string& name) {
  const std::string malloc_from = defining_object("malloc");
  // The file name only: a directory may contain a replacement's name (memkit's build tree does).
  const std::string file = malloc_from.substr(malloc_from.rfind('/') + 1);
  if (file.find(name) == std::string::npos) {
    return "malloc resolves to " + (malloc_from.empty() ? "an unknown object" : malloc_from) +
           ", not " + name;
  }
  return check_ownership(name);
}

} // namespace memkit::bench
