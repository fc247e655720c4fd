// The program AgentThreads looks at: two threads deadlocked inside scopes (each holds one mutex
// and waits for the other's), a thread spinning and a thread sleeping in short scopes, and main
// with no scope open. It runs until SIGTERM.
#include <hotscope/hotscope.hpp>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <optional>
#include <thread>
#include <unistd.h>

namespace {

static_assert(std::atomic<bool>::is_always_lock_free, "set from a signal handler");

std::mutex first;
std::mutex second;
std::atomic<int> holding{0};

// Both lockers hold their first mutex before either asks for the other: a certain deadlock.
void wait_until_both_hold() {
  ++holding;
  while (holding.load() < 2) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void locker_a() {
  HOTSCOPE_THREAD_NAME("locker-a");
  HOTSCOPE_SCOPE("hold_first");
  const std::lock_guard held(first);
  wait_until_both_hold();
  HOTSCOPE_SCOPE("take_second");
  const std::lock_guard never(second);
}

void locker_b() {
  HOTSCOPE_THREAD_NAME("locker-b");
  HOTSCOPE_SCOPE("hold_second");
  const std::lock_guard held(second);
  wait_until_both_hold();
  HOTSCOPE_SCOPE("take_first");
  const std::lock_guard never(first);
}

// Spins while `spinning` is set (SIGUSR1 toggles it), else polls it every millisecond. Each
// spell of spinning ends with a line on stdout: "spun wall=W cpu=C waited=D", its wall time,
// CPU time and time spent waiting for a CPU (ns, the thread's own schedstat), so the test knows
// what the CPU time shown for it must be even on a busy machine.
std::atomic<bool> spinning{false};

struct Sample {
  std::uint64_t wall = 0;
  std::uint64_t cpu = 0;
  std::uint64_t waited = 0;
};

Sample sample() {
  Sample now;
  now.wall = static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                            std::chrono::steady_clock::now().time_since_epoch())
                                            .count());
  std::ifstream("/proc/thread-self/schedstat") >> now.cpu >> now.waited;
  return now;
}

void spinner() {
  HOTSCOPE_THREAD_NAME("spinner");
  volatile std::uint64_t spins = 0;
  std::optional<Sample> start;
  for (;;) {
    HOTSCOPE_SCOPE("spin_a_while");
    if (spinning.load()) {
      if (!start) {
        start = sample();
      }
      for (int i = 0; i < 100'000; ++i) {
        spins = spins + 1;
      }
      continue;
    }
    if (start) {
      const Sample end = sample();
      std::printf("spun wall=%llu cpu=%llu waited=%llu\n",
                  static_cast<unsigned long long>(end.wall - start->wall),
                  static_cast<unsigned long long>(end.cpu - start->cpu),
                  static_cast<unsigned long long>(end.waited - start->waited));
      std::fflush(stdout);
      start.reset();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void sleeper() {
  HOTSCOPE_THREAD_NAME("sleeper");
  for (;;) {
    HOTSCOPE_SCOPE("nap");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

} // namespace

int main() {
  std::signal(SIGTERM, [](int) { _exit(0); });
  std::signal(SIGUSR1, [](int) { spinning.store(!spinning.load()); });
  HOTSCOPE_THREAD_NAME("main");
  for (void (*body)() : {locker_a, locker_b, spinner, sleeper}) {
    std::thread(body).detach();
  }
  for (;;) {
    pause();
  }
}
