// memkit/error.hpp: what memkit throws on bad requests and reports on misuse (docs/concepts.md,
// "Errors"; every case is listed in docs/bad-input.md).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <stdexcept>
#include <utility>

#include "config.hpp"
#include "detail/align.hpp"

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

} // namespace detail

namespace detail {

/// The part every memkit exception shares: `what()` and the accessors, over a standard base.
template <class Base>
class error : public Base {
public:
  const char* what() const noexcept override { return info_.message(); }
  /// \returns `name()` of the resource that failed.
  const char* resource() const noexcept { return info_.resource(); }
  std::size_t size() const noexcept { return info_.size(); }
  std::size_t alignment() const noexcept { return info_.alignment(); }

protected:
  template <class... BaseArgs>
  error(const error_info& info, BaseArgs&&... base_args)
      : Base(std::forward<BaseArgs>(base_args)...), info_(info) {}

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
/// A caller error, not exhaustion, hence `std::invalid_argument`.
class bad_alignment : public detail::error<std::invalid_argument> {
public:
  bad_alignment(const char* resource, std::size_t size, std::size_t alignment)
      : error({resource, "alignment not a power of two or above max_alignment()", size, alignment},
              "memkit::bad_alignment") {}
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

/// Everything known about one detected misuse.
struct misuse_report {
  misuse kind;
  const char* resource; ///< `name()` of the resource that detected it
  const void* pointer;  ///< the pointer passed in
  std::size_t size;     ///< the size passed in
  std::size_t alignment;
};

using misuse_handler = void (*)(const misuse_report&);

namespace detail {

[[noreturn]] inline void abort_on_misuse(const misuse_report& r) noexcept {
  std::fprintf(stderr, "memkit: %s: %s at %p (size %zu, alignment %zu)\n", r.resource,
               to_string(r.kind), r.pointer, r.size, r.alignment);
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
  get_misuse_handler()(misuse_report{kind, resource, pointer, size, alignment});
}

} // namespace MEMKIT_ABI
} // namespace memkit
