// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/workloads/huge_pages.cpp: huge pages for a growing vector
// (docs/background.md#huge-pages): a vector filled with megabytes of ints, and how much of it huge
// pages back.

#include <cstddef>
#include <cstdio>
#include <string>
#include <type_traits>
#include <vector>

#include <memkit/huge_page.hpp>

#include "core/hash.hpp"
#include "core/policy.hpp"
#include "policies/memkit.hpp"
#include "workloads/workloads.hpp"

namespace memkit::bench {

void add_huge_pages(registry& r, const params& p) {
  // 8 MB of ints pushed into a vector (no reserve: the vector grows by doubling).
  const std::size_t ints = p.scaled((std::size_t{8} << 20) / sizeof(int));
  const workload& pages = r.add_workload(
      {"huge-pages", "ints", static_cast<double>(ints), 20,
       "huge pages for a growing vector: " + std::to_string(ints * sizeof(int) >> 10) +
           " KiB of ints pushed into a std::vector; the note says how much of the final buffer "
           "huge pages back"});
  r.add<std_policy, huge_page_policy>(pages, {}, [ints](auto& policy, std::string& note) {
    using P = std::remove_reference_t<decltype(policy)>;
    std::vector<int, typename P::template allocator_type<int>> v(policy.template allocator<int>());
    for (std::size_t i = 0; i < ints; ++i) {
      v.push_back(static_cast<int>(i));
    }
    // Read once, in the untimed cold iteration: parsing /proc/self/smaps takes 0.2-1 ms, a fixed
    // cost that would dilute every variant's time. A variant that keeps its regions reuses those
    // same pages in the timed iterations.
    if (note.empty()) {
      const std::size_t bytes = v.capacity() * sizeof(int);
      char text[96];
      std::snprintf(text, sizeof text, "huge pages back %.1f of %.1f MiB",
                    static_cast<double>(huge_page_resource::huge_page_bytes(v.data(), bytes)) /
                        (1 << 20),
                    static_cast<double>(bytes) / (1 << 20));
      note = text;
    }
    word_hash h;
    h.add(v.data(), v.size() * sizeof(int));
    return h.value();
  });
}

} // namespace memkit::bench
