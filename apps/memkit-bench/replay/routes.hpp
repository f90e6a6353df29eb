// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/replay/routes.hpp: the policy that routes each call site of a replay to the
// process's malloc or to one memkit strategy (docs/TRACE.md, "Replay").
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "replay/compile.hpp"

namespace memkit::bench::replay {

/// Where a site's blocks come from.
enum class strategy : std::uint8_t {
  malloc,        ///< the process's malloc (whichever is preloaded)
  pool,          ///< memkit::pool of the site's largest size: one size, short lives
  multipool,     ///< memkit::multipool: many sizes
  arena,         ///< memkit::arena, reset whenever the site's blocks are all dead: bulk death
  stack,         ///< memkit::stack: LIFO
  thread_cached, ///< memkit::thread_cached: cross-thread frees
  huge_page,     ///< memkit::huge_page_cache: long-lived large blocks
  routed_malloc, ///< the process's malloc called through the router as a strategy is: what a
                 ///< candidate is measured against, so both pay the routing (advise.cpp)
};

/// \returns the strategy's name as the command line and the JSON spell it ("thread-cached").
std::string to_string(strategy s);
/// \returns the strategy named `name`, or nothing.
std::optional<strategy> parse_strategy(const std::string& name);

/// A policy: site id (as the trace numbers them) -> strategy; sites not named use malloc. The
/// key `all_sites` routes every site not named otherwise.
using policy_map = std::map<std::uint32_t, strategy>;
inline constexpr std::uint32_t all_sites = UINT32_MAX;

/// \returns "SITE=STRATEGY,..." ("*" for all_sites): what parse_policy reads back.
std::string to_string(const policy_map& m);
/// \returns the policy spelled "SITE=STRATEGY,..." (SITE a number or "*"). \throws
/// std::invalid_argument naming the bad entry.
policy_map parse_policy(const std::string& text);

/// One strategy instance behind the router. A site is served by one instance shared by every
/// thread that allocates there; when the program has more than one stream, instances that are not
/// thread-safe sit behind a spin lock, as a user sharing one between threads would put them.
class route_target {
public:
  virtual ~route_target() = default;
  /// \returns a block, or null if the strategy cannot serve the request (the router then uses
  /// malloc for it).
  virtual void* allocate(std::size_t bytes, std::size_t alignment) noexcept = 0;
  virtual void deallocate(void* p, std::size_t bytes, std::size_t alignment) noexcept = 0;
};

/// The routes of one replay: per dense site index, the target (0: malloc).
class router {
public:
  /// \effects builds one instance per routed site of `p` under `m`, sized from the program (a
  /// pool's block is the site's largest request; a stack holds every byte the trace ever has
  /// live at once, with each block's header and padding).
  router(const program& p, const policy_map& m);
  ~router();
  router(const router&) = delete;
  router& operator=(const router&) = delete;

  /// \returns the target index of dense site `site` (0: malloc).
  std::uint32_t route_of(std::uint32_t site) const noexcept {
    return site < routes_.size() ? routes_[site] : 0;
  }
  route_target& target(std::uint32_t route) noexcept { return *targets_[route - 1]; }

private:
  std::vector<std::uint32_t> routes_;
  std::vector<std::unique_ptr<route_target>> targets_;
};

} // namespace memkit::bench::replay
