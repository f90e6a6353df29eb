// SPDX-License-Identifier: BSL-1.0
// bench/trace_stats.cpp: what a trace holds and what it costs on disk (bench/trace_overhead.sh,
// docs/TRACE.md#overhead): events by kind, threads, sites, the file's bytes per event, and how
// reading stopped. Usage: memkit_trace_stats TRACE
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <sys/stat.h>

#include "memkit/trace.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s TRACE\n", argv[0]);
    return 2;
  }
  namespace trace = memkit::trace;
  trace::reader r{std::string(argv[1])};
  trace::event e;
  std::map<std::string, std::size_t> kinds;
  std::set<std::uint32_t> threads;
  std::size_t events = 0;
  std::size_t calls = 0;
  while (r.next(e)) {
    ++events;
    ++kinds[trace::kind_name(e.kind)];
    threads.insert(e.thread);
    calls += trace::role(e.kind) != trace::kind_role::other;
  }
  struct stat st {};
  ::stat(argv[1], &st);
  const auto bytes = static_cast<double>(st.st_size);
  for (const auto& [name, n] : kinds) {
    std::printf("%-40s %zu\n", name.c_str(), n);
  }
  std::printf("events %zu\ncalls %zu\nthreads %zu\nsites %zu\nframes %llu\nbytes %lld\n", events,
              calls, threads.size(), r.site_count(), static_cast<unsigned long long>(r.frames()),
              static_cast<long long>(st.st_size));
  std::printf("bytes_per_event %.3f\nbytes_per_call %.3f\n", events ? bytes / events : 0.0,
              calls ? bytes / calls : 0.0);
  if (r.state() != trace::reader::status::end) {
    std::printf("stopped %s\n", r.message().c_str());
    return 1;
  }
  return 0;
}
