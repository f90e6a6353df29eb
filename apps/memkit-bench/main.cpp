// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/main.cpp: the command line. Batch mode (no subcommand) measures and prints
// (batch.hpp); `serve` serves the workloads over HTTP and `load` drives such a server
// (serve/serve.hpp); `replay` and `advise` work on a trace of a program's allocations
// (replay/command.hpp).

#include <iostream>
#include <string>

#include <CLI/CLI.hpp>
#include <memkit/version.hpp>

#include "batch.hpp"
#include "core/params.hpp"
#include "output/markdown.hpp"
#include "output/targets.hpp"
#include "replay/command.hpp"
#include "serve/serve.hpp"

int main(int argc, char** argv) {
  memkit::bench::batch_options o;
  o.targets_file = memkit::bench::default_targets_file();
  CLI::App app{
      "memkit-bench: realistic workloads (docs/BENCHMARKS.md) against every memkit strategy and "
      "every peer allocator, side by side. Tables on stdout, progress on stderr."};
  app.add_option("--workloads", o.workloads,
                 "workloads to run, by name or prefix (e.g. json-tree,pairs); default: all")
      ->delimiter(',');
  app.add_option("--variants", o.variants,
                 "variants to run (e.g. std,memkit-arena,mimalloc); default: all")
      ->delimiter(',');
  app.add_option("--processes", o.processes,
                 "processes per variant, each a fresh layout draw, interleaved across variants; "
                 "ratios get 95% intervals over them (default 5; docs/method.md)")
      ->check(CLI::Range(1u, 1000u));
  app.add_option("--repeat", o.repeat, "rounds of the whole set within each process (default 1)")
      ->check(CLI::Range(1u, 1000u));
  app.add_option("--json", o.json_file, "write the results as JSON to FILE");
  app.add_option("--csv", o.csv_file, "write the results as CSV to FILE");
  app.add_option("--markdown", o.markdown_file,
                 "write the run's summary as Markdown to FILE (docs/results/README.md)");
  app.add_option("--report", o.report_dir,
                 "write PNG charts and index.html to DIR (needs python3-matplotlib)");
  app.set_version_flag("--version", "memkit-bench " MEMKIT_VERSION_STRING);
  app.add_flag("--list", o.list, "list the workloads and the variants that fit each, then exit");
  app.add_option("--targets", o.targets_file,
                 "the speed targets to check (default: " + o.targets_file + ")");
  memkit::bench::add_options(app, o.p);
  app.add_flag("--as-child", o.as_child, "internal: run as one process of a run")->group("");
  // 0.1's name for --sharing-threads, kept for 0.2.x (CHANGELOG.md); hidden from --help.
  app.add_option_function<unsigned>(
         "--threads",
         [&o](unsigned n) {
           std::cerr << "memkit-bench: --threads is deprecated and goes in 0.3; use "
                        "--sharing-threads\n";
           o.p.sharing_threads = n;
         })
      ->group("");
  app.add_option("--as-replacement", o.as_replacement,
                 "internal: run as one process of a global replacement")
      ->group("");

  memkit::bench::serve_options so;
  CLI::App* serve = app.add_subcommand(
      "serve", "serve the workloads over HTTP: GET /healthz, /readyz (200 once warm), /info, "
               "/run?workload=W&variant=V&iters=N and /metrics (Prometheus) until SIGINT or "
               "SIGTERM (docs/SERVE.md); batch mode's workload options (--scale, --tree-depth, "
               "...) apply, before or after 'serve'");
  serve->add_option("--host", so.host, "address to listen on (default 127.0.0.1)")
      ->envname("MEMKIT_BENCH_HOST");
  serve->add_option("--port", so.port, "port to listen on, 0 for any free one (default 8080)")
      ->envname("MEMKIT_BENCH_PORT")
      ->check(CLI::Range(0, 65535));
  serve->add_option("--workers", so.workers, "/run requests that run at once (default 4)")
      ->check(CLI::Range(1u, 256u));
  // 0.1's name for --workers, kept for 0.2.x (CHANGELOG.md); hidden from --help.
  serve
      ->add_option_function<unsigned>(
          "--threads",
          [&so](unsigned n) {
            std::cerr << "memkit-bench serve: --threads is deprecated and goes in 0.3; use "
                         "--workers\n";
            so.workers = n;
          })
      ->check(CLI::Range(1u, 256u))
      ->group("");
  serve
      ->add_option("--max-connections", so.max_connections,
                   "connections served at once, a thread each; more wait (default 512)")
      ->check(CLI::Range(std::size_t{1}, std::size_t{65536}));
  serve->add_flag("--log-requests{-}", so.log_requests,
                  "write one JSON line per request to stderr, or with =FILE append to FILE");
  serve->add_option("--warmup", so.warmup,
                    "timed warm-up iterations of every served case, run after the server "
                    "listens; /readyz answers 200 once they are done (default 2)");

  memkit::bench::load_options lo;
  CLI::App* load = app.add_subcommand(
      "load", "drive a serve-mode server: N keep-alive clients for T seconds, every answer "
              "checked; prints counts, requests/s and latencies as JSON, exits 1 on any failure");
  load->add_option("--host", lo.host, "server address (default 127.0.0.1)")
      ->envname("MEMKIT_BENCH_HOST");
  // 0 passes the check: CLI11 reads MEMKIT_BENCH_PORT for every subcommand, and serve's 0 is valid.
  load->add_option("--port", lo.port, "server port (default 8080)")
      ->envname("MEMKIT_BENCH_PORT")
      ->check(CLI::Range(0, 65535));
  load->add_option("--connections", lo.connections, "concurrent clients (default 4)")
      ->check(CLI::Range(1u, 256u));
  load->add_option("--seconds", lo.seconds, "how long to send (default 10)")
      ->check(CLI::Range(0.1, 3600.0));
  load->add_option("--workload", lo.workload, "workload of the /run requests (default json-tree)");
  load->add_option("--variants", lo.variants,
                   "variants to cycle through (default: every one the server serves for it)")
      ->delimiter(',');
  load->add_option("--iters", lo.iters, "iters of every /run request (default 1)")
      ->check(CLI::Range(memkit::bench::min_serve_iters, memkit::bench::max_serve_iters));
  load->add_option("--bad-every", lo.bad_every,
                   "make every n-th request a bad one (400s and a 404; default 0: none)");
  std::string markdown_input;
  std::string markdown_output;
  bool headline = false;
  CLI::App* markdown = app.add_subcommand(
      "markdown", "write the Markdown summary of a results document (--json's file) without "
                  "running anything, as --markdown would have (docs/results/README.md)");
  markdown->add_option("results", markdown_input, "the results document")
      ->required()
      ->check(CLI::ExistingFile);
  markdown->add_flag("--headline", headline,
                     "only the headline table: per workload, std, the fastest memkit variant and "
                     "the fastest peer (docs/BENCHMARKS.md)");
  markdown->add_option("--output", markdown_output, "write to FILE instead of stdout");
  memkit::bench::replay::replay_commands rc;
  memkit::bench::replay::add_replay_commands(app, rc);
  app.require_subcommand(0, 1);
  serve->fallthrough(); // the workload options may follow "serve"

  CLI11_PARSE(app, argc, argv);
  if (*serve) {
    return memkit::bench::serve(so, o.p);
  }
  if (*load) {
    return memkit::bench::load(lo);
  }
  if (const int status = memkit::bench::replay::run_replay_commands(rc); status != -1) {
    return status;
  }
  if (*markdown) {
    return memkit::bench::write_markdown(markdown_input, headline, markdown_output);
  }
  return memkit::bench::run_batch(o);
}
