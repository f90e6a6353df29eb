// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/workloads/workloads.hpp: every workload, each registered by its own file with
// the variants that fit it.
#pragma once

#include "core/params.hpp"
#include "core/registry.hpp"

namespace memkit::bench {

void add_json_tree(registry& r, const params& p);
void add_vector_strings(registry& r, const params& p);
void add_list_1m(registry& r, const params& p);
void add_node_lists(registry& r, const params& p);
void add_containers(registry& r, const params& p);
void add_pairs(registry& r, const params& p);
void add_false_sharing(registry& r, const params& p);
void add_huge_pages(registry& r, const params& p);
void add_threads(registry& r, const params& p);
void add_cache_lines(registry& r, const params& p);
// The stresses the allocator field judges itself by (docs/workloads.md), one file each.
void add_larson(registry& r, const params& p);
void add_xmalloc(registry& r, const params& p);
void add_glibc_simple(registry& r, const params& p);
void add_pareto(registry& r, const params& p);
void add_large_blocks(registry& r, const params& p);
void add_leak_on_exit(registry& r, const params& p);
void add_realloc_growth(registry& r, const params& p);

/// Every workload, in the order the tables show them.
inline void add_all(registry& r, const params& p) {
  add_json_tree(r, p);
  add_vector_strings(r, p);
  add_list_1m(r, p);
  add_node_lists(r, p);
  add_containers(r, p);
  add_pairs(r, p);
  add_false_sharing(r, p);
  add_huge_pages(r, p);
  add_threads(r, p);
  add_cache_lines(r, p);
  add_larson(r, p);
  add_xmalloc(r, p);
  add_glibc_simple(r, p);
  add_pareto(r, p);
  add_large_blocks(r, p);
  add_leak_on_exit(r, p);
  add_realloc_growth(r, p);
}

} // namespace memkit::bench
