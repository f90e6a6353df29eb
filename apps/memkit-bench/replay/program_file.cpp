// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/replay/program_file.cpp: the compiled trace as raw arrays. The file lives only
// while one run of memkit-bench uses it, written and read by the same binary, so it holds the
// structs' bytes as they are, behind a magic that names the layout.

#include "replay/program_file.hpp"

#include <cstring>
#include <fstream>
#include <stdexcept>
#include <type_traits>

namespace memkit::bench::replay {
namespace {

static_assert(std::is_trivially_copyable_v<op> && std::is_trivially_copyable_v<compile_stats>);

/// Names the layout: a change to op or compile_stats changes a size in it.
struct file_header {
  char magic[8] = {'M', 'K', 'R', 'P', 'R', 'O', 'G', '1'};
  std::uint32_t op_size = sizeof(op);
  std::uint32_t stats_size = sizeof(compile_stats);
  std::uint64_t streams = 0;
  std::uint64_t sites = 0;
  std::uint32_t slots = 0;
  std::uint32_t reserved = 0;
};

template <class T>
void put(std::ofstream& out, const T* data, std::size_t n) {
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(sizeof(T) * n));
}

template <class T>
void get(std::ifstream& in, T* data, std::size_t n, const std::string& path) {
  if (!in.read(reinterpret_cast<char*>(data), static_cast<std::streamsize>(sizeof(T) * n))) {
    throw std::runtime_error(path + ": the compiled trace is cut short");
  }
}

} // namespace

void save_program(const program& p, const std::string& path) {
  std::ofstream out(path, std::ios::binary);
  file_header h;
  h.streams = p.streams.size();
  h.sites = p.sites.size();
  h.slots = p.slots;
  put(out, &h, 1);
  put(out, &p.stats, 1);
  put(out, p.sites.data(), p.sites.size());
  for (const auto& s : p.streams) {
    const std::uint64_t n = s.ops.size();
    put(out, &s.thread, 1);
    put(out, &n, 1);
    put(out, s.ops.data(), s.ops.size());
  }
  if (!out.flush()) {
    throw std::runtime_error(path + ": cannot write the compiled trace");
  }
}

program load_program(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw std::runtime_error(path + ": cannot open the compiled trace");
  }
  file_header h;
  const file_header expected;
  get(in, &h, 1, path);
  if (std::memcmp(h.magic, expected.magic, sizeof h.magic) != 0 || h.op_size != expected.op_size ||
      h.stats_size != expected.stats_size) {
    throw std::runtime_error(path + ": not a compiled trace of this memkit-bench");
  }
  program p;
  p.slots = h.slots;
  get(in, &p.stats, 1, path);
  p.sites.resize(h.sites);
  get(in, p.sites.data(), p.sites.size(), path);
  p.streams.resize(h.streams);
  for (auto& s : p.streams) {
    std::uint64_t n = 0;
    get(in, &s.thread, 1, path);
    get(in, &n, 1, path);
    s.ops.resize(n);
    get(in, s.ops.data(), s.ops.size(), path);
  }
  return p;
}

} // namespace memkit::bench::replay
