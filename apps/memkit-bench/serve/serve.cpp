// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/serve/serve.cpp: serve mode: /healthz, /readyz, /info, /run and /metrics over
// cpp-httplib, metrics through prometheus-cpp, graceful stop on SIGINT/SIGTERM.

#include "serve/serve.hpp"

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <semaphore>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <memkit/version.hpp>

#include "core/machine.hpp"
#include "core/measure.hpp"
#include "core/registry.hpp"
#include "core/summary.hpp"
#include "output/json.hpp"
#include "replacement/replacement.hpp"
#include "serve/bounded_server.hpp"
#include "serve/request_log.hpp"
#include "serve/warmup.hpp"
#include "workloads/workloads.hpp"

#ifndef MEMKIT_BENCH_VERSION
#define MEMKIT_BENCH_VERSION "unknown"
#endif
#ifndef MEMKIT_BENCH_BUILD_TYPE
#define MEMKIT_BENCH_BUILD_TYPE "unknown"
#endif

namespace memkit::bench {
namespace {

using json = nlohmann::json;

/// Why a workload or variant is left out of serve mode ("" if it is served).
std::string workload_not_served(const std::string& name) {
  if (name == "false-sharing") {
    return "it starts its own threads in every iteration and measures cache-line placement "
           "between them, not request handling";
  }
  if (name == "huge-pages") {
    return "it maps megabytes of transparent huge pages per iteration, a process-wide effect "
           "that concurrent requests would share";
  }
  return "";
}

std::string variant_not_served(const std::string& name) {
  if (is_replacement(name)) {
    return "a global malloc replacement runs only in batch mode, in its own process under "
           "LD_PRELOAD";
  }
  if (name.rfind("boost-", 0) == 0) {
    return "its container allocators draw from Boost's process-wide singleton pools, which are "
           "shared by every thread and keep their memory after the request";
  }
  return "";
}

/// Latency buckets in seconds, 10 us to 10 s in 1-2.5-5 steps: a json-tree request with iters=1
/// takes tens of microseconds, a list-1m request with iters=10,000 minutes.
prometheus::Histogram::BucketBoundaries latency_buckets() {
  prometheus::Histogram::BucketBoundaries b;
  for (double decade = 1e-5; decade < 10; decade *= 10) {
    b.insert(b.end(), {decade, 2.5 * decade, 5 * decade});
  }
  b.push_back(10);
  return b;
}

using served_cases = std::map<std::string, std::map<std::string, const bench_case*>>;

/// \returns every case of `r` that serve mode serves, by workload and variant.
served_cases serve_from(const registry& r) {
  served_cases served;
  for (const auto& c : r.cases()) {
    if (workload_not_served(c.w->name).empty() && variant_not_served(c.variant).empty()) {
      served[c.w->name].emplace(c.variant, &c);
    }
  }
  return served;
}

/// \returns the cases of `served` in the order of the map: the order they are warmed up in.
std::vector<const bench_case*> in_order(const served_cases& served) {
  std::vector<const bench_case*> cases;
  for (const auto& [workload, variants] : served) {
    for (const auto& [variant, c] : variants) {
      cases.push_back(c);
    }
  }
  return cases;
}

/// \returns a gauge without labels, registered in `r`.
prometheus::Gauge& unlabelled_gauge(prometheus::Registry& r, const std::string& name,
                                    const std::string& help) {
  return prometheus::BuildGauge().Name(name).Help(help).Register(r).Add({});
}

/// The bad-request answer: 400 with the message and the parameter (and value) at fault.
void bad_request(httplib::Response& res, const std::string& parameter, const std::string& value,
                 const std::string& error) {
  res.status = 400;
  res.set_content(json{{"error", error}, {"parameter", parameter}, {"value", value}}.dump(),
                  "application/json");
}

/// The served workloads and variants, their metrics, and the handlers.
class service {
public:
  service(const params& p, const serve_options& o)
      : p_(p), o_(o), registry_([&] {
          registry r;
          add_all(r, p_);
          return r;
        }()),
        served_(serve_from(registry_)), warmup_(in_order(served_), o.warmup),
        metrics_(std::make_shared<prometheus::Registry>()),
        requests_(prometheus::BuildCounter()
                      .Name("memkit_bench_http_requests_total")
                      .Help("HTTP requests answered, by path and status code")
                      .Register(*metrics_)),
        request_seconds_(prometheus::BuildHistogram()
                             .Name("memkit_bench_run_request_seconds")
                             .Help("/run handler time: parsing, the workload, the JSON record")
                             .Register(*metrics_)),
        workload_seconds_(prometheus::BuildHistogram()
                              .Name("memkit_bench_run_workload_seconds")
                              .Help("/run allocator workload time: the cold and the timed "
                                    "iterations of the request")
                              .Register(*metrics_)),
        rss_(unlabelled_gauge(*metrics_, "process_resident_memory_bytes",
                              "Resident memory (VmRSS), read at every scrape")),
        peak_rss_(unlabelled_gauge(*metrics_, "memkit_bench_process_peak_resident_memory_bytes",
                                   "Peak resident memory (VmHWM), read at every scrape")),
        in_flight_(unlabelled_gauge(*metrics_, "memkit_bench_run_requests_in_flight",
                                    "/run requests being handled")),
        cases_warm_(unlabelled_gauge(*metrics_, "memkit_bench_warmup_cases_warm",
                                     "Served cases the warm-up has run so far")),
        cases_(unlabelled_gauge(*metrics_, "memkit_bench_warmup_cases",
                                "Served cases the warm-up runs")),
        ready_(unlabelled_gauge(*metrics_, "memkit_bench_ready",
                                "1 once every served case is warm (/readyz answers 200), else 0")),
        workers_(static_cast<std::ptrdiff_t>(std::max(1u, o.workers))) {
    if (!o.log_requests.empty()) {
      log_.emplace(o.log_requests);
    }
    cases_.Set(static_cast<double>(warmup_.total()));
  }

