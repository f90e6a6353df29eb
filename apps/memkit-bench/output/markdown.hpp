// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/output/markdown.hpp: a run as Markdown, made from its results document (the
// JSON of output/json.hpp, fresh or read back from a results.json), so the summary of a committed
// run can be regenerated and compared at any time (docs/results/).
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace memkit::bench {

/// \returns whether `variant` is memkit's: a strategy (`memkit-*`) or its global replacement
/// (`memkit`). Every other variant but `std` is a peer.
bool is_memkit_variant(std::string_view variant) noexcept;

/// \returns the summary of the run `doc` describes: release, commit, date, machine, compiler, the
/// command that reproduces it; per workload a table of the result fields the summary shows (named
/// as in MEMKIT_BENCH_RESULT_FIELDS and the JSON) plus each row's ratio to the fastest peer; the
/// targets met or missed. \throws nlohmann::json::exception if `doc` is not such a document.
std::string markdown_summary(const nlohmann::json& doc);

/// \returns the headline table of `doc`: per workload with a std row, std's p50, the fastest memkit
/// variant and the fastest peer at p50, and the ratios between them.
/// \throws nlohmann::json::exception if `doc` is not a results document.
std::string markdown_headline(const nlohmann::json& doc);

/// `memkit-bench markdown RESULTS [--headline] [--output FILE]`: reads the results document
/// `results_file` and writes its summary (or headline table) to `output_file`, or to stdout if it
/// is empty. \returns the exit status: 0, or 2 with the reason on stderr when a file cannot be
/// read, parsed or written.
int write_markdown(const std::string& results_file, bool headline, const std::string& output_file);

} // namespace memkit::bench
