// The program the console tests watch: a fixed amount of work on main, so that its statistics
// stop changing (`hotscope console --once` can be compared with `hotscope stats`), then a thread
// stuck inside two scopes until SIGTERM. Prints "ready" when the work is done.
#include <hotscope/hotscope.hpp>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <thread>

namespace console_test {

volatile unsigned sink = 0;
std::atomic<bool> stopping{false};

__attribute__((noinline)) void many_quick_steps() {
  HOTSCOPE_FUNCTION();
  sink = sink + 1;
}

__attribute__((noinline)) void few_slow_steps() {
  HOTSCOPE_FUNCTION();
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
}

// Never gets its answer: the thread stays inside hold_lock > wait_for_peer.
__attribute__((noinline)) void wait_for_peer() {
  HOTSCOPE_FUNCTION();
  while (!stopping.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

void stuck_worker() {
  HOTSCOPE_THREAD_NAME("stuck-worker");
  HOTSCOPE_SCOPE("hold_lock");
  wait_for_peer();
}

} // namespace console_test

int main() {
  std::signal(SIGTERM, [](int) { console_test::stopping.store(true); });
  HOTSCOPE_THREAD_NAME("main");
  for (int i = 0; i < 5000; ++i) {
    console_test::many_quick_steps();
  }
  for (int i = 0; i < 20; ++i) {
    console_test::few_slow_steps();
  }
  std::thread stuck(console_test::stuck_worker);
  std::printf("ready\n");
  std::fflush(stdout);
  while (!console_test::stopping.load()) {
    pause();
  }
  stuck.join();
}
