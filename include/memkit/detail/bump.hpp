// SPDX-License-Identifier: BSL-1.0
// memkit/detail/bump.hpp: the bump-pointer step shared by buffer_resource, arena and stack.
#pragma once

#include <cstddef>

#include "../config.hpp"
#include "base/align.hpp"

namespace memkit {
inline namespace MEMKIT_ABI {
namespace detail {

/// Carves `bytes` aligned to `alignment` from [cur, end). On success advances `cur` past the block
/// and returns it; otherwise returns null and leaves `cur` unchanged. Never overflows: the space
/// left is compared, not an end pointer computed.
/// \requires `alignment` is a power of two, `cur <= end`.
inline void* bump(char*& cur, char* end, std::size_t bytes, std::size_t alignment) noexcept {
  const std::size_t pad = padding_for(cur, alignment);
  const auto left = static_cast<std::size_t>(end - cur);
  if (pad > left || bytes > left - pad) {
    return nullptr;
  }
  char* p = cur + pad;
  cur = p + bytes;
  return p;
}

} // namespace detail
} // namespace MEMKIT_ABI
} // namespace memkit
