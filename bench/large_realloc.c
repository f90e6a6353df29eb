// SPDX-License-Identifier: BSL-1.0
// bench/large_realloc.c: one buffer grown by realloc a mebibyte at a time from 1 MiB to 301 MiB,
// each new mebibyte written, as a program reading a large input into a growing buffer does. Prints
// the milliseconds it took, how many times realloc moved the buffer, and a checksum of its bytes.
// bench/large_realloc.sh runs it under each allocator.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int main(void) {
  const size_t step = (size_t)1 << 20;
  struct timespec start;
  struct timespec stop;
  clock_gettime(CLOCK_MONOTONIC, &start);
  size_t n = step;
  unsigned char* p = malloc(n);
  if (p == NULL) {
    return 1;
  }
  memset(p, 1, n);
  int moves = 0;
  for (int i = 0; i < 300; ++i) {
    unsigned char* q = realloc(p, n + step);
    if (q == NULL) {
      free(p);
      return 1;
    }
    moves += q != p;
    memset(q + n, (unsigned char)(i + 2), step);
    p = q;
    n += step;
  }
  clock_gettime(CLOCK_MONOTONIC, &stop);
  uint64_t sum = 0;
  for (size_t k = 0; k < n; k += 4096) {
    sum = sum * 31 + p[k];
  }
  free(p);
  printf("%.2f %d %llu\n",
         (double)(stop.tv_sec - start.tv_sec) * 1e3 + (double)(stop.tv_nsec - start.tv_nsec) / 1e6,
         moves, (unsigned long long)sum);
  return 0;
}
