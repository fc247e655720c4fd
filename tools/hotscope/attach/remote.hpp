// Calls functions inside another process, as a debugger does (docs/heap.md, "Attach to a running
// program"): one of its threads, stopped under ptrace, runs the call on its own stack below the
// red zone and returns to address 0, whose fault stops it again; its registers and the stack
// bytes written are put back before the process goes on. x86-64 only.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hotscope::cli::attach {

// A call's argument: a number, or a string copied into the process first (its address passed).
struct Argument {
  std::uint64_t number = 0;
  std::optional<std::string> text;
};

class Tracee {
public:
  explicit Tracee(pid_t pid) : pid_(pid) {}
  // Puts the process back as it was (registers, stack) and lets it go, if not done yet.
  ~Tracee();
  Tracee(const Tracee&) = delete;
  Tracee& operator=(const Tracee&) = delete;

  // PTRACE_SEIZE: 0, or the errno the kernel gave.
  int seize();
  // PTRACE_INTERRUPT, and the wait for the stop: "" or why not.
  std::string stop();
  // Saves the registers the calls change: "" or why not.
  std::string save_registers();
  // Runs function(arguments...) in the stopped thread and returns its result, or nothing with
  // `problem` set (the process ended, or the call faulted or ran longer than `seconds`).
  std::optional<std::uint64_t> call(std::uint64_t function, const std::vector<Argument>& arguments,
                                    std::string& problem, double seconds = 10);
  // The registers back, and the process let go.
  void release();

private:
  void wait_for_return(std::string& problem, double seconds);

  pid_t pid_;
  bool seized_ = false;
  bool saved_ = false;
  std::vector<unsigned char> registers_; // user_regs_struct
  int pending_signal_ = 0;               // stopped by it instead: delivered on release
};

} // namespace hotscope::cli::attach
