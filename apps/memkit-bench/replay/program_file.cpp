// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/replay/program_file.cpp: the compiled trace as raw arrays. The file lives only
// while one run of memkit-bench uses it, written and read by the same binary, so it holds the
// structs' bytes as they are, behind a magic that names the layout: the header, the operations,
// then the streams, chunks, sites and statistics (known only once the last operation is written).

#include "replay/program_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <type_traits>

namespace memkit::bench::replay {
namespace {

static_assert(std::is_trivially_copyable_v<op> && std::is_trivially_copyable_v<compile_stats> &&
              std::is_trivially_copyable_v<stream> && std::is_trivially_copyable_v<chunk>);

/// Names the layout: a change to a struct changes a size in it.
struct file_header {
  char magic[8] = {'M', 'K', 'R', 'P', 'R', 'O', 'G', '2'};
  std::uint32_t op_size = sizeof(op);
  std::uint32_t stats_size = sizeof(compile_stats);
  std::uint32_t stream_size = sizeof(stream);
  std::uint32_t chunk_size = sizeof(chunk);
  std::uint64_t ops = 0;
  std::uint64_t streams = 0;
  std::uint64_t chunks = 0;
  std::uint64_t sites = 0;
  std::uint32_t slots = 0;
  std::uint32_t reserved = 0;
};

/// Where the operations start: after the header, aligned to a cache line.
constexpr std::uint64_t ops_base = (sizeof(file_header) + 63) / 64 * 64;

void put(int fd, const void* data, std::size_t bytes, std::uint64_t& at) {
  const char* p = static_cast<const char*>(data);
  while (bytes != 0) {
    const ssize_t n = pwrite(fd, p, bytes, static_cast<off_t>(at));
    if (n <= 0) {
      throw std::runtime_error(std::string("cannot write the compiled trace: ") +
                               std::strerror(errno));
    }
    p += n;
    at += static_cast<std::uint64_t>(n);
    bytes -= static_cast<std::size_t>(n);
  }
}

template <class T>
void put(int fd, const std::vector<T>& v, std::uint64_t& at) {
  put(fd, v.data(), v.size() * sizeof(T), at);
}

void get(int fd, void* data, std::size_t bytes, std::uint64_t& at, const std::string& path) {
  char* p = static_cast<char*>(data);
  while (bytes != 0) {
    const ssize_t n = pread(fd, p, bytes, static_cast<off_t>(at));
    if (n <= 0) {
      throw std::runtime_error(path + ": the compiled trace is cut short");
    }
    p += n;
    at += static_cast<std::uint64_t>(n);
    bytes -= static_cast<std::size_t>(n);
  }
}

template <class T>
void get(int fd, std::vector<T>& v, std::size_t n, std::uint64_t& at, const std::string& path) {
  v.resize(n);
  get(fd, v.data(), n * sizeof(T), at, path);
}

/// \effects writes `p`'s tables, with `chunks` for its chunks, after the `ops` operations in
/// file `fd`, then the header.
void write_tables(int fd, std::uint64_t ops, const program& p, const std::vector<chunk>& chunks) {
  std::uint64_t at = ops_base + ops * sizeof(op);
  put(fd, &p.stats, sizeof p.stats, at);
  put(fd, p.sites, at);
  put(fd, p.largest, at);
  put(fd, p.streams, at);
  put(fd, chunks, at);
  if (ftruncate(fd, static_cast<off_t>(at)) != 0) {
    throw std::runtime_error(std::string("cannot write the compiled trace: ") +
                             std::strerror(errno));
  }
  file_header h;
  h.ops = ops;
  h.streams = p.streams.size();
  h.chunks = chunks.size();
  h.sites = p.sites.size();
  h.slots = p.slots;
  at = 0;
  put(fd, &h, sizeof h, at);
}

int open_new(const std::string& path) {
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    throw std::runtime_error(path + ": cannot create the compiled trace: " + std::strerror(errno));
  }
  return fd;
}

} // namespace

op_storage create_program_file(const std::string& path) {
  return op_storage(open_new(path), ops_base, 0);
}

void finish_program_file(const program& p) {
  write_tables(p.storage.fd(), p.storage.size(), p, p.chunks);
}

void save_program(const program& p, const std::string& path) {
  op_storage out(open_new(path), ops_base, 0);
  std::vector<chunk> chunks = p.chunks;
  std::vector<op> scratch(max_chunk_ops);
  for (chunk& c : chunks) {
    scratch.resize(std::max<std::size_t>(scratch.size(), c.count));
    c.offset = out.append(p.storage.read(c.offset, c.count, scratch.data()), c.count);
  }
  write_tables(out.fd(), out.size(), p, chunks);
}

program load_program(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    throw std::runtime_error(path + ": cannot open the compiled trace");
  }
  program p;
  p.storage = op_storage(fd, ops_base, 0); // closes it on a throw; replaced once the size is known
  file_header h;
  const file_header expected;
  std::uint64_t at = 0;
  get(fd, &h, sizeof h, at, path);
  if (std::memcmp(h.magic, expected.magic, sizeof h.magic) != 0 || h.op_size != expected.op_size ||
      h.stats_size != expected.stats_size || h.stream_size != expected.stream_size ||
      h.chunk_size != expected.chunk_size) {
    throw std::runtime_error(path + ": not a compiled trace of this memkit-bench");
  }
  struct stat st {};
  const std::uint64_t tables = sizeof(compile_stats) +
                               h.sites * (sizeof(std::uint32_t) + sizeof(std::uint64_t)) +
                               h.streams * sizeof(stream) + h.chunks * sizeof(chunk);
  if (fstat(fd, &st) != 0 ||
      static_cast<std::uint64_t>(st.st_size) != ops_base + h.ops * sizeof(op) + tables) {
    throw std::runtime_error(path + ": the compiled trace is cut short");
  }
  at = ops_base + h.ops * sizeof(op);
  p.slots = h.slots;
  get(fd, &p.stats, sizeof p.stats, at, path);
  get(fd, p.sites, h.sites, at, path);
  get(fd, p.largest, h.sites, at, path);
  get(fd, p.streams, h.streams, at, path);
  get(fd, p.chunks, h.chunks, at, path);
  for (const chunk& c : p.chunks) {
    if (c.offset + c.count > h.ops || (c.next != no_chunk && c.next >= h.chunks)) {
      throw std::runtime_error(path + ": not a compiled trace of this memkit-bench");
    }
  }
  for (const stream& s : p.streams) {
    if (s.first_chunk != no_chunk && s.first_chunk >= h.chunks) {
      throw std::runtime_error(path + ": not a compiled trace of this memkit-bench");
    }
  }
  p.storage = op_storage(dup(fd), ops_base, h.ops);
  return p;
}

} // namespace memkit::bench::replay
