/* SPDX-License-Identifier: BSL-1.0 */
/* memkit/replacement.h: what memkit's global replacement (memkit::new_delete, the static library
 * that replaces operator new/delete, and libmemkit-preload.so, the LD_PRELOAD malloc) exports
 * beside the standard entry points. docs/REPLACEMENT.md. Plain C, so any program may declare it. */
#ifndef MEMKIT_REPLACEMENT_H
#define MEMKIT_REPLACEMENT_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/** \returns 1 if `p` points into a block memkit's replacement handed out (or may hand out),
 * 0 otherwise, e.g. for a block glibc allocated before the replacement took over. O(1); reads no
 * memory at `p`. */
int memkit_owns(const void* p);

/** \effects writes the replacement's counters as one JSON object (the line MEMKIT_OPTIONS=stats:1
 * prints at exit), NUL-terminated, truncated to `size` bytes. The call counts ("allocations",
 * "deallocations", "bytes_in_use", "large_allocations") are kept only under MEMKIT_OPTIONS=stats:1
 * and read 0 otherwise; "foreign_frees", "heaps", "mapped_bytes" and "peak_mapped_bytes" always.
 * \returns the object's length, which is `size` or more when it was truncated. Allocates
 * nothing. */
size_t memkit_stats_json(char* buffer, size_t size);

#ifdef __cplusplus
}
#endif

#endif
