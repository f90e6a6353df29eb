// SPDX-License-Identifier: BSL-1.0
// An embedded logger's word count with x-containers (docs/background.md#x-containers): every
// string, stream buffer, map node and list node comes from one process-wide thread-caching
// resource (static_allocator's default: size classes in 64 KiB chunks), never straight from the
// general-purpose heap, and the types are plain std containers.
#include <cstdio>
#include <memkit/xcontainers.hpp>

int main() {
  const char* log_lines[] = {"sensor 3 reading ok", "sensor 7 reading high", "sensor 3 reading ok",
                             "pump 1 started after sensor 7 alarm"};
  memkit::xmap<memkit::xstring, int> counts;
  memkit::xlist<memkit::xstring> alarms;
  for (int repeat = 0; repeat < 100; ++repeat) {
    for (const char* line : log_lines) {
      memkit::xstringstream words(line);
      memkit::xstring word;
      while (words >> word) {
        ++counts[word];
      }
      if (memkit::xstring(line).find("alarm") != memkit::xstring::npos) {
        alarms.emplace_back(line);
      }
    }
  }
  memkit::xostringstream report;
  report << "distinct words " << counts.size() << ", 'sensor' x" << counts["sensor"] << ", alarms "
         << alarms.size();
  std::printf("%s\n", report.str().c_str());
  return counts["sensor"] == 400 && alarms.size() == 100 ? 0 : 1;
}
