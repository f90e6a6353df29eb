// apps/memkit-bench/harness.cpp: the registry and the peak-RSS probes.

#include "harness.hpp"

#include <fstream>

namespace memkit::bench {

bool reset_peak_rss() noexcept {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  out.flush();
  return static_cast<bool>(out);
}

std::size_t peak_rss_kib() noexcept {
  std::ifstream in("/proc/self/status");
  std::string key;
  while (in >> key) {
    if (key == "VmHWM:") {
      std::size_t kib = 0;
      in >> kib;
      return kib;
    }
  }
  return 0;
}

const workload& registry::add_workload(workload w) {
  workloads_.push_back(std::make_unique<workload>(std::move(w)));
  return *workloads_.back();
}

} // namespace memkit::bench
