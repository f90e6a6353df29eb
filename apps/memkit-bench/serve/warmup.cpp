// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/serve/warmup.cpp: serve mode's warm-up thread.

#include "serve/warmup.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <utility>

namespace memkit::bench {

warmup::warmup(std::vector<const bench_case*> cases, std::size_t iterations)
    : cases_(std::move(cases)), iterations_(iterations) {}

warmup::~warmup() {
  cancel();
  join();
}

const char* warmup::name(state s) noexcept {
  switch (s) {
  case state::warming:
    return "warming";
  case state::ready:
    return "ready";
  case state::failed:
    return "failed";
  case state::cancelled:
    return "cancelled";
  }
  return "unknown";
}

void warmup::start() {
  if (iterations_ == 0) {
    std::fprintf(stderr, "memkit-bench: no warm-up (--warmup 0): ready at once\n");
    rss_after_kib_ = rss_kib();
    state_.store(state::ready, std::memory_order_release);
    return;
  }
  std::fprintf(stderr, "memkit-bench: warming up (%zu iterations of every served case)\n",
               iterations_);
  thread_ = std::thread([this] { run(); });
}

void warmup::cancel() noexcept { cancel_.store(true, std::memory_order_relaxed); }

void warmup::join() {
  if (thread_.joinable()) {
    thread_.join();
  }
}

const bench_case* warmup::running() const noexcept {
  const std::size_t i = warm();
  return current() == state::warming && i < cases_.size() ? cases_[i] : nullptr;
}

std::optional<std::uint64_t> warmup::reference_hash(const std::string& workload) const {
  const auto it = reference_hash_.find(workload);
  return it == reference_hash_.end() ? std::nullopt : std::optional<std::uint64_t>(it->second);
}

void warmup::run() {
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  struct warm_hash {
    const bench_case* c;
    std::uint64_t hash;
    bool consistent;
  };
  std::vector<warm_hash> hashes;
  for (const bench_case* c : cases_) {
    // Checked between cases: a case cannot be interrupted, so a stop waits for the one running.
    if (cancel_.load(std::memory_order_relaxed)) {
      std::fprintf(stderr, "memkit-bench: warm-up cancelled after %zu of %zu cases\n", warm(),
                   total());
      state_.store(state::cancelled, std::memory_order_release);
      return;
    }
    const auto case_start = clock::now();
    const measurement m = c->measure(iterations_, false);
    const double case_s = std::chrono::duration<double>(clock::now() - case_start).count();
    auto [it, first] = reference_hash_.emplace(c->w->name, m.hash);
    if (c->variant == "std") {
      it->second = m.hash;
    }
    hashes.push_back({c, m.hash, m.consistent});
    std::vector<double> sorted = m.samples_us;
    std::sort(sorted.begin(), sorted.end());
    // Batch mode's progress line, and how long the case took (a stop waits for it). One call a
    // line: stdio writes it whole, between the request log's lines on stderr.
    std::fprintf(stderr, "warm-up [%4zu/%zu] %-24s %-24s %zu iterations  p50 %.2f us  in %.2f s\n",
                 warm() + 1, total(), c->w->name.c_str(), c->variant.c_str(), iterations_,
                 sorted.empty() ? 0.0 : sorted[sorted.size() / 2], case_s);
    warm_.fetch_add(1, std::memory_order_relaxed);
  }
  bool ok = true;
  for (const auto& h : hashes) {
    if (!h.consistent || h.hash != reference_hash_.at(h.c->w->name)) {
      std::fprintf(stderr,
                   "memkit-bench: ERROR: warm-up of %s / %s: result hash disagrees with std's\n",
                   h.c->w->name.c_str(), h.c->variant.c_str());
      ok = false;
    }
  }
  rss_after_kib_ = rss_kib();
  std::fprintf(stderr, "memkit-bench: warm-up %s: %zu cases in %.1f s\n", ok ? "done" : "failed",
               total(), std::chrono::duration<double>(clock::now() - start).count());
  state_.store(ok ? state::ready : state::failed, std::memory_order_release);
}

} // namespace memkit::bench
