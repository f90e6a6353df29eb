// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/core/spawn.hpp: memkit-bench re-executed as a child process, one process of
// the run's several (docs/method.md): a fresh exec, so each child is a new draw of code and heap
// layout (ASLR, a randomized environment size), which a fork would share with its parent.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace memkit::bench {

/// The environment variable whose random length shifts the stack, and with it every address
/// derived from it, by a different amount in each child: the link-order and environment-size
/// bias measured by Mytkowicz et al. ("Producing wrong data without doing anything obviously
/// wrong!", ASPLOS 2009) and randomized away by Stabilizer (Curtsinger and Berger, ASPLOS 2013).
inline constexpr const char* padding_variable = "MEMKIT_BENCH_LAYOUT_PADDING";
/// The largest padding: a page, so the stack's start moves across every offset within one.
inline constexpr std::size_t max_padding = 4096;

/// \returns "" if children get randomized layouts, else why not (ASLR disabled system-wide). Also
/// turns off this process's ADDR_NO_RANDOMIZE personality (as `setarch -R` sets), which every
/// child would inherit.
std::string enable_layout_randomization();

/// Runs this executable (/proc/self/exe) with `args`, the environment of this process with
/// `padding_variable` set to `padding` bytes and, if `preload` is not empty, LD_PRELOAD=`preload`
/// in place of any other; waits for it. \returns its exit status (128 + signal if killed, 127 if
/// it could not start).
int run_self(const std::vector<std::string>& args, const std::string& preload, std::size_t padding);

} // namespace memkit::bench
