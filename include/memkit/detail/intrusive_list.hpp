// SPDX-License-Identifier: BSL-1.0
// memkit/detail/intrusive_list.hpp: a doubly linked list threaded through two pointer members of
// the objects it holds, one word of its own.
#pragma once

#include "../config.hpp"
#include "base/assert.hpp"

namespace memkit {
inline namespace MEMKIT_ABI {
namespace detail {

/// A list of `T` linked through `T::*Prev` and `T::*Next`, for headers that must be removed from
/// the middle in O(1) (a heap's partly used chunks of a class, a depot's large regions). The list
/// owns nothing; an object is on at most one list through the same pair of members, and its
/// links are null while it is on none.
template <class T, T* T::*Prev, T* T::*Next>
class intrusive_list {
public:
  T* front() const noexcept { return head_; }
  bool empty() const noexcept { return head_ == nullptr; }

  /// \effects makes `x` the first element. \requires `x` is on no list through these members.
  void push_front(T* x) noexcept {
    MEMKIT_ASSERT_INTERNAL(x->*Prev == nullptr && x->*Next == nullptr && x != head_);
    x->*Next = head_;
    if (head_ != nullptr) {
      head_->*Prev = x;
    }
    head_ = x;
  }

  /// \effects takes `x` off the list and nulls its links. \requires `x` is on this list.
  void erase(T* x) noexcept {
    if (x->*Prev != nullptr) {
      (x->*Prev)->*Next = x->*Next;
    } else {
      MEMKIT_ASSERT_INTERNAL(head_ == x);
      head_ = x->*Next;
    }
    if (x->*Next != nullptr) {
      (x->*Next)->*Prev = x->*Prev;
    }
    x->*Prev = x->*Next = nullptr;
  }

  /// \effects forgets every element (their links stay as they are).
  void clear() noexcept { head_ = nullptr; }

private:
  T* head_ = nullptr;
};

} // namespace detail
} // namespace MEMKIT_ABI
} // namespace memkit
