// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/serve/request_log.hpp: serve mode's structured request log: one JSON line per
// request (--log-requests[=FILE]).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <mutex>
#include <optional>
#include <string>

#include <httplib.h>

namespace memkit::bench {

/// What the log records about the request the calling thread is handling. cpp-httplib handles a
/// request on one thread from routing to writing the answer, so the handlers fill it in a
/// thread_local: begin() in the pre-routing handler, note_run() in /run, take() when it is logged.
struct request_trace {
  std::optional<std::chrono::steady_clock::time_point>
      start; ///< unset: not routed (a bad request line or headers)
  std::optional<double>
      run_seconds; ///< /run: the value observed in memkit_bench_run_request_seconds
  std::optional<std::size_t> iterations; ///< /run: the timed iterations it ran

  static void begin();
  static void note_run(double seconds, std::size_t iterations);
  /// \returns the calling thread's trace and clears it.
  static request_trace take();
};

class request_log {
public:
  /// \effects appends to `path`, or writes to stderr if it is "-".
  /// \throws std::runtime_error if `path` cannot be opened.
  explicit request_log(const std::string& path);
  request_log(const request_log&) = delete;
  request_log& operator=(const request_log&) = delete;
  ~request_log();

  /// \effects writes one line, flushed: {"time", "method", "path", "workload", "variant",
  /// "iterations", "status", "duration_s"} (docs/SERVE.md). Thread-safe.
  void write(const httplib::Request& req, const httplib::Response& res, const request_trace& t);

private:
  std::FILE* out_;
  bool owned_;
  std::mutex mutex_;
};

} // namespace memkit::bench
