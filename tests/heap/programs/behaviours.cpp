// Workloads for the preload library's edge cases, one per mode (argv[1]):
//   threads    three waves of four threads allocate and free concurrently, each thread leaks
//              a few blocks;
//   handoff    two threads allocate (and realloc half of the blocks), two others free them: an
//              address freed on one thread comes back from malloc on another at once;
//   fork       the parent allocates around a fork, the child allocates and exits normally;
//              prints the parent's pid;
//   forks      forks 30 children one after the other while a thread of the parent allocates
//              and frees; each child allocates on a thread of its own and exits normally;
//   lifecycle  allocations in a static constructor, an atexit handler and a static destructor
//              (after main has returned);
//   unknown    frees and reallocs blocks the profiler never saw (from __libc_malloc);
//   exec       runs itself in "lifecycle" mode as a child process (fork and exec) and waits;
//   exit       a thread calls exit() while two others keep allocating and freeing;
//   chdir      allocates, then changes to the root directory before exiting;
//   profile-exit builds heap profiles (hotscope_heap_profile) over and over until a timer's
//              signal handler calls exit(), most likely in the middle of one;
//   allocating-exit allocates and frees large blocks until a timer's signal handler calls
//              exit(), most likely while glibc's malloc holds its lock;
//   loader-lock-exit waits inside dl_iterate_phdr until a timer's signal handler calls exit();
//   sigwait    blocks SIGUSR1, sends it to itself and takes it with sigwait() in a thread: any
//              thread of the process (a profiler's too) that left it unblocked would die of it.
#include "support/forks.hpp"
#include "support/own_signal.hpp"

#include <dlfcn.h>
#include <link.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <ctime>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

extern "C" void* __libc_malloc(std::size_t size);

namespace {

void* volatile sink;

bool lifecycle_mode = false;

// Allocates after main only in the lifecycle mode: in the modes whose signal handler calls exit(),
// the handler may have interrupted malloc holding its lock.
struct AllocatesAroundMain {
  AllocatesAroundMain() : early(static_cast<char*>(std::malloc(333))) {}
  ~AllocatesAroundMain() {
    if (!lifecycle_mode) {
      return;
    }
    std::free(early);
    sink = std::malloc(444); // allocated after main returned, never freed
    std::free(std::malloc(555));
  }
  char* early;
};
AllocatesAroundMain around_main;

void at_exit_handler() {
  std::free(std::calloc(3, 111));
}

// Three waves of four threads: threads start and end while others allocate.
int threads() {
  for (int wave = 0; wave < 3; ++wave) {
    std::vector<std::thread> workers;
    for (int t = 0; t < 4; ++t) {
      workers.emplace_back([t, wave] {
        std::vector<void*> blocks;
        for (int i = 0; i < 2000; ++i) {
          blocks.push_back(std::malloc(16 + static_cast<std::size_t>((i * 7 + t + wave) % 300)));
          if (i % 3 == 0) {
            std::free(blocks.back());
            blocks.pop_back();
          }
        }
        for (std::size_t i = 3; i < blocks.size(); ++i) {
          std::free(blocks[i]); // the first three leak
        }
      });
    }
    for (std::thread& worker : workers) {
      worker.join();
    }
  }
  return 0;
}

int handoff() {
  std::mutex mutex;
  std::vector<void*> queue;
  queue.reserve(100000);
  std::atomic<int> producing{2};
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20000; ++i) {
        void* block = std::malloc(16 + static_cast<std::size_t>((i + t) % 200));
        if (i % 2 == 0) {
          block = std::realloc(block, 32 + static_cast<std::size_t>(i % 300));
        }
        const std::lock_guard lock(mutex);
        queue.push_back(block);
      }
      --producing;
    });
  }
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&] {
      for (;;) {
        void* block = nullptr;
        {
          const std::lock_guard lock(mutex);
          if (queue.empty() && producing.load() == 0) {
            return;
          }
          if (!queue.empty()) {
            block = queue.back();
            queue.pop_back();
          }
        }
        std::free(block);
      }
    });
  }
  for (std::thread& thread : threads) {
    thread.join();
  }
  sink = std::malloc(77); // the one leak
  return 0;
}

