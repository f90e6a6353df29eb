// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/serve/bounded_server.hpp: serve mode's cpp-httplib server with bounds on what
// an idle or slow connection can hold: a thread per connection up to a limit, timeouts, a listen
// backlog.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <list>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>

namespace memkit::bench {

/// cpp-httplib (0.11, Debian 12) serves a connection on one task-queue thread from accept to
/// close, blocked in poll() while the client is silent. With its fixed `ThreadPool`, N slow
/// clients hold all N threads and every later connection, /healthz included, waits behind them:
/// 300 half-sent requests stalled 4 workers for minutes (docs/SERVE.md). Here each accepted
/// connection gets a thread at once (an idle one, or a new one while fewer than `max_threads`
/// exist), so a slow client holds only its own thread, for as long as the server's read and
/// keep-alive timeouts let it. Beyond `max_threads` connections wait in FIFO order for a thread.
/// Threads idle for `retire_after` end, so a burst of connections does not leave its threads.
/// How many requests run a workload at once is bounded elsewhere (serve.cpp's worker slots).
class connection_threads final : public httplib::TaskQueue {
public:
  /// \effects none: threads start on demand. \requires `max_threads > 0`.
  connection_threads(std::size_t max_threads, std::chrono::milliseconds retire_after);
  connection_threads(const connection_threads&) = delete;
  connection_threads& operator=(const connection_threads&) = delete;
  /// \requires shutdown() was called (cpp-httplib calls it before destroying its queue).
  ~connection_threads() override = default;

  /// \effects runs `fn` on an idle thread, or on a new one while fewer than `max_threads` exist,
  /// or, failing both, on the first thread to become free.
  void enqueue(std::function<void()> fn) override;
  /// \effects runs every queued job, then joins every thread.
  void shutdown() override;

private:
  using thread_list = std::list<std::thread>;
  void work(thread_list::iterator self);
  void join_exited(); ///< \requires mutex_ held

  const std::size_t max_threads_;
  const std::chrono::milliseconds retire_after_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> jobs_;
  thread_list threads_;                       ///< every thread not yet joined
  std::vector<thread_list::iterator> exited_; ///< threads that returned, to be joined
  std::size_t idle_ = 0;                      ///< threads waiting for a job
  bool stopping_ = false;
};

/// Serve mode's cpp-httplib server: connection_threads as its task queue, and the timeouts and
/// listen backlog that bound what one connection can hold (docs/SERVE.md, "Idle and slow
/// connections"). Handlers are installed as on any httplib::Server.
class bounded_server final : public httplib::Server {
public:
  /// \effects serves up to `max_connections` connections at once, a thread each.
  explicit bounded_server(std::size_t max_connections);

  /// \effects binds to `host`:`port` (0: any free port) and listens with a deep backlog.
  /// \returns the bound port, or -1 if it cannot.
  int bind(const std::string& host, int port);
};

} // namespace memkit::bench
