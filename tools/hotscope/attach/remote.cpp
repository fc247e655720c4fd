#include "attach/remote.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>

namespace hotscope::cli::attach {
namespace {

#if defined(__x86_64__)
using Registers = user_regs_struct;
#endif

// The x86-64 red zone the interrupted code may use below its stack pointer, and a margin.
constexpr std::uint64_t kBelowStack = 128 + 128;

bool transfer(pid_t pid, std::uint64_t address, void* bytes, std::size_t size, bool write) {
  const int fd =
      open(fmt::format("/proc/{}/mem", pid).c_str(), (write ? O_WRONLY : O_RDONLY) | O_CLOEXEC);
  if (fd < 0) {
    return false;
  }
  const ssize_t done = write ? pwrite(fd, bytes, size, static_cast<off_t>(address))
                             : pread(fd, bytes, size, static_cast<off_t>(address));
  close(fd);
  return done == static_cast<ssize_t>(size);
}

} // namespace

Tracee::~Tracee() {
  release();
}

int Tracee::seize() {
  if (ptrace(PTRACE_SEIZE, pid_, nullptr, nullptr) != 0) {
    return errno;
  }
  seized_ = true;
  return 0;
}

std::string Tracee::stop() {
  if (ptrace(PTRACE_INTERRUPT, pid_, nullptr, nullptr) != 0) {
    return fmt::format("cannot stop it: {}", std::strerror(errno));
  }
  int status = 0;
  if (waitpid(pid_, &status, __WALL) != pid_ || !WIFSTOPPED(status)) {
    seized_ = false; // ended
    return "it ended";
  }
  if (status >> 16 == 0) {
    // A signal that arrived meanwhile stopped it first: delivered when the process goes on.
    pending_signal_ = WSTOPSIG(status);
  }
  return "";
}

std::string Tracee::save_registers() {
#if defined(__x86_64__)
  registers_.resize(sizeof(Registers));
  if (ptrace(PTRACE_GETREGS, pid_, nullptr, registers_.data()) != 0) {
    return fmt::format("cannot read its registers: {}", std::strerror(errno));
  }
  saved_ = true;
  return "";
#else
  return "attach is implemented for x86-64 only";
#endif
}

std::optional<std::uint64_t> Tracee::call(std::uint64_t function,
                                          const std::vector<Argument>& arguments,
                                          std::string& problem, double seconds) {
#if defined(__x86_64__)
  Registers saved;
  std::memcpy(&saved, registers_.data(), sizeof saved);
  // The strings, then the return address 0, below the red zone; the bytes there kept to be put
  // back (the interrupted code does not use them, but a signal handler's frame could have).
  std::uint64_t top = (saved.rsp - kBelowStack) & ~std::uint64_t{15};
  std::uint64_t values[6] = {};
  std::vector<unsigned char> frame;
  std::uint64_t bottom = top;
  for (std::size_t i = 0; i < arguments.size() && i < 6; ++i) {
    if (!arguments[i].text) {
      values[i] = arguments[i].number;
      continue;
    }
    const std::string& text = *arguments[i].text;
    bottom = (bottom - text.size() - 1) & ~std::uint64_t{15};
    values[i] = bottom;
  }
  const std::uint64_t stack = bottom - 8; // at the call, rsp + 8 is 16-byte aligned
  std::vector<unsigned char> kept(top - stack);
  if (!transfer(pid_, stack, kept.data(), kept.size(), false)) {
    problem = "cannot read its stack";
    return std::nullopt;
  }
  frame.assign(kept.size(), 0); // the return address 0, then the strings
  for (std::size_t i = 0; i < arguments.size() && i < 6; ++i) {
    if (arguments[i].text) {
      std::memcpy(frame.data() + (values[i] - stack), arguments[i].text->c_str(),
                  arguments[i].text->size() + 1);
    }
  }
  if (!transfer(pid_, stack, frame.data(), frame.size(), true)) {
    problem = "cannot write to its stack";
    return std::nullopt;
  }
  Registers registers = saved;
  registers.rsp = stack;
  registers.rip = function;
  registers.rax = 0;          // no vector registers for a variadic callee
  registers.orig_rax = ~0ull; // not in a system call: the kernel restarts none
  registers.rdi = values[0];
  registers.rsi = values[1];
  registers.rdx = values[2];
  registers.rcx = values[3];
  registers.r8 = values[4];
  registers.r9 = values[5];
  std::optional<std::uint64_t> result;
  if (ptrace(PTRACE_SETREGS, pid_, nullptr, &registers) != 0 ||
      ptrace(PTRACE_CONT, pid_, nullptr, nullptr) != 0) {
    problem = fmt::format("cannot start the call: {}", std::strerror(errno));
  } else {
    wait_for_return(problem, seconds);
    Registers after;
    if (problem.empty() && ptrace(PTRACE_GETREGS, pid_, nullptr, &after) == 0) {
      result = after.rax;
    }
  }
  if (seized_) {
    transfer(pid_, stack, kept.data(), kept.size(), true);
    ptrace(PTRACE_SETREGS, pid_, nullptr, registers_.data());
  }
  return result;
#else
  (void)function;
  (void)arguments;
  (void)seconds;
  problem = "attach is implemented for x86-64 only";
  return std::nullopt;
#endif
}

// Until the call returns to address 0 (a SIGSEGV there). Other signals are delivered: the
// process's handlers run on top of the call, as they would on top of its own code.
void Tracee::wait_for_return(std::string& problem, double seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  for (;;) {
    int status = 0;
    const pid_t waited = waitpid(pid_, &status, __WALL | WNOHANG);
    if (waited == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        ptrace(PTRACE_INTERRUPT, pid_, nullptr, nullptr);
        waitpid(pid_, &status, __WALL);
        problem = fmt::format("the call did not return within {} s (the thread may have been "
                              "stopped holding a lock the loader needs)",
                              seconds);
        return;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      continue;
    }
    if (waited < 0 || WIFEXITED(status) || WIFSIGNALED(status)) {
      seized_ = false;
      problem = "it ended during the call";
      return;
    }
    const int signal = WSTOPSIG(status);
    if (status >> 16 != 0) { // a ptrace event stop (PTRACE_INTERRUPT, group stop)
      ptrace(PTRACE_CONT, pid_, nullptr, nullptr);
      continue;
    }
#if defined(__x86_64__)
    Registers now;
    ptrace(PTRACE_GETREGS, pid_, nullptr, &now);
    if (signal == SIGSEGV && now.rip == 0) {
      return;
    }
    if (signal == SIGSEGV || signal == SIGBUS || signal == SIGILL) {
      problem = fmt::format("the call faulted (signal {} at 0x{:x})", signal, now.rip);
      return;
    }
#endif
    ptrace(PTRACE_CONT, pid_, nullptr, reinterpret_cast<void*>(static_cast<long>(signal)));
  }
}

void Tracee::release() {
  if (!seized_) {
    return;
  }
  if (saved_) {
    ptrace(PTRACE_SETREGS, pid_, nullptr, registers_.data());
  }
  ptrace(PTRACE_DETACH, pid_, nullptr, reinterpret_cast<void*>(static_cast<long>(pending_signal_)));
  seized_ = false;
}

} // namespace hotscope::cli::attach
