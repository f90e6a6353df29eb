// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/replay/series.hpp: a quantity over a run of unknown length (live bytes over a
// trace's events, resident memory over a replay's time), kept to a bounded number of points.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace memkit::bench::replay {

/// The points a series of the replay keeps at most.
inline constexpr std::size_t series_limit = 512;

/// Points (x, y) of whole numbers, taken every `step` units of x from 0 on. When a point would make
/// more than `limit`, every other point goes and the step doubles, so the points stay evenly spaced
/// over the whole run, at least limit / 2 of them once the run is long enough, in fixed memory:
/// nothing is allocated after the constructor, which a sampler running beside an allocator under
/// test needs.
class thinned_series {
public:
  using point = std::array<std::uint64_t, 2>;

  /// A series of at most `limit` points, the first `step` apart.
  explicit thinned_series(std::size_t limit, std::uint64_t step = 1)
      : limit_(limit < 2 ? 2 : limit), step_(step == 0 ? 1 : step) {
    points_.reserve(limit_ + 1); // the limit, and close()'s point
  }

  /// \returns the distance in x between two points.
  std::uint64_t step() const noexcept { return step_; }

  /// \returns whether a point at `x` is due: `x` is the next multiple of the step.
  bool due(std::uint64_t x) const noexcept { return x >= next_; }

  /// \effects keeps (x, y), thinning as the class says. \requires due(x).
  void add(std::uint64_t x, std::uint64_t y) {
    if (points_.size() == limit_) {
      std::size_t kept = 0;
      for (std::size_t i = 0; i < points_.size(); i += 2) {
        points_[kept++] = points_[i];
      }
      points_.resize(kept);
      step_ *= 2;
    }
    points_.push_back({x, y});
    next_ = (x / step_ + 1) * step_;
  }

  /// \effects ends the series with (x, y), a point beyond the last (which may make one more
  /// than `limit`): a run's last state is always there, however short the run.
  void close(std::uint64_t x, std::uint64_t y) {
    if (points_.empty() || points_.back()[0] < x) {
      points_.push_back({x, y});
    }
  }

  const std::vector<point>& points() const noexcept { return points_; }
  std::vector<point> take() noexcept { return std::move(points_); }

private:
  std::size_t limit_;
  std::uint64_t step_;
  std::uint64_t next_ = 0;
  std::vector<point> points_;
};

} // namespace memkit::bench::replay
