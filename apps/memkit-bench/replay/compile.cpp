// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/replay/compile.cpp: the operations' storage, the causal compiler and the
// verifier.

#include "replay/compile.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include "replay/flat_map.hpp"
#include "replay/series.hpp"

namespace memkit::bench::replay {

op_storage::~op_storage() {
  if (fd_ >= 0) {
    close(fd_);
  }
}

op_storage::op_storage(op_storage&& other) noexcept
    : memory_(std::move(other.memory_)), fd_(std::exchange(other.fd_, -1)), base_(other.base_),
      size_(std::exchange(other.size_, 0)) {}

op_storage& op_storage::operator=(op_storage&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) {
      close(fd_);
    }
    memory_ = std::move(other.memory_);
    fd_ = std::exchange(other.fd_, -1);
    base_ = other.base_;
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

std::uint64_t op_storage::append(const op* ops, std::size_t n) {
  const std::uint64_t at = size_;
  if (fd_ < 0) {
    memory_.insert(memory_.end(), ops, ops + n);
  } else {
    const char* p = reinterpret_cast<const char*>(ops);
    std::size_t left = n * sizeof(op);
    auto where = static_cast<off_t>(base_ + at * sizeof(op));
    while (left != 0) {
      const ssize_t put = pwrite(fd_, p, left, where);
      if (put <= 0) {
        throw std::runtime_error(std::string("cannot write the compiled trace: ") +
                                 std::strerror(errno));
      }
      p += put;
      left -= static_cast<std::size_t>(put);
      where += put;
    }
  }
  size_ += n;
  return at;
}

const op* op_storage::read(std::uint64_t offset, std::uint32_t count, op* scratch) const noexcept {
  if (fd_ < 0) {
    return memory_.data() + offset;
  }
  char* p = reinterpret_cast<char*>(scratch);
  std::size_t left = std::size_t{count} * sizeof(op);
  auto where = static_cast<off_t>(base_ + offset * sizeof(op));
  while (left != 0) {
    const ssize_t got = pread(fd_, p, left, where);
    if (got <= 0) {
      std::fprintf(stderr, "memkit-bench replay: cannot read the compiled trace: %s\n",
                   got == 0 ? "it is cut short" : std::strerror(errno));
      std::abort();
    }
    p += got;
    left -= static_cast<std::size_t>(got);
    where += got;
  }
  return scratch;
}

stream_cursor::stream_cursor(const program& p, std::uint32_t s) noexcept
    : p_(p), chunk_(p.streams[s].first_chunk),
      // No chunk is longer than its stream: a short stream gets a buffer of a page or two.
      scratch_bytes_(
          (std::min<std::uint64_t>(p.streams[s].ops, max_chunk_ops) * sizeof(op) + 4095) / 4096 *
          4096) {}

stream_cursor::~stream_cursor() {
  if (scratch_ != nullptr) {
    munmap(scratch_, scratch_bytes_);
  }
}

void stream_cursor::prepare() noexcept {
  if (scratch_ != nullptr || p_.storage.in_memory() || scratch_bytes_ == 0) {
    return;
  }
  void* m =
      mmap(nullptr, scratch_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) {
    std::fprintf(stderr, "memkit-bench replay: out of memory for a stream's buffer\n");
    std::abort();
  }
  std::memset(m, 0, scratch_bytes_);
  scratch_ = static_cast<op*>(m);
}

const op* stream_cursor::next_chunk(std::uint32_t& n) noexcept {
  if (chunk_ == no_chunk) {
    n = 0;
    return nullptr;
  }
  const chunk& c = p_.chunks[chunk_];
  chunk_ = c.next;
  n = c.count;
  prepare();
  return p_.storage.read(c.offset, c.count, scratch_);
}

std::vector<op> ops_of(const program& p, std::uint32_t s) {
  std::vector<op> out;
  stream_cursor c(p, s);
  std::uint32_t n = 0;
  while (const op* ops = c.next_chunk(n)) {
    out.insert(out.end(), ops, ops + n);
  }
  return out;
}

program make_program(const std::vector<std::pair<std::uint32_t, std::vector<op>>>& streams,
                     std::uint32_t slots) {
  program p;
  p.slots = slots;
  for (const auto& [thread, ops] : streams) {
    stream s;
    s.thread = thread;
    s.ops = ops.size();
    if (!ops.empty()) {
      s.first_chunk = static_cast<std::uint32_t>(p.chunks.size());
      p.chunks.push_back({p.storage.append(ops.data(), ops.size()),
                          static_cast<std::uint32_t>(ops.size()), no_chunk});
    }
    p.streams.push_back(s);
  }
  return p;
}

namespace {

/// Where a stream's operation is: the stream and how many of its operations are done once this
/// one is (its index + 1), the count a wait for it names.
struct position {
  std::uint32_t stream = 0;
  std::uint64_t done = 0;
};

/// A block live in the trace: 24 bytes, 32 with its address in the table.
struct live_block {
  std::uint32_t slot = 0;
  std::uint32_t last_stream = 0; ///< its allocation or last realloc: the stream...
  std::uint64_t last_done = 0;   ///< ...and its count there
  std::uint64_t size = 0;
};

/// \returns the key of the pair (stream `s` waits for stream `on`): never 0.
std::uint64_t pair_key(std::uint32_t s, std::uint32_t on) noexcept {
  return (std::uint64_t{s} + 1) << 32 | on;
}

/// Addresses freed and not allocated since are remembered (to tell a double free from a free of
/// an unknown block) up to this many; then forgotten at once, so a program that frees ever new
/// addresses costs bounded memory. A double free of an address forgotten counts as unknown.
constexpr std::size_t freed_limit = std::size_t{1} << 20;

} // namespace

class causal_compiler::impl {
public:
  explicit impl(op_storage storage) { p_.storage = std::move(storage); }

