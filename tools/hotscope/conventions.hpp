// What every command line of the hotscope tools does alike (docs/agent.md, "Command-line
// conventions"): the program named `hotscope` in usage lines whatever argv[0] is, --version,
// every error one line starting "hotscope:" that says where to look, an unknown command named,
// and numbers checked in words ("--seconds must be greater than 0").
#pragma once

#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdint>
#include <optional>

namespace hotscope::cli {

// Usage errors (bad options, unknown commands): the documented exit code of both tools.
constexpr int kUsageError = 2;

// Gives `app` the conventions: its name in usage lines, --version, one-line errors.
void apply_conventions(CLI::App& app);

// Parses; returns the exit status when the command line is handled already (--help, --version,
// an error, printed), or nothing when the program goes on.
std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv);

// A whole number in [low, high] (no sign, no fraction, no wrap-around).
CLI::Validator whole_number(std::uint64_t low, std::uint64_t high);
// A finite number above `low` (at least `low` when `low_included`) and at most `high` (none when
// HUGE_VAL): "must be greater than 0", "must be at least 0", "must be from 0.05 to 3600".
CLI::Validator number_in(double low, double high = HUGE_VAL, bool low_included = false);

} // namespace hotscope::cli