  warmup& warm_up() noexcept { return warmup_; }

  void install(httplib::Server& svr) {
    const std::map<std::string_view, httplib::Server::Handler> handlers{
        {"/healthz", [](const httplib::Request&,
                        httplib::Response& res) { res.set_content("ok\n", "text/plain"); }},
        {"/readyz",
         [this](const httplib::Request&, httplib::Response& res) {
           const json body = readiness();
           res.status = body.at("ready").get<bool>() ? 200 : 503;
           res.set_content(body.dump(), "application/json");
         }},
        {"/info",
         [this](const httplib::Request&, httplib::Response& res) {
           res.set_content(info().dump(1), "application/json");
         }},
        {"/run",
         [this](const httplib::Request& req, httplib::Response& res) { answer_run(req, res); }},
        {"/metrics", [this](const httplib::Request&, httplib::Response& res) {
           rss_.Set(static_cast<double>(rss_kib()) * 1024);
           // State before count: once ready is read as 1, the count read after it is the total.
           const bool ready = warmup_.current() == warmup::state::ready;
           ready_.Set(ready ? 1 : 0);
           cases_warm_.Set(static_cast<double>(warmup_.warm()));
           peak_rss_.Set(static_cast<double>(peak_rss_kib()) * 1024);
           res.set_content(prometheus::TextSerializer().Serialize(metrics_->Collect()),
                           "text/plain; version=0.0.4");
         }}};
    for (const std::string_view path : served_paths) {
      svr.Get(std::string(path), handlers.at(path)); // throws for a served path without handler
    }
    // Unknown paths, and methods other than GET, reach here with an empty body; a handler's own
    // 400 keeps its body.
    svr.set_error_handler(httplib::Server::HandlerWithResponse([](const httplib::Request& req,
                                                                  httplib::Response& res) {
      if (!res.body.empty()) {
        return httplib::Server::HandlerResponse::Unhandled;
      }
      const std::string error = res.status == 404   ? "no such path (GET /info lists the endpoints)"
                                : res.status == 405 ? "method not allowed (every endpoint is GET)"
                                                    : "HTTP " + std::to_string(res.status);
      res.set_content(json{{"error", error}, {"path", req.path}}.dump(), "application/json");
      return httplib::Server::HandlerResponse::Handled;
    }));
    svr.set_exception_handler(
        [](const httplib::Request&, httplib::Response& res, std::exception_ptr e) {
          std::string what = "unknown exception";
          try {
            std::rethrow_exception(std::move(e));
          } catch (const std::exception& x) {
            what = x.what();
          } catch (...) {
          }
          res.status = 500;
          res.set_content(json{{"error", what}}.dump(), "application/json");
        });
    svr.set_pre_routing_handler([](const httplib::Request&, httplib::Response&) {
      request_trace::begin();
      return httplib::Server::HandlerResponse::Unhandled;
    });
    // Counted before the response is written, so a client that has its answer finds it counted.
    svr.set_post_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      requests_.Add({{"path", path_label(req.path)}, {"code", std::to_string(res.status)}})
          .Increment();
      const request_trace trace = request_trace::take();
      if (log_) {
        log_->write(req, res, trace);
      }
    });
  }

private:
  /// /readyz's body: the warm-up's state and progress.
  json readiness() const {
    const warmup::state state = warmup_.current();
    json body = {{"ready", state == warmup::state::ready},
                 {"state", warmup::name(state)},
                 {"cases_warm", warmup_.warm()},
                 {"cases_total", warmup_.total()},
                 {"warmup_iterations", warmup_.iterations()}};
    if (const bench_case* c = warmup_.running()) {
      body["warming"] = {{"workload", c->w->name}, {"variant", c->variant}};
    }
    return body;
  }

