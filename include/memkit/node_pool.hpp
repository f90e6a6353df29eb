// SPDX-License-Identifier: BSL-1.0
// memkit/node_pool.hpp: a pool that learns its block size from the first object it serves, so node
// containers use a pool without anyone computing node sizes.
#pragma once

#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>

#include "config.hpp"
#include "detail/base/align.hpp"
#include "pool.hpp"
#include "resource.hpp"
#include "stats.hpp"
#include "upstream.hpp"

namespace memkit {
inline namespace MEMKIT_ABI {

/// A resource for one node container (or several of the same type): a `pool` whose block size is
/// the size of the first single object requested, adopted at that request.
///
/// A node container sees the allocator only after rebinding it to its private node type, so no
/// user can name the node size without a build-time tool. `std::list<int, allocator<int,
/// node_pool<>>>` asks for its first node, node_pool adopts that (size, alignment), and serves
/// every later request of exactly that size and alignment from the pool: a free-list pop and push.
///
/// Everything else goes straight to the upstream and comes back to it: arrays (`unordered_*`
/// bucket arrays, `deque` maps and buffers, any `allocate(n)` with `n != 1`, which `allocator`
/// sends to `allocate_array`) and single objects of another size or alignment. Routing is by the
/// exact (size, alignment) pair, the same on allocate and deallocate, so a block always returns to
/// the resource it came from:
/// - before adoption, no single object has been served at all (the first one adopts);
/// - arrays never touch the pool, whatever their size.
/// Through the generic interface alone (`try_allocate`, as the std::pmr bridge calls it) every
/// request counts as a single object: the very first one adopts, whatever container made it.
///
/// Detected misuse in deallocate: whatever the pool detects for node-sized blocks (see pool.hpp);
/// other blocks are the upstream's to check.
template <class Upstream = malloc_resource>
class node_pool : private detail::stats_recorder<node_pool<Upstream>> {
  static_assert(is_resource_v<Upstream>,
                "memkit::node_pool<Upstream>: Upstream must be a resource");

public:
  /// \effects a node_pool that adopts its block size on the first request and then grows as
  /// `growth` says (its `block_size` and `block_alignment` are ignored; `reserved_blocks` are
  /// reserved at adoption, if the upstream can provide them). Obtains nothing.
  /// \throws bad_size if `growth.first_chunk_blocks` or `growth.max_chunk_blocks` is 0, as pool's
  /// constructor (docs/concepts.md, "Constructor arguments").
  explicit node_pool(Upstream upstream = {}, const pool_options& growth = {})
      : pool_(options_for(growth, 1, 1), resource_ref<Upstream>(upstream_)),
        upstream_(std::move(upstream)), growth_(growth) {}

  /// \effects a node_pool that has already adopted `node_size` and `node_alignment` (for callers
  /// that know them, or when the first request would not be a node). Obtains nothing.
  /// \throws bad_alignment if `node_alignment` is not a power of two, bad_size if it overflows.
  node_pool(std::size_t node_size, std::size_t node_alignment, Upstream upstream = {},
            const pool_options& growth = {})
      : node_size_(node_size), node_alignment_(node_alignment),
        pool_(options_for(growth, node_size, node_alignment), resource_ref<Upstream>(upstream_)),
        upstream_(std::move(upstream)), growth_(growth) {}

  node_pool(const node_pool&) = delete;
  node_pool& operator=(const node_pool&) = delete;

  const char* name() const noexcept { return "memkit::node_pool"; }
  std::size_t max_size() const noexcept { return upstream_.max_size(); }
  std::size_t max_alignment() const noexcept { return upstream_.max_alignment(); }

  void* allocate(std::size_t bytes, std::size_t alignment = default_alignment) {
    return detail::allocate_or_throw(*this, bytes, alignment);
  }

  /// \returns a block for one object: from the pool if (bytes, alignment) is the adopted pair
  /// (adopting it if nothing was adopted yet), otherwise from the upstream; or null.
  void* try_allocate(std::size_t bytes, std::size_t alignment = default_alignment) noexcept {
    if (MEMKIT_LIKELY(bytes == node_size_ && alignment == node_alignment_)) {
      return this->record(pool_.try_allocate(bytes, alignment), bytes);
    }
    return this->record(adopt_or_forward(bytes, alignment), bytes);
  }

  /// Returns a block from `try_allocate`/`allocate` with the same size and alignment.
  void deallocate(void* p, std::size_t bytes, std::size_t alignment = default_alignment) noexcept {
    if (MEMKIT_LIKELY(bytes == node_size_ && alignment == node_alignment_)) {
      if (p != nullptr) {
        this->on_deallocate(bytes);
      }
      pool_.deallocate(p, bytes, alignment);
    } else if (p != nullptr) {
      deallocate_array(p, bytes, alignment);
    }
  }

  /// \returns a block for an array, always from the upstream (never adopts, never uses the pool).
  /// \throws bad_alignment, bad_size, out_of_memory, naming this resource.
  void* allocate_array(std::size_t bytes, std::size_t alignment = default_alignment) {
    if (void* p = upstream_.try_allocate(bytes, alignment); MEMKIT_LIKELY(p != nullptr)) {
      this->on_allocate(bytes);
      this->on_upstream_allocate(bytes);
      return p;
    }
    this->on_failure();
    detail::throw_failed_request(name(), bytes, alignment, max_size(), max_alignment());
  }

  /// Returns a block from `allocate_array` to the upstream.
  void deallocate_array(void* p, std::size_t bytes,
                        std::size_t alignment = default_alignment) noexcept {
    if (p != nullptr) {
      this->on_deallocate(bytes);
      this->on_upstream_deallocate(bytes);
      upstream_.deallocate(p, bytes, alignment);
    }
  }

  /// \returns whether a node size has been adopted.
  bool adopted() const noexcept { return node_alignment_ != 0; }
  /// \returns the adopted request size (0 before adoption; also a valid adopted size).
  std::size_t node_size() const noexcept { return node_size_; }
  /// \returns the adopted request alignment, 0 before adoption.
  std::size_t node_alignment() const noexcept { return node_alignment_; }
  /// \returns the nodes handed out and not yet returned.
  std::size_t nodes_in_use() const noexcept { return pool_.in_use(); }
  /// \returns the nodes the pool can hold without asking the upstream again.
  std::size_t capacity() const noexcept { return pool_.capacity(); }

  /// \effects every node becomes free; the pool's chunks are kept. Arrays are not affected.
  /// \requires no node is still in use.
  void reset() noexcept {
    this->on_discard(pool_.stats());
    pool_.reset();
  }

  /// \effects returns the pool's chunks to the upstream; the adopted size is kept. Arrays live in
  /// the upstream and are not affected. \requires no node is still in use.
  void release() noexcept {
    this->on_discard(pool_.stats());
    pool_.release();
  }

  Upstream& upstream() noexcept { return upstream_; }
  const Upstream& upstream() const noexcept { return upstream_; }

  /// \returns the counters of docs/statistics.md (all zero unless MEMKIT_STATISTICS is 1): every
  /// request it served, nodes and arrays; upstream calls are the pool's chunks plus the blocks it
  /// passed straight through.
  statistics stats() const noexcept { return this->stats_with_upstream_of(pool_.stats()); }

private:
  using pool_type = pool<resource_ref<Upstream>>;

  // Reservation happens after adoption, where failing to reserve must not throw.
  static pool_options options_for(pool_options o, std::size_t size,
                                  std::size_t alignment) noexcept {
    o.block_size = size;
    o.block_alignment = alignment;
    o.reserved_blocks = 0;
    return o;
  }

  // The first single object adopts its (size, alignment) if a pool can serve it; everything else,
  // including zero-byte requests and requests a pool could never serve, goes to the upstream,
  // which diagnoses them.
  MEMKIT_NOINLINE void* adopt_or_forward(std::size_t bytes, std::size_t alignment) noexcept {
    if (!adopted() && bytes != 0 && detail::is_valid_alignment(alignment) &&
        bytes <= upstream_.max_size() && alignment <= upstream_.max_alignment() &&
        detail::round_up(bytes, alignment) != 0) {
      // The placeholder pool has no chunks; it is replaced by one of the adopted size. Validated
      // above, so the constructor (which obtains nothing) cannot throw.
      pool_.~pool_type();
      ::new (static_cast<void*>(&pool_))
          pool_type(options_for(growth_, bytes, alignment), resource_ref<Upstream>(upstream_));
      node_size_ = bytes;
      node_alignment_ = alignment;
      if (growth_.reserved_blocks != 0) {
        (void)pool_.try_reserve(growth_.reserved_blocks);
      }
      return pool_.try_allocate(bytes, alignment);
    }
    void* p = upstream_.try_allocate(bytes, alignment);
    if (p != nullptr) {
      this->on_upstream_allocate(bytes);
    }
    return p;
  }

  // Hot members first, so the fast paths touch one cache line (with the pool's own hot members).
  // Alignment 0 never matches a request, so before adoption every request takes the slow path and
  // the placeholder pool (1-byte blocks, never used) is never reached.
  std::size_t node_size_ = 0;
  std::size_t node_alignment_ = 0;
  // Refers to upstream_, declared after it: the pool only stores the reference until it obtains a
  // chunk, and it is destroyed (releasing its chunks) before the upstream.
  pool_type pool_;
  Upstream upstream_;
  pool_options growth_;
};

} // namespace MEMKIT_ABI
} // namespace memkit
