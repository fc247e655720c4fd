// The commands that talk to a running process's agent (docs/agent.md):
//   hotscope list
//   hotscope info|stats|heap|trace|threads|slow|locks|cpu|metrics|reset|instrument (-p PID | -n
//   NAME)
//   [-o FILE]
#pragma once

#include "agent/protocol.hpp"
#include "agent_client.hpp"
#include "cpu_command.hpp"
#include "export/formats.hpp"
#include "profiles/profiles.hpp"
#include "slow_command.hpp"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hotscope::cli {

// `hotscope list`'s table of processes: a heading, then PID, NAME, UPTIME, ENABLED for each.
std::vector<std::string> process_table(const std::vector<AgentProcess>& agents);
// What `hotscope locks` prints (docs/locks.md, "Reading contention"): a summary line, the
// deadlocks, the table, then the inversions (their sites with `inversions`, one line each
// otherwise).
std::string locks_text(const profiles::LockReport& report, bool inversions);
// Writes `text` to `file` ("" is standard output); a Failure (kCannotWriteOutput) if it cannot.
void write_output(const std::string& file, const std::string& text);

class AgentCommands {
public:
  // Adds the subcommands to `app`.
  explicit AgentCommands(CLI::App& app);

  // After parsing: runs the chosen command and returns its exit status, or nothing when the
  // chosen subcommand is not one of these.
  std::optional<int> run() const;

private:
  struct Target {
    std::int64_t pid = 0;
    std::string name;
    std::string output; // -o FILE; "" is standard output
  };
  CLI::App* add_targeted(CLI::App& app, const std::string& name, const std::string& description);
  int run_targeted(const CLI::App& command) const;

  CLI::App* list_ = nullptr;
  std::vector<CLI::App*> targeted_;
  Target target_;
  bool stats_json_ = false;
  std::string trace_format_ = exporters::find_format("/v1/trace", "")->name;
  double trace_seconds_ = 0;
  std::string heap_format_ = exporters::find_format("/v1/heap", "")->name;
  bool threads_json_ = false;
  double stuck_ms_ = agent::kDefaultStuckMs;
  bool locks_json_ = false;
  bool inversions_ = false;
  SlowOptions slow_;
  CpuOptions cpu_;                  // its output is target_.output
  std::string instrument_state_;    // on|off
  std::string instrument_function_; // a name pattern; "" is every function
};

} // namespace hotscope::cli
