// Records from a thread that ends before the collector ever runs, then leaves the process in
// the way argv[1] says: "return" from main, "exit" from a worker thread, or "fork" (a child
// that records and calls exit() while the parent waits, then returns). "forks" forks 30 such
// children one after the other; "agent-forks" too, while a thread calls start_agent() over and
// over. "agent-fork" forks a child that checks it holds no listening socket (its parent's agent
// listens on two). "child-threads" forks a child that starts 200 short recording threads one
// after the other and checks that its address space grew by less than 64 MiB (each thread's
// ring is mapped at 8 MiB). "sigwait" blocks SIGUSR1 in every thread of the program, sends
// it to itself and takes it with sigwait(): a profiler thread that left it unblocked would die
// of it. "sigterm" sends itself SIGTERM inside main_tail; "own-sigterm-handler" does so after
// installing a handler of its own, which makes main return 3.
#include "support/forks.hpp"
#include "support/own_signal.hpp"

#include <hotscope/control.hpp>
#include <hotscope/hotscope.hpp>

#include <algorithm>
#include <array>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace {

void early_thread_work() {
  HOTSCOPE_FUNCTION();
}
void exiting_thread_work() {
  HOTSCOPE_FUNCTION();
}
void child_work() {
  HOTSCOPE_FUNCTION();
}

// Records in a forked child, on a thread of its own and on the calling one.
void record_in_a_child() {
  std::thread worker([] { child_work(); });
  worker.join();
  child_work();
}

// 0 when no descriptor of this process is a listening socket, else 7. Allocates nothing: GCC 12's
// ASan allocator takes no lock around fork(), and the parent's agent threads may have held it.
int holds_no_listening_socket() {
  for (int fd = 0; fd < 1024; ++fd) {
    int listening = 0;
    socklen_t size = sizeof listening;
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &size) == 0 && listening != 0) {
      std::fprintf(stderr, "the forked child still holds listening socket %d\n", fd);
      return 7;
    }
  }
  return 0;
}

std::uint64_t address_space_kib() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmSize:", 0) == 0) {
      return std::stoull(line.substr(7));
    }
  }
  return 0;
}

// 0 when 200 short threads, one after the other, left the address space less than 64 MiB
// larger, else 8.
int threads_leave_no_rings() {
  const std::uint64_t before = address_space_kib();
  for (int i = 0; i < 200; ++i) {
    std::thread([] { child_work(); }).join();
  }
  const std::uint64_t after = address_space_kib();
  const std::uint64_t grown_mib = after > before ? (after - before) / 1024 : 0;
  if (grown_mib >= 64) {
    std::fprintf(stderr, "200 ended threads left the address space %llu MiB larger\n",
                 static_cast<unsigned long long>(grown_mib));
    return 8;
  }
  return 0;
}

enum class Leave { through_exit, without_exit_handlers };

// Forks a child that calls exit() (or _exit()) with what `in_child` returns; returns the child's
// status.
int fork_a_child(int (*in_child)(), Leave leave = Leave::through_exit) {
  const pid_t child = fork();
  if (child == 0) {
    const int result = in_child();
    if (leave == Leave::without_exit_handlers) {
      _exit(result);
    }
    std::exit(result);
  }
  int status = 0;
  waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

} // namespace

int main(int argc, char** argv) {
  constexpr std::array modes = {
      "return",      "exit",          "fork",    "forks",   "agent-fork",
      "agent-forks", "child-threads", "sigwait", "sigterm", "own-sigterm-handler"};
  if (argc != 2 || std::none_of(modes.begin(), modes.end(), [&](const char* mode) {
        return std::strcmp(argv[1], mode) == 0;
      })) {
    std::fprintf(stderr, "usage: exit_paths_program MODE (see the comment at the top)\n");
    return 2; // a misspelled mode must not pass as a clean exit
  }
  if (std::strcmp(argv[1], "sigwait") == 0) {
    return hotscope::test_support::signal_reaches_the_program([] { early_thread_work(); });
  }
  const bool exit_from_thread = argc > 1 && std::strcmp(argv[1], "exit") == 0;
  std::thread early([] {
    for (int i = 0; i < 100; ++i) {
      early_thread_work();
    }
  });
  early.join();
  std::printf("program result 42\n");
  std::fflush(stdout);
  if (exit_from_thread) {
    std::thread exiting([] {
      for (int i = 0; i < 50; ++i) {
        exiting_thread_work();
      }
      std::exit(0);
    });
    exiting.join(); // never returns: the worker ends the process
  }
  HOTSCOPE_SCOPE("main_tail");
  if (argc > 1 && std::strcmp(argv[1], "fork") == 0) {
    return fork_a_child([] {
      record_in_a_child();
      return 0;
    });
  }
  if (argc > 1 && std::strcmp(argv[1], "agent-fork") == 0) {
    // Under ASan, exit() runs LeakSanitizer, which takes the allocator lock the parent's agent
    // threads may have held at the fork. Other modes test the exit handlers in a child.
    return fork_a_child(holds_no_listening_socket, Leave::without_exit_handlers);
  }
  if (argc > 1 && std::strcmp(argv[1], "child-threads") == 0) {
    return fork_a_child(threads_leave_no_rings);
  }
  if (argc > 1 && std::strcmp(argv[1], "forks") == 0) {
    return hotscope::test_support::fork_while_busy(30, nullptr, record_in_a_child);
  }
  if (argc > 1 && std::strcmp(argv[1], "sigterm") == 0) {
    raise(SIGTERM);
    for (;;) { // the signal ends the process, whether the reports are written first or not
      pause();
    }
  }
  if (argc > 1 && std::strcmp(argv[1], "own-sigterm-handler") == 0) {
    static volatile sig_atomic_t terminated = 0;
    std::signal(SIGTERM, [](int) { terminated = 1; });
    raise(SIGTERM);
    return terminated ? 3 : 4;
  }
  if (argc > 1 && std::strcmp(argv[1], "agent-forks") == 0) {
    return hotscope::test_support::fork_while_busy(
        30, [] { static_cast<void>(hotscope::start_agent()); }, record_in_a_child);
  }
  return 0;
}
