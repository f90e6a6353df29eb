// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/serve/serve.hpp: serve mode (the workloads over HTTP, with Prometheus metrics)
// and the load client that drives it.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "core/params.hpp"

namespace memkit::bench {

/// Every path serve mode answers (GET only), in the order /info lists them.
inline constexpr std::array<std::string_view, 5> served_paths{"/healthz", "/readyz", "/info",
                                                              "/run", "/metrics"};

/// \returns `path` if it is served, else "other": the bounded set of values of /metrics' `path`
/// label, under which the load client counts its requests too.
std::string path_label(std::string_view path);

/// The range of /run's `iters` and its value when the request gives none.
inline constexpr std::size_t min_serve_iters = 1;
inline constexpr std::size_t max_serve_iters = 10'000;
inline constexpr std::size_t default_serve_iters = 1;

struct serve_options {
  std::string host = "127.0.0.1";
  int port = 8080;        ///< 0: any free port (the bound port is printed on stdout)
  unsigned workers = 4;   ///< /run requests that run at once
  std::size_t warmup = 2; ///< timed warm-up iterations of every served case before /readyz is 200
  std::size_t max_connections = 512; ///< connections served at once, a thread each
  std::string log_requests;          ///< the JSON request log: a file, "-" for stderr, "" for none
};

/// Serves the workloads of `p` until SIGINT or SIGTERM, then lets in-flight requests finish.
/// Listens before the warm-up, which runs beside the listener (serve/warmup.hpp). \returns the
/// process's exit status: 0 after a graceful stop (during the warm-up too), 1 if the server could
/// not start or a variant's warm-up hash disagreed with std's.
int serve(const serve_options& o, const params& p);

struct load_options {
  std::string host = "127.0.0.1";
  int port = 8080;
  unsigned connections = 4; ///< concurrent clients, each one keep-alive connection
  double seconds = 10;
  std::string workload = "json-tree";
  std::vector<std::string> variants; ///< empty: every variant the server serves for `workload`
  std::size_t iters = 1;
  unsigned bad_every = 0; ///< every n-th request is a bad one (0: none)
};

/// Drives a server with `o.connections` clients for `o.seconds`, checking every response, and
/// prints the counts, requests per second and latencies as JSON on stdout.
/// \returns 0 if every request got the response it should, 1 otherwise.
int load(const load_options& o);

} // namespace memkit::bench