  json info() const {
    const run_info machine = describe_run();
    json workloads = json::array();
    for (const auto& [name, variants] : served_) {
      const workload& w = *variants.begin()->second->w;
      json names = json::array();
      for (const auto& v : variants) {
        names.push_back(v.first);
      }
      workloads.push_back({{"name", name},
                           {"unit", w.unit},
                           {"items_per_iteration", w.items},
                           {"batch_iterations", w.iterations},
                           {"description", w.description},
                           {"variants", names}});
    }
    json not_served = {{"workloads", json::object()}, {"variants", json::object()}};
    std::vector<std::string> variant_names;
    for (const auto& c : registry_.cases()) {
      if (const auto why = workload_not_served(c.w->name); !why.empty()) {
        not_served["workloads"][c.w->name] = why;
      }
      if (const auto why = variant_not_served(c.variant); !why.empty()) {
        not_served["variants"][c.variant] = why;
      }
      if (std::find(variant_names.begin(), variant_names.end(), c.variant) == variant_names.end()) {
        variant_names.push_back(c.variant);
      }
    }
    for (const auto& r : known_replacements()) {
      not_served["variants"][r.name] = variant_not_served(r.name);
    }
    json served_variants = json::array();
    for (const auto& v : variant_names) {
      if (variant_not_served(v).empty()) {
        served_variants.push_back(v);
      }
    }
    return {
        {"tool", "memkit-bench"},
        {"version", MEMKIT_VERSION_STRING},
        {"schema", schema_version},
        {"build_type", MEMKIT_BENCH_BUILD_TYPE},
        {"optimized", machine.optimized},
        {"compiler", machine.compiler},
        {"machine", {{"cpu", machine.cpu}, {"cores", machine.cores}, {"kernel", machine.kernel}}},
        {"workers", o_.workers},
        {"warmup_iterations", o_.warmup},
        {"iters",
         {{"min", min_serve_iters}, {"max", max_serve_iters}, {"default", default_serve_iters}}},
        {"params", p_},
        {"paths", served_paths},
        {"variants", served_variants},
        {"workloads", workloads},
        {"not_served", not_served},
        {"rss_kib", rss_kib()},
        {"rss_after_warmup_kib", warmup_.current() == warmup::state::ready
                                     ? json(warmup_.rss_after_kib())
                                     : json(nullptr)}};
  }

