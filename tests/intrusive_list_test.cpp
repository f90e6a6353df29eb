// SPDX-License-Identifier: BSL-1.0
// tests/intrusive_list_test.cpp: memkit/detail/intrusive_list.hpp.
#include "memkit/detail/intrusive_list.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace {

struct node {
  int value = 0;
  node* prev = nullptr;
  node* next = nullptr;
};
using list = memkit::detail::intrusive_list<node, &node::prev, &node::next>;

std::vector<int> values(const list& l) {
  std::vector<int> v;
  for (const node* n = l.front(); n != nullptr; n = n->next) {
    v.push_back(n->value);
    if (n->next != nullptr) {
      EXPECT_EQ(n->next->prev, n) << "broken back link after " << n->value;
    }
  }
  return v;
}

TEST(IntrusiveList, PushFrontMakesTheNewestFirst) {
  node a{1}, b{2}, c{3};
  list l;
  EXPECT_TRUE(l.empty());
  l.push_front(&a);
  l.push_front(&b);
  l.push_front(&c);
  EXPECT_EQ(values(l), (std::vector<int>{3, 2, 1}));
  EXPECT_EQ(c.prev, nullptr);
}

TEST(IntrusiveList, EraseFromTheHeadTheMiddleAndTheTailKeepsTheRestLinked) {
  node n[5] = {{0}, {1}, {2}, {3}, {4}};
  list l;
  for (node& x : n) {
    l.push_front(&x);
  }
  l.erase(&n[2]); // middle
  EXPECT_EQ(values(l), (std::vector<int>{4, 3, 1, 0}));
  l.erase(&n[4]); // head
  EXPECT_EQ(values(l), (std::vector<int>{3, 1, 0}));
  l.erase(&n[0]); // tail
  EXPECT_EQ(values(l), (std::vector<int>{3, 1}));
  for (const int i : {0, 2, 4}) {
    EXPECT_EQ(n[i].prev, nullptr) << i;
    EXPECT_EQ(n[i].next, nullptr) << i;
  }
  l.erase(&n[3]);
  l.erase(&n[1]);
  EXPECT_TRUE(l.empty());
  l.push_front(&n[2]); // an erased node may go on again
  EXPECT_EQ(values(l), (std::vector<int>{2}));
}

} // namespace
