// SPDX-License-Identifier: BSL-1.0
// compile_fail/allocator_over_non_resource.cpp: memkit::allocator<T, R> over a type that does not
// implement the resource interface (here: a std::pmr resource, which needs memkit::pmr_upstream)
// is rejected with a message naming the requirement. The twin wraps it in pmr_upstream.
#include <memory_resource>

#include <memkit/allocator.hpp>
#include <memkit/upstream.hpp>

#ifdef MEMKIT_COMPILE_FAIL
using resource = std::pmr::monotonic_buffer_resource;
#else
using resource = memkit::pmr_upstream;
#endif

int* make_one(resource& r) { return memkit::allocator<int, resource>(r).allocate(1); }
