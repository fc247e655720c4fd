// For test programs that check that a forked child never waits for a lock its parent's threads
// held at the fork.
#pragma once

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace hotscope::test_support {

// Forks `children` children one after the other while a thread of the parent runs `busy` over
// and over (unless it is empty), so that the profiler's own threads are at work at every fork.
// Each child runs
// `in_child` and calls exit(0), which runs the profiler's exit handlers. Returns 0 when every
// child exited with 0 within 10 s; otherwise kills a late child, says which on stderr and
// returns 5 (6 when fork() failed).
inline int fork_while_busy(int children, const std::function<void()>& busy,
                           const std::function<void()>& in_child) {
  std::atomic<bool> done{false};
  std::thread worker;
  if (busy) {
    worker = std::thread([&] {
      while (!done.load(std::memory_order_relaxed)) {
        busy();
      }
    });
  }
  int result = 0;
  for (int i = 0; i < children && result == 0; ++i) {
    const pid_t child = fork();
    if (child < 0) {
      std::perror("fork");
      result = 6;
      break;
    }
    if (child == 0) {
      in_child();
      std::exit(0);
    }
    int status = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (waitpid(child, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        std::fprintf(stderr, "forked child %d of %d did not exit within 10 s\n", i + 1, children);
        kill(child, SIGKILL);
        waitpid(child, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      result = 5;
    }
  }
  done.store(true, std::memory_order_relaxed);
  if (worker.joinable()) {
    worker.join();
  }
  return result;
}

} // namespace hotscope::test_support