int fork_child() {
  void* before = std::malloc(1000);
  const pid_t child = fork();
  if (child < 0) {
    return 2;
  }
  if (child == 0) {
    std::free(before);
    std::string text(5000, 'c');
    sink = std::malloc(text.size());
    std::exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  std::free(before);
  sink = std::malloc(2000);
  std::printf("%d\n", static_cast<int>(getpid()));
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 3;
}

int lifecycle() {
  lifecycle_mode = true;
  std::atexit(at_exit_handler);
  sink = std::malloc(77);
  return 0;
}

int unknown() {
  void* outside = __libc_malloc(64);
  std::free(outside);
  void* moved = std::realloc(__libc_malloc(32), 4000); // counted from here on, as a new block
  std::free(moved);
  return 0;
}

int exec_self() {
  const pid_t child = fork();
  if (child < 0) {
    return 2;
  }
  if (child == 0) {
    execl("/proc/self/exe", "behaviours", "lifecycle", static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  waitpid(child, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 3;
}

int exit_from_thread() {
  for (int t = 0; t < 2; ++t) {
    std::thread([] {
      for (;;) {
        std::free(std::malloc(64));
      }
    }).detach();
  }
  std::thread([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::exit(0);
  }).join();
  return 1; // not reached
}

void ignore_profile(void*, int, const char*, std::size_t) {}

// SIGALRM's handler calls exit() 20 ms from now. A watchdog ends the process with SIGUSR2 (its
// default action) if exit hangs.
void exit_from_a_handler_soon() {
  sigevent watchdog_event{};
  watchdog_event.sigev_notify = SIGEV_SIGNAL;
  watchdog_event.sigev_signo = SIGUSR2;
  timer_t watchdog;
  const itimerspec ten_seconds{{0, 0}, {10, 0}};
  timer_create(CLOCK_MONOTONIC, &watchdog_event, &watchdog);
  timer_settime(watchdog, 0, &ten_seconds, nullptr);
  std::signal(SIGALRM, [](int) { std::exit(0); });
  const itimerval twenty_ms{{0, 0}, {0, 20000}};
  setitimer(ITIMER_REAL, &twenty_ms, nullptr);
}

int profile_until_exit() {
  using Sink = void (*)(void*, int, const char*, std::size_t);
  const auto profile =
      reinterpret_cast<int (*)(int, Sink, void*)>(dlsym(RTLD_DEFAULT, "hotscope_heap_profile"));
  if (profile == nullptr) {
    std::fprintf(stderr, "hotscope_heap_profile not found: run with the preload library\n");
    return 2;
  }
  std::vector<void*> blocks;
  for (std::size_t i = 0; i < 2000; ++i) {
    blocks.push_back(std::malloc(16 + i));
  }
  exit_from_a_handler_soon();
  for (;;) {
    profile(0, ignore_profile, nullptr); // no format: the time goes to the symbol lookups
  }
}

// Waits inside dl_iterate_phdr, which holds the loader's lock, until the handler calls exit().
int hold_the_loader_lock_until_exit() {
  exit_from_a_handler_soon();
  dl_iterate_phdr(
      [](dl_phdr_info*, std::size_t, void*) {
        for (;;) {
          pause();
        }
        return 0;
      },
      nullptr);
  return 1; // not reached
}

// Blocks of 4,000 bytes, too large for glibc's per-thread caches: most of the time the thread
// holds the allocator's lock when the handler interrupts it.
int allocate_until_exit() {
  std::vector<void*> blocks(1000);
  exit_from_a_handler_soon();
  for (;;) {
    for (void*& block : blocks) {
      block = std::malloc(4000);
    }
    for (void* block : blocks) {
      std::free(block);
    }
  }
}

} // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "threads") {
    return threads();
  }
  if (mode == "handoff") {
    return handoff();
  }
  if (mode == "fork") {
    return fork_child();
  }
  if (mode == "forks") {
    return hotscope::test_support::fork_while_busy(
        30, [] { std::free(std::malloc(64)); },
        [] { std::thread([] { sink = std::malloc(100); }).join(); });
  }
  if (mode == "lifecycle") {
    return lifecycle();
  }
  if (mode == "unknown") {
    return unknown();
  }
  if (mode == "exec") {
    return exec_self();
  }
  if (mode == "exit") {
    return exit_from_thread();
  }
  if (mode == "sigwait") {
    return hotscope::test_support::signal_reaches_the_program([] {
      for (int i = 0; i < 1000; ++i) {
        std::free(std::malloc(32)); // keeps the profiler busy meanwhile
      }
    });
  }
  if (mode == "profile-exit") {
    return profile_until_exit();
  }
  if (mode == "allocating-exit") {
    return allocate_until_exit();
  }
  if (mode == "loader-lock-exit") {
    return hold_the_loader_lock_until_exit();
  }
  if (mode == "chdir") {
    sink = std::malloc(10);
    return chdir("/");
  }
  std::fprintf(
      stderr,
      "usage: %s "
      "threads|handoff|fork|forks|lifecycle|unknown|exec|exit|chdir|profile-exit|allocating-exit|"
      "loader-lock-exit|sigwait\n",
      argv[0]);
  return 1;
}
