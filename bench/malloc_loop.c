/* SPDX-License-Identifier: BSL-1.0 */
// bench/malloc_loop.c: 1 M malloc and 1 M free of 16-512 bytes on one thread (256 live blocks, a
// random one replaced each time, as memkit-bench's mt-local), for counting the instructions of a
// malloc and of a free with callgrind under whatever allocator is preloaded
// (bench/instructions.sh). A plain C program so nothing but the allocator is counted.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

enum { live = 256, calls = 1000000 };

int main(void) {
  static void* blocks[live];
  static uint16_t sizes[calls];
  static uint8_t slots[calls];
  uint64_t x = 88172645463325252u; // xorshift64: the same sizes and slots in every run
  for (int i = 0; i < calls; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    sizes[i] = (uint16_t)(16 + x % 497);
    slots[i] = (uint8_t)(x >> 32);
  }
  uintptr_t sink = 0;
  for (int i = 0; i < calls; ++i) {
    void** slot = &blocks[slots[i] % live];
    free(*slot);
    *slot = malloc(sizes[i]);
    *(volatile char*)*slot = 1;
    sink += (uintptr_t)*slot;
  }
  for (int i = 0; i < live; ++i) {
    free(blocks[i]);
  }
  printf("%u\n", (unsigned)(sink & 1));
  return 0;
}
