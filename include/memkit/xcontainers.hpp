// SPDX-License-Identifier: BSL-1.0
// memkit/xcontainers.hpp: "x" containers (docs/background.md#x-containers): the standard
// containers, strings and string streams with `static_allocator` (a process-wide thread-caching
// resource per tag) as their default allocator.
#pragma once

#include <deque>
#include <forward_list>
#include <functional>
#include <list>
#include <map>
#include <queue>
#include <set>
#include <sstream>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "config.hpp"
#include "static_allocator.hpp"

namespace memkit {
inline namespace MEMKIT_ABI {

// Aliases, not classes deriving from the standard ones like the originals: an xlist *is* a
// std::list, converts to nothing, slices nothing and needs no forwarding constructors. The last
// template parameter picks the tag, and with it the process-wide resource (static_allocator.hpp).

template <class T, class Tag = default_tag>
using xlist = std::list<T, static_allocator<T, Tag>>;

template <class T, class Tag = default_tag>
using xforward_list = std::forward_list<T, static_allocator<T, Tag>>;

template <class T, class Tag = default_tag>
using xdeque = std::deque<T, static_allocator<T, Tag>>;

template <class T, class Tag = default_tag>
using xqueue = std::queue<T, xdeque<T, Tag>>;

/// The originals left xvector out for fear of growth misuse; the default resource serves blocks
/// above its largest size class from regions of their own, so a growing vector is served like any
/// other request.
template <class T, class Tag = default_tag>
using xvector = std::vector<T, static_allocator<T, Tag>>;

template <class Key, class T, class Compare = std::less<Key>, class Tag = default_tag>
using xmap = std::map<Key, T, Compare, static_allocator<std::pair<const Key, T>, Tag>>;

template <class Key, class T, class Compare = std::less<Key>, class Tag = default_tag>
using xmultimap = std::multimap<Key, T, Compare, static_allocator<std::pair<const Key, T>, Tag>>;

template <class Key, class Compare = std::less<Key>, class Tag = default_tag>
using xset = std::set<Key, Compare, static_allocator<Key, Tag>>;

template <class Key, class Compare = std::less<Key>, class Tag = default_tag>
using xmultiset = std::multiset<Key, Compare, static_allocator<Key, Tag>>;

template <class Key, class T, class Hash = std::hash<Key>, class Eq = std::equal_to<Key>,
          class Tag = default_tag>
using xunordered_map =
    std::unordered_map<Key, T, Hash, Eq, static_allocator<std::pair<const Key, T>, Tag>>;

template <class Key, class Hash = std::hash<Key>, class Eq = std::equal_to<Key>,
          class Tag = default_tag>
using xunordered_set = std::unordered_set<Key, Hash, Eq, static_allocator<Key, Tag>>;

template <class CharT, class Tag = default_tag>
using basic_xstring =
    std::basic_string<CharT, std::char_traits<CharT>, static_allocator<CharT, Tag>>;

template <class CharT, class Tag = default_tag>
using basic_xstringstream =
    std::basic_stringstream<CharT, std::char_traits<CharT>, static_allocator<CharT, Tag>>;

template <class CharT, class Tag = default_tag>
using basic_xostringstream =
    std::basic_ostringstream<CharT, std::char_traits<CharT>, static_allocator<CharT, Tag>>;

using xstring = basic_xstring<char>;
using xwstring = basic_xstring<wchar_t>;
using xstringstream = basic_xstringstream<char>;
using xostringstream = basic_xostringstream<char>;
using xwstringstream = basic_xstringstream<wchar_t>;
using xwostringstream = basic_xostringstream<wchar_t>;

} // namespace MEMKIT_ABI
} // namespace memkit
