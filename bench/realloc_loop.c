/* SPDX-License-Identifier: BSL-1.0 */
// bench/realloc_loop.c: memkit-bench's realloc-growth as a plain C program, for counting
// instructions and mispredicted branches with cachegrind and for timing under whatever allocator
// is preloaded (bench/realloc_branches.sh): 32 buffers growing at once, a random one by 8-64 bytes
// per append through realloc to exactly its new length, to final lengths of 64 B-64 KiB
// (log-uniform), then freed and started again; so appends go at random to buffers below and above
// the largest size class. Usage: realloc_loop [APPENDS] (2000000 by default); prints the time of
// the appends in milliseconds and a checksum of every buffer's bytes.
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { buffers = 32 };

static uint64_t state = 0x4ea110c;

static uint64_t next(void) { // xorshift64: the same appends in every run
  state ^= state << 13;
  state ^= state >> 7;
  state ^= state << 17;
  return state;
}

static size_t final_length(void) { return (size_t)exp2(6 + 10 * (double)(next() >> 11) * 0x1p-53); }

int main(int argc, char** argv) {
  const long appends = argc > 1 ? atol(argv[1]) : 2000000;
  struct {
    unsigned char* p;
    size_t length, final;
  } live[buffers] = {{0}};
  for (int b = 0; b < buffers; ++b) {
    live[b].final = final_length();
  }
  uint64_t sum = 0;
  struct timespec start, stop;
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (long i = 0; i < appends; ++i) {
    const uint64_t r = next();
    const size_t b = r % buffers;
    const size_t words = 1 + (r >> 32) % 8;
    const size_t grown = live[b].length + words * sizeof(uint64_t);
    unsigned char* p = realloc(live[b].p, grown);
    if (p == NULL) {
      return 1;
    }
    for (size_t k = 0; k < words; ++k) {
      const uint64_t v = (uint64_t)i * 8 + k;
      memcpy(p + live[b].length + k * sizeof v, &v, sizeof v);
    }
    live[b].p = p;
    live[b].length = grown;
    if (grown >= live[b].final) {
      for (size_t k = 0; k < grown; k += sizeof(uint64_t)) {
        uint64_t v;
        memcpy(&v, p + k, sizeof v);
        sum = sum * 31 + v;
      }
      free(p);
      live[b].p = NULL;
      live[b].length = 0;
      live[b].final = final_length();
    }
  }
  clock_gettime(CLOCK_MONOTONIC, &stop);
  for (int b = 0; b < buffers; ++b) {
    free(live[b].p);
  }
  printf("%.3f ms, checksum %llx\n",
         (double)(stop.tv_sec - start.tv_sec) * 1e3 + (double)(stop.tv_nsec - start.tv_nsec) / 1e6,
         (unsigned long long)sum);
  return 0;
}
