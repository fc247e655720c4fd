// `hotscope attach (-p PID | -n NAME) [--heap [sampled|full]] [--seconds N | --until-exit]
// [--out DIR]` and `hotscope detach (-p PID | -n NAME)`: the heap profiler loaded into a running
// process and taken out again (docs/heap.md, "Attach to a running program").
#pragma once

#include <CLI/CLI.hpp>

#include <sys/types.h>

#include <optional>
#include <string>

namespace hotscope::cli::attach {

// Loads libhotscope-run.so into process `pid`, which runs the heap library already (a program
// `hotscope run --heap` started in the sampled mode): its agent then serves it from
// `runtime_dir`. The process's own signal and crash handlers stay as they are. "" or the line
// that says why not; the process goes on either way, profiled as before.
std::string load_runtime(pid_t pid, const std::string& runtime_dir);

class AttachCommands {
public:
  explicit AttachCommands(CLI::App& app);
  // After parsing: the chosen command's exit status, or nothing when it is not one of these.
  std::optional<int> run() const;

private:
  CLI::App* attach_ = nullptr;
  CLI::App* detach_ = nullptr;
  std::int64_t pid_ = 0;
  std::string name_;
  std::string mode_ = "sampled";
  double seconds_ = 0;
  bool until_exit_ = false;
  std::string out_dir_ = ".";
};

} // namespace hotscope::cli::attach
