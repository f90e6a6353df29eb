// SPDX-License-Identifier: BSL-1.0
// tests/compile_fail/deprecated_names.cpp: code written against memkit 0.1's names
// (CHANGELOG.md): it must compile in 0.2.x, each old name drawing a deprecation warning that names
// its replacement, and fail under -Werror=deprecated-declarations (expect_deprecated.cmake).
#include <cstdio>
#include <memkit/debug_resource.hpp>

namespace {

// 0.1: a debug_resource handler took a debug_report.
void print(const memkit::debug_report& r) {
  char line[256];
  std::puts(memkit::format(r, line, sizeof line));
}

// 0.1: the kind of a report was a debug_mistake.
bool is_double_free(memkit::debug_mistake m) { return m == memkit::misuse::double_free; }

} // namespace

int main() {
  memkit::debug_options o;
  o.reaction = memkit::debug_reaction::handler;
  o.handler = print;
  return is_double_free(memkit::misuse::double_free) && o.handler ? 0 : 1;
}
