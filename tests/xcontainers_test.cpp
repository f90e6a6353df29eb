// SPDX-License-Identifier: BSL-1.0
#include "memkit/xcontainers.hpp"

#include <gtest/gtest.h>
#include <string>
#include <type_traits>

#include "support/spy_resource.hpp"

namespace {

struct counted_tag {};

} // namespace

// A tag over a spy, so the tests can see that every x-container allocates from its tag's resource.
template <>
struct memkit::static_resource_traits<counted_tag> {
  using resource_type = memkit::test::spy_resource;
  static resource_type& get() noexcept {
    return memkit::static_resource<resource_type, counted_tag>();
  }
};

namespace {

static_assert(std::is_same_v<memkit::xlist<int>, std::list<int, memkit::static_allocator<int>>>);
static_assert(std::is_same_v<memkit::xstring::allocator_type, memkit::static_allocator<char>>);
static_assert(std::is_same_v<memkit::xwstring::value_type, wchar_t>);
static_assert(std::is_same_v<memkit::xqueue<int>::container_type, memkit::xdeque<int>>);
static_assert(std::is_same_v<memkit::xmap<int, int>::allocator_type,
                             memkit::static_allocator<std::pair<const int, int>>>);
static_assert(
    std::is_same_v<memkit::xwostringstream::allocator_type, memkit::static_allocator<wchar_t>>);

memkit::test::spy_resource& spy() { return memkit::static_resource_traits<counted_tag>::get(); }

/// Runs `body`, then checks that it allocated from the tag's spy and returned everything.
template <class Body>
void expect_served_by_the_tag(Body body) {
  const std::size_t blocks = spy().blocks_in_use();
  const std::size_t allocations = spy().allocations();
  body();
  EXPECT_GT(spy().allocations(), allocations);
  EXPECT_EQ(spy().blocks_in_use(), blocks);
  EXPECT_TRUE(spy().errors().empty()) << spy().errors().front();
}

TEST(XContainers, NodeContainersAllocateFromTheirTag) {
  expect_served_by_the_tag([] {
    memkit::xlist<int, counted_tag> l{1, 2, 3};
    memkit::xforward_list<int, counted_tag> fl{1, 2, 3};
    memkit::xmap<int, int, std::less<>, counted_tag> m{{1, 2}, {3, 4}};
    memkit::xmultimap<int, int, std::less<>, counted_tag> mm{{1, 2}, {1, 3}};
    memkit::xset<int, std::less<>, counted_tag> s{3, 1, 2};
    memkit::xmultiset<int, std::less<>, counted_tag> ms{1, 1, 2};
    memkit::xunordered_map<int, int, std::hash<int>, std::equal_to<>, counted_tag> um{{1, 2}};
    memkit::xunordered_set<int, std::hash<int>, std::equal_to<>, counted_tag> us{1, 2};
    EXPECT_EQ(l.back() + fl.front() + m.at(3) + static_cast<int>(mm.count(1)), 3 + 1 + 4 + 2);
    EXPECT_EQ(*s.begin() + static_cast<int>(ms.count(1) + um.size() + us.size()), 1 + 2 + 1 + 2);
  });
}

TEST(XContainers, SequencesAndQueuesAllocateFromTheirTag) {
  expect_served_by_the_tag([] {
    memkit::xvector<int, counted_tag> v;
    memkit::xdeque<int, counted_tag> d;
    memkit::xqueue<int, counted_tag> q;
    for (int i = 0; i < 1000; ++i) {
      v.push_back(i);
      d.push_front(i);
      q.push(i);
    }
    q.pop();
    EXPECT_EQ(v.back() + d.front() + q.front(), 999 + 999 + 1);
  });
}

TEST(XContainers, StringsAndStringStreamsAllocateFromTheirTag) {
  expect_served_by_the_tag([] {
    memkit::basic_xstring<char, counted_tag> s(100, 'x');
    memkit::basic_xstring<wchar_t, counted_tag> ws(100, L'y');
    memkit::basic_xostringstream<char, counted_tag> os;
    os << "value " << 42 << ' ' << s;
    memkit::basic_xstringstream<char, counted_tag> ss(os.str());
    std::string word;
    int number = 0;
    ss >> word >> number;
    EXPECT_EQ(word, "value");
    EXPECT_EQ(number, 42);
    memkit::basic_xostringstream<wchar_t, counted_tag> wos;
    wos << ws << L'!';
    EXPECT_EQ(wos.str().size(), 101u);
  });
}

TEST(XContainers, DefaultAliasesWorkOnTheProcessWideDefaultResource) {
  memkit::xstring s = "hello, ";
  s += memkit::xstring(50, '!');
  memkit::xstringstream ss;
  ss << s.size();
  memkit::xwstringstream ws;
  ws << L"w" << 1;
  memkit::xostringstream os;
  os << ss.str();
  memkit::xwostringstream wos;
  wos << ws.str();
  memkit::xmap<memkit::xstring, memkit::xvector<int>> index;
  index["key"].push_back(7);
  EXPECT_EQ(os.str(), "57");
  EXPECT_EQ(wos.str(), L"w1");
  EXPECT_EQ(index.at("key").front(), 7);
}

} // namespace
