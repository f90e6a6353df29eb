// SPDX-License-Identifier: BSL-1.0
// bench/start_rss.c: what a program that allocates once holds resident: one malloc and free, then
// the Rss and Anonymous lines of /proc/self/smaps_rollup, in KiB, on one line (bench/start_rss.sh
// runs it under each allocator).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void) {
  void* volatile p = malloc(100);
  free(p);
  FILE* f = fopen("/proc/self/smaps_rollup", "r");
  if (f == NULL) {
    perror("start_rss: /proc/self/smaps_rollup");
    return 1;
  }
  char line[256];
  long rss = -1;
  long anonymous = -1;
  while (fgets(line, sizeof line, f) != NULL) {
    if (strncmp(line, "Rss:", 4) == 0) {
      rss = atol(line + 4);
    } else if (strncmp(line, "Anonymous:", 10) == 0) {
      anonymous = atol(line + 10);
    }
  }
  fclose(f);
  printf("%ld %ld\n", rss, anonymous);
  return rss < 0 || anonymous < 0;
}