  void add(const event& e) {
    if (live_series_.due(p_.stats.events)) {
      live_series_.add(p_.stats.events, live_bytes_);
    }
    ++p_.stats.events;
    switch (e.kind) {
    case event_kind::alloc:
      allocate(stream_of(e.thread), e.result, e.size, e.alignment, e.site);
      break;
    case event_kind::free:
      release(stream_of(e.thread), e.ptr);
      break;
    case event_kind::realloc:
      reallocate(stream_of(e.thread), e);
      break;
    case event_kind::thread_start:
      start(e.thread);
      break;
    case event_kind::thread_exit:
      exit(stream_of(e.thread));
      break;
    }
  }

  program finish() {
    for (std::uint32_t s = 0; s < p_.streams.size(); ++s) {
      flush(s);
    }
    p_.stats.leaked = live_.size();
    p_.live_over_time = live_series_.take();
    return std::move(p_);
  }

private:
  /// What the compiler keeps per stream besides the program's record of it.
  struct stream_state {
    std::vector<op> buffer; ///< operations not yet in the storage
    std::uint32_t capacity = min_chunk_ops;
    std::uint32_t last_chunk = no_chunk;
    std::vector<std::uint32_t> free_slots; ///< its freed slots, a stack
    bool exited = false;
    std::size_t running_at = 0; ///< its index in running_ until it exits
  };

  std::uint32_t stream_of(std::uint32_t thread) {
    const auto [it, added] =
        streams_.try_emplace(thread, static_cast<std::uint32_t>(p_.streams.size()));
    if (added) {
      stream s;
      s.thread = thread;
      p_.streams.push_back(s);
      states_.emplace_back();
      states_.back().running_at = running_.size();
      running_.push_back(static_cast<std::uint32_t>(p_.streams.size() - 1));
      p_.stats.peak_threads = std::max<std::uint64_t>(p_.stats.peak_threads, running_.size());
    }
    return it->second;
  }

  /// \effects makes a thread that starts wait for what preceded its start (the file comment).
  void start(std::uint32_t thread) {
    const std::size_t before = p_.streams.size();
    const std::uint32_t s = stream_of(thread);
    if (p_.streams.size() == before) {
      return; // a second start, or one after its calls: nothing to order
    }
    const std::uint64_t waits = p_.stats.waits;
    for (const position& at : exits_) {
      order_after(s, at);
    }
    exits_.clear();
    for (const std::uint32_t other : running_) {
      order_after(s, {other, p_.streams[other].ops});
    }
    p_.streams[s].start_waits = static_cast<std::uint32_t>(p_.stats.waits - waits);
    p_.stats.start_waits += p_.stats.waits - waits;
  }

