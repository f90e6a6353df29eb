// SPDX-License-Identifier: BSL-1.0
// memkit/detail/singleton.hpp: a process-wide object that is constructed on first use and never
// destroyed, for resources that static objects may still reach during program exit.
#pragma once

#include <new>
#include <type_traits>

#include "../config.hpp"

namespace memkit {
inline namespace MEMKIT_ABI {
namespace detail {

/// The one default-constructed `T` of `Tag`, constructed on first use (thread-safe, as every
/// function-local static) and never destroyed. Never destroying it is what makes it safe to use
/// from the constructors and destructors of other static objects in any translation unit: a
/// global container destroyed at exit still finds its resource alive. Memory it holds stays
/// reachable from static storage, so leak checkers do not report it; the OS reclaims it at exit.
template <class T, class Tag>
T& immortal() noexcept(std::is_nothrow_default_constructible_v<T>) {
  alignas(T) static unsigned char storage[sizeof(T)];
  static T* const instance = ::new (static_cast<void*>(storage)) T();
  return *instance;
}

} // namespace detail
} // namespace MEMKIT_ABI
} // namespace memkit
