// `hotscope console [-p PID | -n NAME] [--interval S] [--tab NAME] [--stuck MS] [--once]`: a live
// terminal view of a running process's functions, threads, memory, queues, guests and flame
// graph, read through its agent (docs/console.md).
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace hotscope::cli::console {

struct Options {
  std::int64_t pid = 0;
  std::string name;
  double interval_seconds = 1;
  std::string tab = "functions";
  std::uint64_t stuck_ms = 1000;
  double flame_seconds = 5;
  bool once = false;
};

class ConsoleCommand {
public:
  // Adds the subcommand to `app`.
  explicit ConsoleCommand(CLI::App& app);
  // After parsing: the console's exit status, or nothing when another subcommand was chosen.
  std::optional<int> run() const;

private:
  CLI::App* command_ = nullptr;
  Options options_;
};

} // namespace hotscope::cli::console
