// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/workloads/vector_strings.cpp: the vector-of-strings arena benchmark
// (docs/background.md#vector-strings): a vector of 32 strings longer than the SSO limit built per
// iteration, as its source wrote it and as an arena user would write it.

#include <charconv>
#include <memory_resource>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "core/hash.hpp"
#include "policies/lists.hpp"
#include "workloads/workloads.hpp"

namespace memkit::bench {
namespace {

/// As the vector-of-strings arena benchmark: 32 strings per iteration, 100,000 iterations.
constexpr int strings_per_iteration = 32;
constexpr std::string_view prefix = "event_log_entry_number_"; // 23 chars: beyond libstdc++'s SSO

template <class Policy>
using string_of =
    std::basic_string<char, std::char_traits<char>, typename Policy::template allocator_type<char>>;
template <class Policy>
using vector_of =
    std::vector<string_of<Policy>, typename Policy::template allocator_type<string_of<Policy>>>;

template <class A>
struct is_polymorphic_allocator : std::false_type {};
template <class T>
struct is_polymorphic_allocator<std::pmr::polymorphic_allocator<T>> : std::true_type {};

/// Appends a string built from `text` to `v` in `v`'s memory. std::pmr containers pass their
/// allocator to the element themselves (uses-allocator construction); passing it as well would
/// not compile (the first uses-allocator pitfall, docs/background.md#pmr-uses-allocator). Every
/// other allocator is passed explicitly.
template <class Vector>
void emplace_string(Vector& v, std::string_view text) {
  if constexpr (is_polymorphic_allocator<typename Vector::allocator_type>::value) {
    v.emplace_back(text);
  } else {
    v.emplace_back(text, typename Vector::value_type::allocator_type(v.get_allocator()));
  }
}

std::uint64_t hash_strings(const auto& v) {
  word_hash h;
  for (const auto& s : v) {
    h.add(s.data(), s.size());
  }
  return h.value();
}

} // namespace

void add_vector_strings(registry& r, const params& p) {
  const std::size_t iterations = p.scaled(100'000);
  const workload& written = r.add_workload(
      {"vector-strings-seed", "strings", strings_per_iteration, iterations,
       "the vector-of-strings arena benchmark as written: 32 strings '" + std::string(prefix) +
           "' + std::to_string(i) built as std::string temporaries on the heap, then stored"});
  const workload& native = r.add_workload(
      {"vector-strings-native", "strings", strings_per_iteration, iterations,
       "the vector-of-strings arena benchmark's strings built directly in the container's "
       "memory, no heap temporaries"});

  auto as_written = [](auto& policy, std::string&) {
    using P = std::remove_reference_t<decltype(policy)>;
    vector_of<P> v(policy.template allocator<string_of<P>>());
    v.reserve(strings_per_iteration);
    for (int i = 0; i < strings_per_iteration; ++i) {
      std::string temporary = std::string(prefix) + std::to_string(i);
      if constexpr (std::is_same_v<string_of<P>, std::string>) {
        v.push_back(std::move(temporary)); // its heap version moves the temporary in
      } else {
        emplace_string(v, temporary); // its arena version copies it into the arena
      }
    }
    return hash_strings(v);
  };
  auto arena_native = [](auto& policy, std::string&) {
    using P = std::remove_reference_t<decltype(policy)>;
    vector_of<P> v(policy.template allocator<string_of<P>>());
    v.reserve(strings_per_iteration);
    char text[prefix.size() + 16];
    prefix.copy(text, prefix.size());
    for (int i = 0; i < strings_per_iteration; ++i) {
      char* end = std::to_chars(text + prefix.size(), text + sizeof text, i).ptr;
      emplace_string(v, std::string_view(text, static_cast<std::size_t>(end - text)));
    }
    return hash_strings(v);
  };
  r.add(general_policies{}, written, {}, as_written);
  r.add(general_policies{}, native, {}, arena_native);
}

} // namespace memkit::bench
