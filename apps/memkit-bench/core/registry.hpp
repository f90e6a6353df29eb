// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/core/registry.hpp: workloads, and the registry that pairs each with the
// variants that fit it. Each workload is written once, as a generic lambda over a policy
// (core/policy.hpp); the glossary is in docs/BENCHMARKS.md.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/measure.hpp"
#include "core/policy.hpp"

namespace memkit::bench {

/// What one workload is, independent of the variant running it.
struct workload {
  std::string name;
  std::string unit;       ///< what `items` counts: "requests", "elements", ...
  double items = 1;       ///< units of work in one iteration (throughput = items / p50)
  std::size_t iterations; ///< timed iterations by default
  std::string description;
};

/// A (workload, variant) pair. `measure(iterations, probe_rss)` builds the variant's policy, runs
/// the workload and measures it; it measures peak RSS only when `probe_rss` (the probe resets the
/// process's peak: meaningless with concurrent requests).
struct bench_case {
  const workload* w;
  std::string variant;
  std::function<measurement(std::size_t iterations, bool probe_rss)> measure;
};

template <class... Policies>
struct policy_list {};

/// The (workload, variant) pairs of one run, in registration order.
class registry {
public:
  /// \effects registers `w` and returns the stable copy cases refer to.
  const workload& add_workload(workload w) {
    workloads_.push_back(std::make_unique<workload>(std::move(w)));
    return *workloads_.back();
  }

  /// \effects registers `iteration` for `w` under every policy in `Policies`.
  template <class... Policies, class Iteration>
  void add(const workload& w, const hint& h, const Iteration& iteration) {
    (cases_.push_back(bench_case{&w, Policies::name,
                                 [h, iteration](std::size_t n, bool probe_rss) {
                                   return bench::measure<Policies>(h, n, iteration, probe_rss);
                                 }}),
     ...);
  }

  /// \effects registers `iteration` for `w` under every policy in the list.
  template <class... Policies, class Iteration>
  void add(policy_list<Policies...>, const workload& w, const hint& h, const Iteration& iteration) {
    add<Policies...>(w, h, iteration);
  }

  const std::vector<bench_case>& cases() const noexcept { return cases_; }

private:
  std::vector<std::unique_ptr<workload>> workloads_;
  std::vector<bench_case> cases_;
};

} // namespace memkit::bench
