// `hotscope cpu (-p PID | -n NAME) [--seconds N] [-o FILE] [--folded] [--top K]` (docs/agent.md):
// the CPU profile of a process's next N seconds from its agent (GET /debug/pprof/profile), and
// the functions with most CPU in those seconds, from its statistics before and after them.
#pragma once

#include "agent_client.hpp"
#include "profiles/profiles.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace hotscope::cli {

struct CpuOptions {
  unsigned seconds = 30;
  bool folded = false; // cpu.folded instead of cpu.pb.gz
  std::size_t top = 0; // the K functions with most CPU; 0: none
  std::string output;  // -o FILE; "" is the format's file name, "-" standard output
};

// One function's CPU in a window.
struct CpuRow {
  std::string name, file;
  int line = 0;
  std::uint64_t self_ns = 0, total_ns = 0;
};

struct CpuWindow {
  std::vector<CpuRow> rows;    // functions that gained CPU, most CPU self first
  std::uint64_t samples = 0;   // samples taken in the window
  std::uint64_t period_ns = 0; // CPU time one sample stands for; 0 when not known
};

// What the functions of `after` gained over `before`, two GET /v1/stats answers of one process
// (matched by name, file and line); all of `after` when its measuring window started later
// (a reset in between).
CpuWindow cpu_window(const profiles::Stats& before, const profiles::Stats& after);

// The table `--top K` prints: a heading, then up to `k` rows of `window`.
std::vector<std::string> cpu_top(const CpuWindow& window, std::size_t k);

// The file the profile goes to: -o FILE, else the format's file name (cpu.pb.gz, cpu.folded).
std::string cpu_file(const CpuOptions& options);

// Runs the command on `process`; its exit status. A Failure for what goes wrong.
int run_cpu(const AgentProcess& process, const CpuOptions& options);

} // namespace hotscope::cli
