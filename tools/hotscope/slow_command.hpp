// `hotscope slow (-p PID | -n NAME) [--function NAME] [--top K] [--json] [-o FILE]`
// (docs/slow.md): the slowest calls a process has kept of each function, each as an indented tree,
// from its agent (GET /v1/slow).
#pragma once

#include <CLI/CLI.hpp>

#include <cstddef>
#include <string>

namespace hotscope::cli {

struct SlowOptions {
  std::string function; // only this function's calls (its exact name); "" every function's
  std::size_t top = 0;  // at most K calls per function; 0: all kept
  bool json = false;    // slow.json's schema instead of slow.txt's text
};

// Adds the command's own options to `command`.
void add_slow_options(CLI::App& command, SlowOptions& options);

// What to ask the agent: "/v1/slow?format=text&function=Tree%3A%3Ainsert&top=2".
std::string slow_target(const SlowOptions& options);

} // namespace hotscope::cli