  /// \returns the case `req` names, or null after answering 400.
  const bench_case* find_case(const httplib::Request& req, httplib::Response& res) const {
    for (const auto& [key, value] : req.params) {
      if (key != "workload" && key != "variant" && key != "iters") {
        bad_request(res, key, value,
                    "unknown parameter '" + key +
                        "' (/run takes workload, "
                        "variant and iters)");
        return nullptr;
      }
    }
    const std::string w = req.get_param_value("workload");
    const std::string v = req.get_param_value("variant");
    if (w.empty() || v.empty()) {
      const char* missing = w.empty() ? "workload" : "variant";
      bad_request(res, missing, "", std::string("missing parameter '") + missing + "'");
      return nullptr;
    }
    const auto wit = served_.find(w);
    if (wit == served_.end()) {
      const std::string why = workload_not_served(w);
      bad_request(res, "workload", w,
                  why.empty() ? "unknown workload '" + w + "' (GET /info lists them)"
                              : "workload '" + w + "' is not served: " + why);
      return nullptr;
    }
    const auto vit = wit->second.find(v);
    if (vit == wit->second.end()) {
      const std::string why = variant_not_served(v);
      const bool exists = std::any_of(registry_.cases().begin(), registry_.cases().end(),
                                      [&](const bench_case& c) { return c.variant == v; });
      bad_request(res, "variant", v,
                  !why.empty() ? "variant '" + v + "' is not served: " + why
                  : exists     ? "variant '" + v + "' does not run workload '" + w +
                                 "' (GET /info lists the variants of each)"
                           : "unknown variant '" + v + "' (GET /info lists them)");
      return nullptr;
    }
    return vit->second;
  }

  /// GET /run: one measurement with a policy built for this request and destroyed before the
  /// answer is written, summarised exactly as a batch row.
  void answer_run(const httplib::Request& req, httplib::Response& res) {
    using clock = std::chrono::steady_clock;
    // Before every case is warm a measurement would be cold, and there is no reference hash yet:
    // 503 at once, without waiting for a worker.
    if (warmup_.current() != warmup::state::ready) {
      const json readyz = readiness();
      const std::string error = "not ready: warm-up " + readyz.at("state").get<std::string>() +
                                ", " + readyz.at("cases_warm").dump() + " of " +
                                readyz.at("cases_total").dump() + " cases warm (GET /readyz)";
      res.status = 503;
      res.set_header("Retry-After", "1"); // seconds; a poll of /readyz tells when exactly
      res.set_content(json{{"error", error}, {"readiness", readyz}}.dump(), "application/json");
      return;
    }
    // o_.workers requests run at once however many connections are open; the wait for a slot
    // is queueing, left out of the histograms as before.
    workers_.acquire();
    const struct slot_guard {
      std::counting_semaphore<>& s;
      ~slot_guard() { s.release(); }
    } slot{workers_};
    const auto start = clock::now();
    struct in_flight_guard {
      prometheus::Gauge& g;
      explicit in_flight_guard(prometheus::Gauge& gauge) : g(gauge) { g.Increment(); }
      ~in_flight_guard() { g.Decrement(); }
    } guard(in_flight_);
    const bench_case* c = find_case(req, res);
    if (c == nullptr) {
      return;
    }
    std::size_t iters = default_serve_iters;
    if (req.has_param("iters")) {
      const std::string text = req.get_param_value("iters");
      const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), iters);
      if (ec != std::errc() || end != text.data() + text.size() || iters < min_serve_iters ||
          iters > max_serve_iters) {
        bad_request(res, "iters", text,
                    "iters must be an integer from " + std::to_string(min_serve_iters) + " to " +
                        std::to_string(max_serve_iters));
        return;
      }
    }
    std::vector<measurement> ms{c->measure(iters, false)};
    double workload_us = ms.front().cold_us;
    for (const double us : ms.front().samples_us) {
      workload_us += us;
    }
    result r = summarize(*c->w, c->variant, ms);
    if (const auto reference = warmup_.reference_hash(r.workload)) {
      r.hash_ok = r.hash_ok && r.hash.value == *reference;
    }
    res.set_content(json(r).dump(), "application/json");
    // A pair's histograms appear with its first request: all ~150 pairs' empty buckets would make
    // every scrape over a megabyte.
    const prometheus::Labels labels{{"workload", c->w->name}, {"variant", c->variant}};
    workload_seconds_.Add(labels, buckets_).Observe(workload_us * 1e-6);
    const double seconds = std::chrono::duration<double>(clock::now() - start).count();
    request_seconds_.Add(labels, buckets_).Observe(seconds);
    request_trace::note_run(seconds, iters);
  }

  params p_;
  serve_options o_;
  registry registry_;
  served_cases served_;
  warmup warmup_;
  std::shared_ptr<prometheus::Registry> metrics_;
  prometheus::Family<prometheus::Counter>& requests_;
  prometheus::Family<prometheus::Histogram>& request_seconds_;
  prometheus::Family<prometheus::Histogram>& workload_seconds_;
  const prometheus::Histogram::BucketBoundaries buckets_ = latency_buckets();
  prometheus::Gauge& rss_;
  prometheus::Gauge& peak_rss_;
  prometheus::Gauge& in_flight_;
  prometheus::Gauge& cases_warm_;
  prometheus::Gauge& cases_;
  prometheus::Gauge& ready_;
  std::counting_semaphore<> workers_;
  std::optional<request_log> log_;
};

} // namespace

