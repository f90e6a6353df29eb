// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/replay/routes.cpp: the strategies behind the router.

#include "replay/routes.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <mutex>
#include <sstream>
#include <stdexcept>

#include <memkit/arena.hpp>
#include <memkit/huge_page.hpp>
#include <memkit/multipool.hpp>
#include <memkit/pool.hpp>
#include <memkit/spin_mutex.hpp>
#include <memkit/stack.hpp>
#include <memkit/thread_cached.hpp>

namespace memkit::bench::replay {
namespace {

constexpr std::pair<strategy, const char*> names[] = {
    {strategy::malloc, "malloc"},       {strategy::pool, "pool"},
    {strategy::multipool, "multipool"}, {strategy::arena, "arena"},
    {strategy::stack, "stack"},         {strategy::thread_cached, "thread-cached"},
    {strategy::huge_page, "huge-page"}, {strategy::routed_malloc, "routed-malloc"}};

/// The process's malloc behind the router's interface (strategy::routed_malloc).
struct process_malloc {
  void* try_allocate(std::size_t bytes, std::size_t alignment) noexcept {
    if (alignment <= alignof(std::max_align_t)) {
      return std::malloc(bytes);
    }
    void* p = nullptr;
    return posix_memalign(&p, alignment, bytes) == 0 ? p : nullptr;
  }
  void deallocate(void* p, std::size_t, std::size_t) noexcept { std::free(p); }
};

/// A strategy `R` as a route target. `ResetWhenEmpty`: rewind it whenever its last live block
/// goes, the point where a program with bulk death would reset its arena.
template <class R, bool ResetWhenEmpty = false>
class target_of final : public route_target {
public:
  template <class... Args>
  explicit target_of(bool locked, Args&&... args)
      : r_(std::forward<Args>(args)...), locked_(locked) {}

  void* allocate(std::size_t bytes, std::size_t alignment) noexcept override {
    const guard g(*this);
    void* p = r_.try_allocate(std::max<std::size_t>(bytes, 1), alignment);
    if constexpr (ResetWhenEmpty) {
      live_ += p != nullptr ? 1 : 0;
    }
    return p;
  }
  void deallocate(void* p, std::size_t bytes, std::size_t alignment) noexcept override {
    const guard g(*this);
    r_.deallocate(p, std::max<std::size_t>(bytes, 1), alignment);
    if constexpr (ResetWhenEmpty) {
      if (--live_ == 0) {
        r_.reset();
      }
    }
  }

private:
  /// Locks only when the replay has more than one stream: one thread pays no atomic operation.
  struct guard {
    explicit guard(target_of& t) noexcept : t_(t) {
      if (t_.locked_) {
        t_.m_.lock();
      }
    }
    ~guard() {
      if (t_.locked_) {
        t_.m_.unlock();
      }
    }
    guard(const guard&) = delete;
    guard& operator=(const guard&) = delete;
    target_of& t_;
  };

  R r_;
  memkit::spin_mutex m_;
  bool locked_;
  std::uint64_t live_ = 0;
};

/// memkit::thread_cached is thread-safe by itself: no lock.
class thread_cached_target final : public route_target {
public:
  void* allocate(std::size_t bytes, std::size_t alignment) noexcept override {
    return r_.try_allocate(std::max<std::size_t>(bytes, 1), alignment);
  }
  void deallocate(void* p, std::size_t bytes, std::size_t alignment) noexcept override {
    r_.deallocate(p, std::max<std::size_t>(bytes, 1), alignment);
  }

private:
  memkit::thread_cached<> r_;
};

std::unique_ptr<route_target> make_target(strategy s, bool locked, std::uint64_t largest,
                                          const program& p) {
  switch (s) {
  case strategy::pool:
    return std::make_unique<target_of<memkit::pool<>>>(locked, std::max<std::size_t>(largest, 1));
  case strategy::multipool:
    return std::make_unique<target_of<memkit::multipool<>>>(locked);
  case strategy::arena:
    return std::make_unique<target_of<memkit::arena<>, true>>(locked);
  case strategy::stack:
    // Each block costs a two-pointer header and up to an alignment of padding (stack.hpp).
    return std::make_unique<target_of<memkit::stack<>>>(
        locked, p.stats.peak_live_bytes + p.stats.peak_live * (2 * sizeof(void*) + 64) + 4096);
  case strategy::thread_cached:
    return std::make_unique<thread_cached_target>();
  case strategy::huge_page:
    return std::make_unique<target_of<memkit::huge_page_cache>>(locked);
  case strategy::routed_malloc:
    // malloc is thread-safe: a lock is a cost of the strategies that are not, charged to them;
    // without one, nothing of the target's own is written (it counts no live blocks).
    return std::make_unique<target_of<process_malloc>>(false);
  case strategy::malloc:
    break;
  }
  return nullptr;
}

} // namespace

std::string to_string(strategy s) {
  for (const auto& [value, name] : names) {
    if (value == s) {
      return name;
    }
  }
  return "?";
}

std::optional<strategy> parse_strategy(const std::string& name) {
  for (const auto& [value, n] : names) {
    if (name == n) {
      return value;
    }
  }
  return std::nullopt;
}

std::string to_string(const policy_map& m) {
  std::ostringstream out;
  for (const auto& [site, s] : m) {
    out << (out.tellp() == 0 ? "" : ",") << (site == all_sites ? "*" : std::to_string(site)) << '='
        << to_string(s);
  }
  return out.str();
}

policy_map parse_policy(const std::string& text) {
  policy_map m;
  std::istringstream in(text);
  for (std::string entry; std::getline(in, entry, ',');) {
    const auto eq = entry.find('=');
    const auto s = eq == std::string::npos ? std::nullopt : parse_strategy(entry.substr(eq + 1));
    if (!s) {
      throw std::invalid_argument("bad route '" + entry +
                                  "': want SITE=STRATEGY, STRATEGY one of malloc, pool, "
                                  "multipool, arena, stack, thread-cached, huge-page, "
                                  "routed-malloc");
    }
    const std::string site = entry.substr(0, eq);
    if (site == "*") {
      m[all_sites] = *s;
      continue;
    }
    try {
      std::size_t used = 0;
      const unsigned long id = std::stoul(site, &used);
      if (used != site.size() || id >= all_sites) {
        throw std::invalid_argument(site);
      }
      m[static_cast<std::uint32_t>(id)] = *s;
    } catch (const std::exception&) {
      throw std::invalid_argument("bad route '" + entry + "': SITE is a site number or *");
    }
  }
  return m;
}

router::router(const program& p, const policy_map& m) : routes_(p.sites.size(), 0) {
  if (m.empty()) {
    return;
  }
  const bool locked = p.streams.size() > 1;
  const auto every = m.find(all_sites);
  for (std::size_t i = 0; i < p.sites.size(); ++i) {
    const auto it = m.find(p.sites[i]);
    const strategy s =
        it != m.end() ? it->second : (every != m.end() ? every->second : strategy::malloc);
    if (auto t = make_target(s, locked, p.largest[i], p)) {
      targets_.push_back(std::move(t));
      routes_[i] = static_cast<std::uint32_t>(targets_.size());
    }
  }
}

router::~router() = default;

} // namespace memkit::bench::replay
