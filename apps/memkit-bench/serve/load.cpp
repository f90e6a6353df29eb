// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/serve/load.cpp: `memkit-bench load`: a bounded number of keep-alive clients
// drive a serve-mode server for a bounded time, mixing in bad requests, checking every answer.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <iostream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "core/summary.hpp"
#include "serve/serve.hpp"

namespace memkit::bench {
namespace {

using json = nlohmann::json;
using clock = std::chrono::steady_clock;

/// A request and the answer it must get: for a bad one, the status and the parameter (or path)
/// its JSON error names.
struct planned {
  std::string target;  ///< path and query
  std::string variant; ///< the variant of a good /run, "" for a bad request
  int status = 200;
  std::string names; ///< the "parameter" (400) or "path" (404) a bad request's error names
};

/// The bad requests mixed into the load, one after another: every kind of 400 and a 404.
std::vector<planned> bad_requests(const load_options& o) {
  const std::string run = "/run?workload=" + o.workload + "&variant=std&iters=";
  return {{"/run?workload=no-such-workload&variant=std&iters=1", "", 400, "workload"},
          {"/run?workload=" + o.workload + "&variant=no-such-variant&iters=1", "", 400, "variant"},
          {run + "0", "", 400, "iters"},
          {run + "10001", "", 400, "iters"},
          {run + "12abc", "", 400, "iters"},
          {"/run?workload=" + o.workload + "&variant=mimalloc&iters=1", "", 400, "variant"},
          {"/run?workload=false-sharing&variant=std&iters=1", "", 400, "workload"},
          {"/no-such-path", "", 404, "/no-such-path"}};
}

/// The label the server counts a request under.
std::string counted_path(const std::string& target) {
  return path_label(std::string_view(target).substr(0, target.find('?')));
}

/// \returns "" if `res` is the answer `p` must get, else what is wrong.
std::string check(const planned& p, const load_options& o, const httplib::Result& res,
                  double& workload_us) {
  if (!res) {
    return "no response: " + httplib::to_string(res.error());
  }
  if (res->status != p.status) {
    return "status " + std::to_string(res->status) + ", wanted " + std::to_string(p.status);
  }
  const json body = json::parse(res->body, nullptr, false);
  if (body.is_discarded()) {
    return "the body is not JSON";
  }
  if (p.variant.empty()) {
    const char* key = p.status == 404 ? "path" : "parameter";
    return body.value(key, "") == p.names && body.contains("error")
               ? ""
               : "error body does not name " + p.names + ": " + res->body;
  }
  if (body.value("workload", "") != o.workload || body.value("variant", "") != p.variant ||
      body.value("iterations", std::size_t{0}) != o.iters || !body.value("hash_ok", false)) {
    return "wrong record: " + res->body;
  }
  workload_us =
      body.value("cold_us", 0.0) + body.value("mean_us", 0.0) * static_cast<double>(o.iters);
  return "";
}

struct tally {
  std::map<std::string, std::map<int, std::size_t>> by_path_code;
  std::map<std::string, std::vector<double>> latency_us; ///< good requests, by variant
  std::map<std::string, double> workload_us;             ///< summed, by variant
  std::size_t requests = 0;
  std::size_t failures = 0;
  std::vector<std::string> failure_samples;
};

} // namespace

int load(const load_options& o) {
  tally total;
  std::vector<std::string> variants = o.variants;
  if (variants.empty()) {
    httplib::Client cli(o.host, o.port);
    const auto res = cli.Get("/info");
    if (res) {
      ++total.by_path_code["/info"][res->status]; // so the totals are all the server counted
    }
    if (!res || res->status != 200) {
      std::cerr << "memkit-bench load: cannot GET /info from " << o.host << ":" << o.port << "\n";
      return 1;
    }
    const json info = json::parse(res->body);
    for (const auto& w : info.at("workloads")) {
      if (w.at("name") == o.workload) {
        variants = w.at("variants").get<std::vector<std::string>>();
      }
    }
    if (variants.empty()) {
      std::cerr << "memkit-bench load: the server does not serve " << o.workload << "\n";
      return 1;
    }
  }
  const std::vector<planned> bad = bad_requests(o);
  std::atomic<std::size_t> next{0};
  std::atomic<std::size_t> next_good{0};
  std::mutex m;
  const auto start = clock::now();
  const auto deadline =
      start + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(o.seconds));
  auto client = [&] {
    httplib::Client cli(o.host, o.port);
    cli.set_keep_alive(true);
    cli.set_tcp_nodelay(true); // as the server: no 40 ms wait for a delayed ACK
    cli.set_read_timeout(std::chrono::seconds(120));
    tally mine;
    while (clock::now() < deadline) {
      const std::size_t k = next++;
      planned p;
      if (o.bad_every != 0 && k % o.bad_every == o.bad_every - 1) {
        p = bad[(k / o.bad_every) % bad.size()];
      } else {
        p.variant = variants[next_good++ % variants.size()];
        p.target = "/run?workload=" + o.workload + "&variant=" + p.variant +
                   "&iters=" + std::to_string(o.iters);
      }
      const auto sent = clock::now();
      const auto res = cli.Get(p.target);
      const double us = std::chrono::duration<double, std::micro>(clock::now() - sent).count();
      double workload_us = 0;
      const std::string wrong = check(p, o, res, workload_us);
      ++mine.requests;
      if (res) {
        ++mine.by_path_code[counted_path(p.target)][res->status];
      }
      if (!wrong.empty()) {
        ++mine.failures;
        if (mine.failure_samples.size() < 5) {
          mine.failure_samples.push_back(p.target + ": " + wrong);
        }
      } else if (!p.variant.empty()) {
        mine.latency_us[p.variant].push_back(us);
        mine.workload_us[p.variant] += workload_us;
      }
    }
    const std::lock_guard<std::mutex> lock(m);
    total.requests += mine.requests;
    total.failures += mine.failures;
    for (auto& f : mine.failure_samples) {
      total.failure_samples.push_back(std::move(f));
    }
    for (const auto& [path, codes] : mine.by_path_code) {
      for (const auto& [code, n] : codes) {
        total.by_path_code[path][code] += n;
      }
    }
    for (auto& [v, l] : mine.latency_us) {
      auto& all = total.latency_us[v];
      all.insert(all.end(), l.begin(), l.end());
      total.workload_us[v] += mine.workload_us[v];
    }
  };
  std::vector<std::thread> clients;
  for (unsigned i = 0; i < std::max(1u, o.connections); ++i) {
    clients.emplace_back(client);
  }
  for (auto& c : clients) {
    c.join();
  }
  const double elapsed = std::chrono::duration<double>(clock::now() - start).count();

