// SPDX-License-Identifier: BSL-1.0
// Run as `preload memkit` under LD_PRELOAD=$(pkg-config --variable=preload memkit-preload), and as
// `preload glibc` without it: malloc(1) must come from memkit in the first run and only then.
// memkit_owns is looked up, not linked, so the program runs without the library too.
#include <memkit/replacement.h>

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fputs("usage: preload memkit|glibc\n", stderr);
    return 2;
  }
  const bool want_memkit = std::strcmp(argv[1], "memkit") == 0;
  auto* owns = reinterpret_cast<decltype(&memkit_owns)>(dlsym(RTLD_DEFAULT, "memkit_owns"));
  void* p = std::malloc(1);
  const bool memkit = owns != nullptr && owns(p) == 1;
  std::free(p);
  std::printf("memkit-preload consumer: malloc(1) is %s's\n", memkit ? "memkit" : "not memkit");
  return memkit == want_memkit ? 0 : 1;
}