  /// \effects ends stream `s`: later starts wait for its last operation; its buffer is freed.
  void exit(std::uint32_t s) {
    stream_state& st = states_[s];
    if (st.exited) {
      return;
    }
    st.exited = true;
    // Out of the running list: the last one takes its place.
    running_[st.running_at] = running_.back();
    states_[running_[st.running_at]].running_at = st.running_at;
    running_.pop_back();
    exits_.push_back({s, p_.streams[s].ops});
    flush(s);
    st.buffer = {};
  }

  std::uint32_t site_of(std::uint32_t site, std::uint64_t size) {
    const auto [it, added] = sites_.try_emplace(site, static_cast<std::uint32_t>(p_.sites.size()));
    if (added) {
      p_.sites.push_back(site);
      p_.largest.push_back(0);
    }
    p_.largest[it->second] = std::max(p_.largest[it->second], size);
    return it->second;
  }

  /// Appends `o` to stream `s`. \returns where it is.
  position emit(std::uint32_t s, const op& o) {
    stream_state& st = states_[s];
    st.buffer.push_back(o);
    const std::uint64_t done = ++p_.streams[s].ops;
    if (st.buffer.size() >= st.capacity) {
      flush(s);
    }
    return {s, done};
  }

  /// \effects moves stream `s`'s buffered operations to the storage as one chunk.
  void flush(std::uint32_t s) {
    stream_state& st = states_[s];
    if (st.buffer.empty()) {
      return;
    }
    const auto index = static_cast<std::uint32_t>(p_.chunks.size());
    const auto n = static_cast<std::uint32_t>(st.buffer.size());
    p_.chunks.push_back({p_.storage.append(st.buffer.data(), n), n, no_chunk});
    if (st.last_chunk == no_chunk) {
      p_.streams[s].first_chunk = index;
    } else {
      p_.chunks[st.last_chunk].next = index;
    }
    st.last_chunk = index;
    st.buffer.clear();
    st.capacity = std::min(st.capacity * 2, max_chunk_ops);
  }

  /// \effects makes stream `s` wait for `at` unless it is its own or an earlier wait covers it.
  void order_after(std::uint32_t s, position at) {
    if (at.stream == s || at.done == 0) {
      return;
    }
    std::uint64_t& waited = *waited_.insert(pair_key(s, at.stream)).first;
    if (waited >= at.done) {
      return;
    }
    waited = at.done;
    emit(s, {op_kind::wait, at.done, at.stream});
    ++p_.stats.waits;
  }

  /// \returns a free slot for stream `s`: its own most recently freed, else one another stream
  /// freed (after a wait for that free), else a new one, only when every slot is live.
  std::uint32_t take_slot(std::uint32_t s) {
    auto& own = states_[s].free_slots;
    if (!own.empty()) {
      const std::uint32_t slot = own.back();
      own.pop_back();
      return slot;
    }
    while (!donors_.empty()) {
      auto& theirs = states_[donors_.back()].free_slots;
      if (theirs.empty()) {
        donors_.pop_back();
        continue;
      }
      const std::uint32_t slot = theirs.back();
      theirs.pop_back();
      order_after(s, freed_at_[slot]);
      return slot;
    }
    freed_at_.emplace_back();
    return p_.slots++;
  }

  void give_slot(std::uint32_t s, std::uint32_t slot, position at) {
    freed_at_[slot] = at;
    auto& own = states_[s].free_slots;
    if (own.empty()) {
      donors_.push_back(s);
    }
    own.push_back(slot);
  }

  void forget_freed(std::uint64_t ptr) { freed_.erase(ptr); }

  void remember_freed(std::uint64_t ptr) {
    if (freed_.size() >= freed_limit) {
      freed_.clear();
    }
    freed_.insert(ptr);
  }

  void allocate(std::uint32_t s, std::uint64_t ptr, std::uint64_t size, std::uint32_t alignment,
                std::uint32_t site) {
    if (ptr == 0) {
      return; // a failed allocation: nothing to release later
    }
    if (live_.find(ptr) != nullptr) {
      ++p_.stats.reused_live;
      release_live(s, ptr);
    }
    forget_freed(ptr);
    const std::uint32_t slot = take_slot(s);
    const auto align_log2 =
        static_cast<std::uint8_t>(alignment > 1 ? std::bit_width(alignment - 1U) : 0);
    size = std::min(size, op::max_arg);
    const position at = emit(s, {op_kind::alloc, size, slot, site_of(site, size), align_log2});
    *live_.insert(ptr).first = {slot, at.stream, at.done, size};
    note_live(size, 1);
    p_.stats.max_size = std::max(p_.stats.max_size, size);
  }

