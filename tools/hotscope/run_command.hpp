// `hotscope run [--heap] [--cpu] [--locks] [--out DIR] [--no-summary] [--usage FILE] -- prog
// args...`: starts the program with HOTSCOPE_OUT (with --heap the heap profiler preloaded, with
// --cpu libhotscope-run.so, with --locks libhotscope-run-locks.so), passes the signals the launcher
// gets on to it, waits for it and ends as it ended (docs/agent.md, "hotscope run").
#pragma once

#include <string>
#include <vector>

namespace hotscope::cli {

struct RunOptions {
  bool heap = false;
  bool cpu = false;
  bool locks = false;
  bool summary = true;
  std::string out_dir;
  // "CPU_SECONDS PEAK_RSS_KIB MINOR_FAULTS\n" of the program (wait4), written at its end.
  std::string usage_file;
};

// The preload libraries `hotscope run` and `hotscope attach` load: HOTSCOPE_PRELOAD (the heap
// library) and HOTSCOPE_RUN_PRELOAD (libhotscope-run.so) when set, else the installed ones, else
// the build tree's.
std::string heap_preload_path();
std::string run_preload_path();
// `hotscope run --locks`' runtime: libhotscope-run-locks.so, beside run_preload_path().
std::string locks_runtime_path();

// The program's exit status, or (re-raised) the signal that ended it; 127 when it cannot start.
int run_program(const std::vector<std::string>& command, const RunOptions& options);

} // namespace hotscope::cli