  json by_path_code = json::object();
  for (const auto& [path, codes] : total.by_path_code) {
    for (const auto& [code, n] : codes) {
      by_path_code[path][std::to_string(code)] = n;
    }
  }
  json per_variant = json::object();
  for (auto& [v, l] : total.latency_us) {
    std::sort(l.begin(), l.end());
    double sum = 0;
    for (const double us : l) {
      sum += us;
    }
    const double n = static_cast<double>(l.size());
    per_variant[v] = {
        {"requests", l.size()},
        {"requests_per_s", n / elapsed},
        {"p50_us", percentile(l, 50)},
        {"p99_us", percentile(l, 99)},
        {"mean_us", sum / n},
        {"mean_workload_us", total.workload_us[v] / n},
        {"latency_per_workload", total.workload_us[v] > 0 ? sum / total.workload_us[v] : 0.0}};
  }
  const json out = {{"workload", o.workload},
                    {"iters", o.iters},
                    {"connections", o.connections},
                    {"seconds", elapsed},
                    {"requests", total.requests},
                    {"requests_per_s", static_cast<double>(total.requests) / elapsed},
                    {"failures", total.failures},
                    {"failure_samples", total.failure_samples},
                    {"by_path_code", by_path_code},
                    {"variants", per_variant}};
  std::cout << out.dump(1) << "\n";
  return total.failures == 0 && total.requests > 0 ? 0 : 1;
}

} // namespace memkit::bench
