// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/workloads/large_blocks.cpp: large blocks, written here from the published
// description of malloc-large in the mimalloc-bench suite ("allocation of large blocks between 5
// and 25 MiB with up to 20 live at any time", contributed in mimalloc's issue 447): a random one
// of 20 slots gets a new block of random size, its previous block freed. The original zeroes
// every new block; here every page of it is written, so each variant pays the page faults of
// memory it returned to the system, and keeps in its peak RSS what it did not.
// docs/workloads.md#large-blocks.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "memkit_bench/random.hpp"
#include "workloads/stamps.hpp"
#include "workloads/workloads.hpp"

namespace memkit::bench {
namespace {

constexpr std::size_t slots = 20;
constexpr std::size_t mib = std::size_t{1} << 20;
constexpr std::size_t min_size = 5 * mib;
constexpr std::size_t max_size = 25 * mib;
/// The stamps' stride: one word per page of the smallest page size, so every page is touched.
constexpr std::size_t page = 4096;

/// \effects writes `stamp` plus the page's index into the first word of every page of `b`.
void stamp_pages(const stamped_block& b, std::uint64_t stamp) noexcept {
  auto* bytes = static_cast<unsigned char*>(b.p);
  for (std::size_t off = 0; off < b.size; off += page) {
    write_stamp(bytes + off, stamp + off / page);
  }
}

/// \returns the stamps of every page of `b`, summed.
std::uint64_t read_pages(const stamped_block& b) noexcept {
  const auto* bytes = static_cast<const unsigned char*>(b.p);
  std::uint64_t sum = 0;
  for (std::size_t off = 0; off < b.size; off += page) {
    sum += read_stamp(bytes + off);
  }
  return sum;
}

/// `ops` times: a random slot's block, if any, has its pages read back into the hash and is
/// freed; a block of 5-25 MiB (any byte count, as the original's) takes its place, every page
/// stamped. The blocks still live at the end are freed the same way.
auto large(std::size_t ops) {
  return [ops](auto& policy, std::string&) {
    std::vector<stamped_block> live(slots);
    rng g(0x1a26e);
    std::uint64_t h = 0;
    auto drop = [&](stamped_block& b) {
      h = h * 31 + read_pages(b);
      policy.deallocate(b.p, b.size, stamped_alignment);
      b.p = nullptr;
    };
    for (std::size_t i = 0; i < ops; ++i) {
      stamped_block& b = live[g.next() % slots];
      if (b.p != nullptr) {
        drop(b);
      }
      b.size = min_size + g.next() % (max_size - min_size + 1);
      b.p = policy.allocate(b.size, stamped_alignment);
      stamp_pages(b, i << 16);
    }
    for (stamped_block& b : live) {
      if (b.p != nullptr) {
        drop(b);
      }
    }
    return h;
  };
}

} // namespace

void add_large_blocks(registry& r, const params& p) {
  const std::size_t ops = p.scaled(20);
  const workload& w = r.add_workload(
      {"large-blocks", "blocks", static_cast<double>(ops), 3,
       std::to_string(ops) + " blocks of 5-25 MiB, each replacing a random one of " +
           std::to_string(slots) + " (at most " + std::to_string(slots * max_size / mib) +
           " MiB live), every page written when allocated and read when freed"});
  add_general_purpose(r, w, {}, large(ops));
}

} // namespace memkit::bench
