// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/serve/bounded_server.cpp: serve mode's thread-per-connection task queue and the
// limits of its cpp-httplib server.

#include "serve/bounded_server.hpp"

#include <sys/socket.h>

#include <iostream>
#include <iterator>
#include <system_error>
#include <utility>

namespace memkit::bench {

connection_threads::connection_threads(std::size_t max_threads,
                                       std::chrono::milliseconds retire_after)
    : max_threads_(max_threads), retire_after_(retire_after) {}

void connection_threads::enqueue(std::function<void()> fn) {
  const std::lock_guard<std::mutex> lock(mutex_);
  join_exited();
  jobs_.push_back(std::move(fn));
  // Every queued job needs a thread of its own: one that is idle, or a new one.
  if (idle_ >= jobs_.size() || threads_.size() >= max_threads_) {
    wake_.notify_one();
    return;
  }
  try {
    threads_.emplace_back();
    const auto self = std::prev(threads_.end());
    *self = std::thread([this, self] { work(self); });
  } catch (const std::system_error& e) {
    // Out of threads (RLIMIT_NPROC, memory): the job waits for a running thread, as beyond
    // max_threads. At least one exists unless this was the first connection.
    threads_.pop_back();
    std::cerr << "memkit-bench: cannot start a connection thread: " << e.what() << "\n";
  }
}

void connection_threads::work(thread_list::iterator self) {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    ++idle_;
    wake_.wait_for(lock, retire_after_, [this] { return !jobs_.empty() || stopping_; });
    --idle_;
    if (jobs_.empty()) { // stopping, or idle for retire_after_
      exited_.push_back(self);
      return;
    }
    std::function<void()> job = std::move(jobs_.front());
    jobs_.pop_front();
    lock.unlock();
    job();
    lock.lock();
  }
}

void connection_threads::join_exited() {
  // A thread is listed here only once it no longer needs mutex_, so joining under it is safe.
  for (const auto it : exited_) {
    it->join();
    threads_.erase(it);
  }
  exited_.clear();
}

void connection_threads::shutdown() {
  thread_list all;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    join_exited();
    all.splice(all.end(), threads_); // iterators stay valid: the threads still name themselves
  }
  wake_.notify_all();
  for (auto& t : all) {
    t.join();
  }
  const std::lock_guard<std::mutex> lock(mutex_);
  exited_.clear(); // they point into `all`
}

bounded_server::bounded_server(std::size_t max_connections) {
  // Threads of a burst retire after 10 s idle: ten keep-alive timeouts.
  new_task_queue = [max_connections] {
    return new connection_threads(max_connections, std::chrono::seconds(10));
  };
  // What one connection can hold its thread for: 1 s idle between requests (which also bounds
  // how long a stop waits), 2 s for each read of a request (clients send one in a single write;
  // the default 5 s let every half-sent request hold a thread that long), 5 s for each write of
  // an answer, 1000 requests.
  set_keep_alive_max_count(1000);
  set_keep_alive_timeout(1);
  set_read_timeout(2);
  set_write_timeout(5);
}

int bounded_server::bind(const std::string& host, int port) {
  const int bound = port == 0 ? bind_to_any_port(host) : bind_to_port(host, port) ? port : -1;
  // Debian's cpp-httplib is built with a listen backlog of 5: while the accept thread starts a
  // connection thread, a burst of six connections overflowed it and each dropped SYN cost its
  // client a 1 s retransmission (300 connections took 16-21 s to open, a /healthz connect 1 s).
  // Linux takes a second listen() on a listening socket as a new backlog, capped at
  // net.core.somaxconn.
  if (bound >= 0 && ::listen(svr_sock_, SOMAXCONN) != 0) {
    return -1;
  }
  return bound;
}

} // namespace memkit::bench
