// The program AgentLocks looks at: hotscope::Lockable locks in every state the outputs show. A
// holder keeps "contended_lock" 10 ms at a time inside a scope while a waiter asks for it (waits
// with handoffs), then two lockers deadlock on "first_lock" and "second_lock" (each holds one and
// waits for the other). It runs until SIGTERM.
#include <hotscope/hotscope.hpp>
#include <hotscope/lockable.hpp>

#include <atomic>
#include <chrono>
#include <csignal>
#include <mutex>
#include <thread>
#include <unistd.h>

namespace {

HOTSCOPE_LOCKABLE(std::mutex, contended_lock);
HOTSCOPE_LOCKABLE(std::mutex, first_lock);
HOTSCOPE_LOCKABLE(std::mutex, second_lock);
std::atomic<int> holding{0};
std::atomic<bool> contention_done{false};

constexpr int kRounds = 20;

void holder() {
  HOTSCOPE_THREAD_NAME("holder");
  for (int i = 0; i < kRounds; ++i) {
    HOTSCOPE_SCOPE("hold_a_while");
    const std::lock_guard held(contended_lock);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

void waiter() {
  HOTSCOPE_THREAD_NAME("waiter");
  for (int i = 0; i < kRounds; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2)); // the holder takes it first
    HOTSCOPE_SCOPE("ask_for_it");
    const std::lock_guard taken(contended_lock);
  }
  contention_done = true;
}

// Both lockers hold their first lock before either asks for the other: a certain deadlock.
void wait_until_both_hold() {
  ++holding;
  while (holding.load() < 2) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void locker(const char* name, hotscope::Lockable<std::mutex>& mine,
            hotscope::Lockable<std::mutex>& other) {
  HOTSCOPE_THREAD_NAME(name);
  while (!contention_done.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  HOTSCOPE_SCOPE("hold_one");
  const std::lock_guard held(mine);
  wait_until_both_hold();
  HOTSCOPE_SCOPE("take_the_other");
  const std::lock_guard never(other);
}

} // namespace

int main() {
  std::signal(SIGTERM, [](int) { _exit(0); });
  HOTSCOPE_THREAD_NAME("main");
  std::thread(holder).detach();
  std::thread(waiter).detach();
  std::thread([] { locker("locker-a", first_lock, second_lock); }).detach();
  std::thread([] { locker("locker-b", second_lock, first_lock); }).detach();
  for (;;) {
    pause();
  }
}
