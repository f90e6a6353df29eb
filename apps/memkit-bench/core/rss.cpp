// apps/memkit-bench/core/rss.cpp: the resident-memory probes.

#include "core/rss.hpp"

#include <fstream>
#include <string>

namespace memkit::bench {

bool reset_peak_rss() noexcept {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  out.flush();
  return static_cast<bool>(out);
}

namespace {

std::size_t status_kib(const char* field) noexcept {
  std::ifstream in("/proc/self/status");
  std::string key;
  while (in >> key) {
    if (key == field) {
      std::size_t kib = 0;
      in >> kib;
      return kib;
    }
  }
  return 0;
}

} // namespace

std::size_t peak_rss_kib() noexcept { return status_kib("VmHWM:"); }

std::size_t rss_kib() noexcept { return status_kib("VmRSS:"); }

} // namespace memkit::bench