  void release(std::uint32_t s, std::uint64_t ptr) {
    if (ptr == 0) {
      return;
    }
    if (live_.find(ptr) == nullptr) {
      ++(freed_.find(ptr) != nullptr ? p_.stats.double_frees : p_.stats.unknown_frees);
      return;
    }
    release_live(s, ptr);
    remember_freed(ptr);
  }

  /// \returns the live block at `ptr`, removed from the table, with the stream ordered after its
  /// last operation. \requires it is live.
  live_block take_live(std::uint32_t s, std::uint64_t ptr) {
    const live_block b = *live_.find(ptr);
    live_.erase(ptr);
    if (b.last_stream != s) {
      ++p_.stats.cross_thread;
    }
    order_after(s, {b.last_stream, b.last_done});
    return b;
  }

  void release_live(std::uint32_t s, std::uint64_t ptr) {
    const live_block b = take_live(s, ptr);
    const position at = emit(s, {op_kind::free, 0, b.slot});
    give_slot(s, b.slot, at);
    note_live(b.size, -1);
  }

  void reallocate(std::uint32_t s, const event& e) {
    if (e.ptr == 0) {
      allocate(s, e.result, e.size, 0, e.site);
      return;
    }
    if (e.result == 0) {
      if (e.size == 0) {
        release(s, e.ptr);
      } else {
        ++p_.stats.failed_reallocs;
      }
      return;
    }
    if (live_.find(e.ptr) == nullptr) {
      ++p_.stats.unknown_reallocs;
      allocate(s, e.result, e.size, 0, e.site);
      return;
    }
    live_block b = take_live(s, e.ptr);
    if (e.result != e.ptr) {
      remember_freed(e.ptr);
      if (live_.find(e.result) != nullptr) {
        ++p_.stats.reused_live;
        release_live(s, e.result);
      }
      forget_freed(e.result);
    }
    const std::uint64_t size = std::min(e.size, op::max_arg);
    const position at = emit(s, {op_kind::realloc, size, b.slot, site_of(e.site, size)});
    b.last_stream = at.stream;
    b.last_done = at.done;
    note_live(b.size, -1);
    b.size = size;
    note_live(b.size, 1);
    *live_.insert(e.result).first = b;
    p_.stats.max_size = std::max(p_.stats.max_size, size);
  }

  void note_live(std::uint64_t size, int direction) {
    if (direction > 0) {
      live_bytes_ += size;
      p_.stats.peak_live = std::max(p_.stats.peak_live, ++live_blocks_);
      p_.stats.peak_live_bytes = std::max(p_.stats.peak_live_bytes, live_bytes_);
    } else {
      live_bytes_ -= size;
      --live_blocks_;
    }
  }

