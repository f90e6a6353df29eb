// SPDX-License-Identifier: BSL-1.0
// fuzz/trace_reader_fuzz.cpp: memkit::trace::reader on any bytes (docs/TRACE.md#bad-input). The
// first byte picks the mode: even, the rest is a whole trace file; odd, the rest is one frame's
// events written whole (as the recorder's buffer holds them), split into the format's streams by
// trace::to_streams (or, when they do not parse, taken as the payload itself), and wrapped in a
// valid file header and frame header (checksum included) so that mutations reach the event
// decoder instead of stopping at the stream lengths or the checksum. The reader must stop with a
// reason and an offset inside the input, and never crash.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "memkit/trace.hpp"

namespace {

namespace trace = memkit::trace;
namespace codec = memkit::detail::trace_codec;

std::vector<std::uint8_t> wrap_payload(const std::uint8_t* data, std::size_t size) {
  std::vector<std::uint8_t> streams(trace::streams_bound(size));
  std::vector<std::uint8_t> scratch(trace::streams_scratch(size));
  std::size_t n = trace::to_streams(data, size, streams.data(), scratch.data());
  if (n == 0) {
    streams.assign(data, data + size);
    n = size;
  }
  std::vector<std::uint8_t> out(codec::file_header_size + trace::frame_bound(n));
  codec::put_file_header(out.data(), {});
  const std::size_t written =
      trace::write_frame(streams.data(), n, out.data() + codec::file_header_size, nullptr, 0);
  out.resize(codec::file_header_size + written);
  return out;
}

void check(bool condition) {
  if (!condition) {
    std::abort();
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0 || size - 1 > codec::max_raw_size) {
    return 0;
  }
  std::vector<std::uint8_t> bytes = (data[0] & 1) != 0
                                        ? wrap_payload(data + 1, size - 1)
                                        : std::vector<std::uint8_t>(data + 1, data + size);
  const std::size_t total = bytes.size();
  trace::reader r(std::move(bytes));
  trace::event e;
  std::uint64_t events = 0;
  while (r.next(e)) {
    ++events;
    if (e.kind == trace::event_kind::site) {
      check(e.site < r.site_count() && r.site_frames(e.site).size() == e.frame_count);
    }
    if (e.site != trace::no_site) {
      check(e.site < r.site_count());
    }
    check(e.path.size() <= codec::max_path_bytes && e.build_id.size() <= codec::max_build_id_bytes);
  }
  check(r.state() != trace::reader::status::ok);
  check(r.offset() <= total);
  check((r.state() == trace::reader::status::end) == r.message().empty());
  return 0;
}
