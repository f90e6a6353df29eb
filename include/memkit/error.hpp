// SPDX-License-Identifier: BSL-1.0
// memkit/error.hpp: what memkit throws on bad requests and reports on misuse (docs/concepts.md,
// "Errors"; every case is listed in docs/bad-input.md). No exception here allocates, to be
// constructed, copied or asked for `what()`: an exhausted heap must still be able to report.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>

#include "config.hpp"
#include "detail/base/align.hpp"

namespace memkit {
inline namespace MEMKIT_ABI {

namespace detail {

/// The resource, request and reason behind an exception, formatted once into a fixed buffer so that
/// throwing and copying never allocate (an exhausted heap must still be able to report).
class error_info {
public:
  error_info(const char* resource, const char* reason, std::size_t size,
             std::size_t alignment) noexcept
      : resource_(resource), size_(size), alignment_(alignment) {
    std::snprintf(message_, sizeof(message_), "%s: %s (size %zu, alignment %zu)", resource, reason,
                  size, alignment);
  }

  const char* message() const noexcept { return message_; }
  const char* resource() const noexcept { return resource_; }
  std::size_t size() const noexcept { return size_; }
  std::size_t alignment() const noexcept { return alignment_; }

private:
  const char* resource_;
  std::size_t size_;
  std::size_t alignment_;
  char message_[192];
};

/// The part every memkit exception shares: `what()` and the accessors, over a standard base whose
/// constructor does not allocate (`std::bad_alloc`, `std::bad_array_new_length`).
template <class Base>
class error : public Base {
public:
  const char* what() const noexcept override { return info_.message(); }
  /// \returns `name()` of the resource that failed.
  const char* resource() const noexcept { return info_.resource(); }
  std::size_t size() const noexcept { return info_.size(); }
  std::size_t alignment() const noexcept { return info_.alignment(); }

protected:
  explicit error(const error_info& info) noexcept : info_(info) {}

private:
  error_info info_;
};

} // namespace detail

/// Thrown by `allocate` when the resource (and its upstream, if any) has no memory left.
class out_of_memory : public detail::error<std::bad_alloc> {
public:
  out_of_memory(const char* resource, std::size_t size, std::size_t alignment) noexcept
      : error({resource, "out of memory", size, alignment}) {}
};

/// Thrown by `allocate` for a size the resource can never serve: one that overflows when rounded
/// or padded, or exceeds `max_size()`. Derives from `std::bad_array_new_length` (hence from
/// `std::bad_alloc`), as `operator new[]` does for an impossible length.
class bad_size : public detail::error<std::bad_array_new_length> {
public:
  bad_size(const char* resource, std::size_t size, std::size_t alignment) noexcept
      : error({resource, "size exceeds max_size()", size, alignment}) {}
};

/// Thrown by `allocate` for an alignment that is not a power of two or exceeds `max_alignment()`.
/// A `std::bad_alloc`, like every failure of `allocate`: the standard's allocators and
/// `std::pmr::memory_resource::allocate` report any request they cannot serve that way, so a
/// caller or container that handles `std::bad_alloc` handles this too. (`std::invalid_argument`
/// would say "caller error" better, but its constructors copy their message to the heap.)
class bad_alignment : public detail::error<std::bad_alloc> {
public:
  bad_alignment(const char* resource, std::size_t size, std::size_t alignment) noexcept
      : error(
            {resource, "alignment not a power of two or above max_alignment()", size, alignment}) {}
};

/// A mistake detected in `deallocate` (or a similar noexcept path) that cannot be thrown.
enum class misuse {
  foreign_pointer,    ///< the pointer was not allocated by this resource
  double_free,        ///< the block was already free
  size_mismatch,      ///< `deallocate` got a size the block was not allocated with
  alignment_mismatch, ///< `deallocate` got an alignment the block was not allocated with
  lifo_violation,     ///< a stack block freed while a younger block is still live
  bad_marker,         ///< a marker that does not belong to this resource or is ahead of its top
  overrun,            ///< bytes after the block were written (seen by the debug layer's guards)
  underrun,           ///< bytes before the block were written (seen by the debug layer's guards)
  use_after_reset,    ///< a block that died in `reset()` / `release()` was freed
  leak,               ///< a block still live when the resource was destroyed
};

/// \returns a short, stable name for `kind`, as used in reports.
constexpr const char* to_string(misuse kind) noexcept {
  switch (kind) {
  case misuse::foreign_pointer:
    return "foreign pointer";
  case misuse::double_free:
    return "double free";
  case misuse::size_mismatch:
    return "size mismatch";
  case misuse::alignment_mismatch:
    return "alignment mismatch";
  case misuse::lifo_violation:
    return "LIFO violation";
  case misuse::bad_marker:
    return "bad marker";
  case misuse::overrun:
    return "buffer overrun";
  case misuse::underrun:
    return "buffer underrun";
  case misuse::use_after_reset:
    return "use after reset";
  case misuse::leak:
    return "leak";
  }
  return "unknown misuse";
}

/// Everything known about one detected misuse. The block fields are filled by detectors that keep
/// a registry of blocks (debug_resource, test_resource) and are zero otherwise.
struct misuse_report {
  misuse kind;
  const char* resource;        ///< `name()` of the resource that detected it
  const void* pointer;         ///< the pointer passed in, or the leaked block
  std::size_t size;            ///< the size passed in (a leak: the size allocated)
  std::size_t alignment;       ///< the alignment passed in (a leak: the alignment allocated)
  std::size_t block_size;      ///< the size the block was allocated with
  std::size_t block_alignment; ///< the alignment the block was allocated with
  std::size_t allocation;      ///< the block's allocation number, from 1; 0 if unknown
};

/// Writes `r` as one line, `memkit::debug_resource<memkit::pool>: double free at 0x... (size 32,
/// alignment 16; block #3 of size 32, alignment 16)`, into `buffer` (truncated to `n`; never
/// allocates). \returns `buffer`.
inline const char* format(const misuse_report& r, char* buffer, std::size_t n) noexcept {
  if (r.allocation != 0) {
    std::snprintf(buffer, n,
                  "%s: %s at %p (size %zu, alignment %zu; block #%zu of size %zu, alignment %zu)",
                  r.resource, to_string(r.kind), r.pointer, r.size, r.alignment, r.allocation,
                  r.block_size, r.block_alignment);
  } else {
    std::snprintf(buffer, n, "%s: %s at %p (size %zu, alignment %zu)", r.resource,
                  to_string(r.kind), r.pointer, r.size, r.alignment);
  }
  return buffer;
}

/// Thrown by a `debug_resource` in `debug_reaction::deferred_throw` mode (from `allocate()` or
/// `check()`, never from `deallocate`, which is noexcept), and by `exception_test_loop` when a
/// run leaked. A programming error, not exhaustion, so not a `std::bad_alloc`; a plain
/// `std::exception`, since `std::logic_error`'s constructors copy their message to the heap.
class misuse_error : public std::exception {
public:
  explicit misuse_error(const misuse_report& r) noexcept : report_(r) {
    format(r, message_, sizeof(message_));
  }
  const char* what() const noexcept override { return message_; }
  /// \returns the first misuse found. Its `resource` pointer is valid while the resource lives;
  /// `what()` holds a copy of the whole line.
  const misuse_report& report() const noexcept { return report_; }

private:
  misuse_report report_;
  char message_[256];
};

using misuse_handler = void (*)(const misuse_report&);

namespace detail {

[[noreturn]] inline void abort_on_misuse(const misuse_report& r) noexcept {
  char line[256];
  std::fprintf(stderr, "memkit: %s\n", format(r, line, sizeof(line)));
  std::abort();
}

inline std::atomic<misuse_handler>& misuse_handler_slot() noexcept {
  static std::atomic<misuse_handler> handler{&abort_on_misuse};
  return handler;
}

} // namespace detail

/// Installs `handler` for every resource in the process and returns the previous one.
/// The default prints the report to stderr and aborts. A handler that returns lets the resource
/// continue: it then ignores the offending call and leaves its state untouched.
/// \requires `handler` is not null.
inline misuse_handler set_misuse_handler(misuse_handler handler) noexcept {
  return detail::misuse_handler_slot().exchange(handler);
}

inline misuse_handler get_misuse_handler() noexcept { return detail::misuse_handler_slot().load(); }

namespace detail {

/// Which mistake a rejected `deallocate` of a fixed-block strategy made, given whether the strategy
/// owns `p`: foreign pointer, then size, then alignment; a block that passes all three was free.
constexpr misuse classify_block_misuse(bool owned, std::size_t bytes, std::size_t alignment,
                                       std::size_t block_size,
                                       std::size_t block_alignment) noexcept {
  if (!owned) {
    return misuse::foreign_pointer;
  }
  if (bytes > block_size) {
    return misuse::size_mismatch;
  }
  if (!is_alignment_within(alignment, block_alignment)) {
    return misuse::alignment_mismatch;
  }
  return misuse::double_free;
}

} // namespace detail

/// Reports a misuse through the installed handler. Cold: only reached on a caller's mistake.
MEMKIT_NOINLINE MEMKIT_COLD inline void report_misuse(misuse kind, const char* resource,
                                                      const void* pointer, std::size_t size,
                                                      std::size_t alignment) noexcept {
  get_misuse_handler()(misuse_report{kind, resource, pointer, size, alignment, 0, 0, 0});
}

} // namespace MEMKIT_ABI
} // namespace memkit