std::string path_label(std::string_view path) {
  for (const std::string_view served : served_paths) {
    if (path == served) {
      return std::string(path);
    }
  }
  return "other";
}

int serve(const serve_options& o, const params& p) {
  // SIGINT and SIGTERM are blocked in every thread (the connection threads and the warm-up thread
  // inherit the mask) and taken synchronously by the watcher below: no code runs in
  // signal-handler context.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  std::optional<service> s;
  try {
    s.emplace(p, o);
  } catch (const std::runtime_error& e) {
    std::cerr << "memkit-bench: ERROR: " << e.what() << "\n";
    return 1;
  }
  const unsigned workers = std::max(1u, o.workers);
  const std::size_t max_connections = std::max<std::size_t>(1, o.max_connections);
  bounded_server svr(max_connections);
  // httplib writes headers and body separately: with Nagle's algorithm on, the body waits for the
  // client's delayed ACK (40 ms on Linux) and every request takes 40 ms.
  svr.set_tcp_nodelay(true);
  s->install(svr);
  const int port = svr.bind(o.host, o.port);
  if (port < 0) {
    std::cerr << "memkit-bench: ERROR: cannot listen on " << o.host << ":" << o.port << "\n";
    return 1;
  }
  std::printf("memkit-bench: listening on http://%s:%d (%u workers, %zu connections)\n",
              o.host.c_str(), port, workers, max_connections);
  std::fflush(stdout);
  // Connections wait in the listen backlog until listen_after_bind below accepts them, a moment
  // from now: /healthz answers while the warm-up runs on its own thread, /readyz once it is done.
  warmup& warm = s->warm_up();
  warm.start();

  std::atomic<bool> done{false};
  std::atomic<bool> warmup_failed{false};
  // The one thread that stops the server: on SIGINT or SIGTERM, or when the warm-up fails.
  std::thread watcher([&] {
    // 100 ms: how soon the watcher notices `done` or a failed warm-up.
    const timespec poll{0, 100'000'000};
    while (!done) {
      const int sig = sigtimedwait(&stop_signals, nullptr, &poll);
      const bool stop_signal = sig == SIGINT || sig == SIGTERM;
      if (stop_signal || warm.current() == warmup::state::failed) {
        if (stop_signal) {
          // One write: the warm-up thread may be printing its progress meanwhile.
          std::cerr << std::string("memkit-bench: ") + (sig == SIGINT ? "SIGINT" : "SIGTERM") +
                           ": finishing in-flight requests\n";
        } else {
          warmup_failed = true;
        }
        warm.cancel();
        // A stop before listen_after_bind has started would be lost: wait until it runs.
        while (!done && !svr.is_running()) {
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        svr.stop();
        return;
      }
    }
  });
  // Returns once stopped, after the worker pool has finished every queued request and joined.
  const bool stopped_cleanly = svr.listen_after_bind();
  done = true;
  watcher.join();
  warm.cancel(); // if listening failed; after a stop it already is
  warm.join();   // after the case it is running
  std::cerr << "memkit-bench: stopped\n";
  return stopped_cleanly && !warmup_failed ? 0 : 1;
}

} // namespace memkit::bench
