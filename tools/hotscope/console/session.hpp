// The two ways the console runs: once as plain text (--once, or standard output is not a
// terminal), or live on the terminal until `q`.
#pragma once

#include "console.hpp"
#include "screen.hpp"
#include "source.hpp"

#include <memory>
#include <vector>

namespace hotscope::cli::console {

// Prints the chosen tab once; the CLI's exit status.
int print_once(Source& source, const Options& options);

// Runs the live console on `screen` until the user quits (exit status 0).
int run_live(Screen& screen, Source& source, const Options& options);

// The process to watch, chosen with arrows and Enter among `agents`; nothing when the user quit.
std::optional<AgentProcess> pick(Screen& screen, const std::vector<AgentProcess>& agents);

} // namespace hotscope::cli::console
