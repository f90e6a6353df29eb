// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/serve/request_log.cpp: serve mode's structured request log.

#include "serve/request_log.hpp"

#include <cerrno>
#include <cstring>
#include <ctime>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace memkit::bench {
namespace {

// Ordered: a line reads time, request, outcome.
using json = nlohmann::ordered_json;

thread_local request_trace current;

/// RFC 3339 UTC with microseconds, e.g. 2024-05-01T12:00:00.123456Z.
std::string utc_now() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(
                      now - std::chrono::system_clock::from_time_t(seconds))
                      .count();
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char text[40];
  const std::size_t n = std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(text + n, sizeof text - n, ".%06ldZ", static_cast<long>(us));
  return text;
}

json param_or_null(const httplib::Request& req, const char* key) {
  return req.has_param(key) ? json(req.get_param_value(key)) : json();
}

} // namespace

void request_trace::begin() { current = request_trace{std::chrono::steady_clock::now(), {}, {}}; }

void request_trace::note_run(double seconds, std::size_t iterations) {
  current.run_seconds = seconds;
  current.iterations = iterations;
}

request_trace request_trace::take() { return std::exchange(current, request_trace{}); }

request_log::request_log(const std::string& path)
    : out_(path == "-" ? stderr : std::fopen(path.c_str(), "a")), owned_(path != "-") {
  if (out_ == nullptr) {
    throw std::runtime_error("cannot open the request log " + path + ": " + std::strerror(errno));
  }
}

request_log::~request_log() {
  if (owned_) {
    std::fclose(out_);
  }
}

void request_log::write(const httplib::Request& req, const httplib::Response& res,
                        const request_trace& t) {
  json duration;
  if (t.run_seconds) {
    duration = *t.run_seconds;
  } else if (t.start) {
    duration = std::chrono::duration<double>(std::chrono::steady_clock::now() - *t.start).count();
  }
  const json line = {{"time", utc_now()},
                     {"method", req.method},
                     {"path", req.path},
                     {"workload", param_or_null(req, "workload")},
                     {"variant", param_or_null(req, "variant")},
                     {"iterations", t.iterations ? json(*t.iterations) : json()},
                     {"status", res.status},
                     {"duration_s", duration}};
  // One write per line: lines from concurrent requests never interleave.
  const std::string text = line.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
  const std::lock_guard<std::mutex> lock(mutex_);
  std::fwrite(text.data(), 1, text.size(), out_);
  std::fflush(out_);
}

} // namespace memkit::bench