  program p_;
  std::vector<stream_state> states_;
  std::unordered_map<std::uint32_t, std::uint32_t> streams_; ///< thread id -> stream
  std::unordered_map<std::uint32_t, std::uint32_t> sites_;   ///< site id -> dense index
  flat_map<live_block> live_;                                ///< address -> block
  flat_map<bool> freed_;               ///< addresses freed and not allocated since
  flat_map<std::uint64_t> waited_;     ///< pair_key(s, t) -> how far s waited for t
  std::vector<std::uint32_t> donors_;  ///< streams whose free slots may be non-empty
  std::vector<position> freed_at_;     ///< per slot: the free that released it last
  std::vector<position> exits_;        ///< threads' ends since the last thread start
  std::vector<std::uint32_t> running_; ///< the streams whose threads have not exited
  std::uint64_t live_bytes_ = 0;
  std::uint64_t live_blocks_ = 0;
  thinned_series live_series_{series_limit};
};

causal_compiler::causal_compiler(op_storage storage)
    : impl_(std::make_unique<impl>(std::move(storage))) {}
causal_compiler::~causal_compiler() = default;
void causal_compiler::add(const event& e) { impl_->add(e); }
program causal_compiler::finish() { return impl_->finish(); }

program compile(const event_list& events) {
  causal_compiler c;
  for (const event& e : events) {
    c.add(e);
  }
  return c.finish();
}

verify_result verify(const program& p) {
  verify_result r;
  const std::size_t n = p.streams.size();
  // Per stream: its cursor, the chunk it is in and its next operation. A cursor holds a chunk's
  // buffer only while its stream is under way.
  struct run {
    std::unique_ptr<stream_cursor> cursor;
    const op* ops = nullptr;
    std::uint32_t count = 0;
    std::uint32_t at = 0;
    std::uint64_t next = 0;
  };
  std::vector<run> runs(n);
  // How far each stream waited for each other: only the pairs that ever wait are kept.
  flat_map<std::uint64_t> waited;
  struct slot_state {
    bool live = false;
    bool used = false;
    std::uint32_t stream = 0;
    std::uint64_t done = 0;
  };
  std::vector<slot_state> slots(p.slots);
  const auto fail = [&](std::size_t s, const std::string& what) {
    std::ostringstream m;
    m << "stream " << s << " (thread " << p.streams[s].thread << "), operation " << runs[s].next
      << ": " << what;
    r.error = m.str();
    return r;
  };
  for (std::size_t s = 0; s < n; ++s) {
    if (p.streams[s].start_waits > p.streams[s].ops) {
      return fail(s, "has more start waits than operations");
    }
  }
  for (bool progressed = true; progressed;) {
    progressed = false;
    for (std::size_t s = 0; s < n; ++s) {
      run& x = runs[s];
      while (x.next < p.streams[s].ops) {
        if (x.at == x.count) {
          if (!x.cursor) {
            x.cursor = std::make_unique<stream_cursor>(p, static_cast<std::uint32_t>(s));
          }
          x.ops = x.cursor->next_chunk(x.count);
          x.at = 0;
          if (x.ops == nullptr) {
            return fail(s, "the stream's operations end early");
          }
        }
        const op& o = x.ops[x.at];
        if (x.next < p.streams[s].start_waits && o.kind() != op_kind::wait) {
          return fail(s, "is not one of the stream's " + std::to_string(p.streams[s].start_waits) +
                             " start waits");
        }
        if (o.kind() == op_kind::wait) {
          if (o.slot() >= n || o.slot() == s) {
            return fail(s, "waits for stream " + std::to_string(o.slot()));
          }
          if (runs[o.slot()].next < o.arg()) {
            break; // blocked: try the others
          }
          std::uint64_t& w =
              *waited.insert(pair_key(static_cast<std::uint32_t>(s), o.slot())).first;
          w = std::max(w, o.arg());
        } else {
          if (o.slot() >= slots.size()) {
            return fail(s, "slot " + std::to_string(o.slot()) + " out of range");
          }
          slot_state& st = slots[o.slot()];
          const bool wants_live = o.kind() != op_kind::alloc;
          if (st.live != wants_live) {
            return fail(s, wants_live ? "releases slot " + std::to_string(o.slot()) +
                                            ", which holds no block"
                                      : "allocates into slot " + std::to_string(o.slot()) +
                                            ", which holds a live block");
          }
          if (st.used && st.stream != s) {
            const std::uint64_t* w =
                waited.find(pair_key(static_cast<std::uint32_t>(s), st.stream));
            if (w == nullptr || *w < st.done) {
              return fail(s, "touches slot " + std::to_string(o.slot()) + " after stream " +
                                 std::to_string(st.stream) + " without waiting for it");
            }
          }
          st = {o.kind() != op_kind::free, true, static_cast<std::uint32_t>(s), x.next + 1};
        }
        ++x.at;
        ++x.next;
        ++r.checked;
        progressed = true;
      }
      if (x.next == p.streams[s].ops) {
        x.cursor.reset();
      }
    }
  }
  for (std::size_t s = 0; s < n; ++s) {
    if (runs[s].next < p.streams[s].ops) {
      return fail(s, "waits for ever (stream " + std::to_string(runs[s].ops[runs[s].at].slot()) +
                         " never gets that far)");
    }
  }
  r.ok = true;
  return r;
}

} // namespace memkit::bench::replay
