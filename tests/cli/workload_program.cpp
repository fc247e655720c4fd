// A program with known costs, run twice to make the pairs `hotscope diff` compares and the
// reports `hotscope report` and `hotscope flame` draw (tests/cli, tests/viewers/report_test.js).
//   workload_program [--slow] [--leak] [--wait]
// 200 requests on the main thread, each: steady_parse (200 µs), regressed (200 µs; 1 ms with
// --slow: the slowdown outweighs what preemption on a loaded machine adds to the others),
// steady_io (100 µs), leaky_site (a 4 KiB block, freed; with --leak one in four kept:
// 50 blocks, 200 KiB at the end) and cache_site (a 1 KiB vector); a thread "worker" meanwhile
// runs 100 background_task calls (200 µs). Between requests, outside any scope, the main thread
// spins 0 to 500 µs at random: a request's rhythm in step with the kernel's tick would otherwise
// alias with CPU-clock timers, which fire on the tick, and move a run's samples between
// neighbouring scopes (docs/diff-and-report.md). Times are spun on the thread's own CPU clock, so
// each call computes what it says however the machine is loaded (a preemption makes it last
// longer).
// --wait: then prints "ready" and waits for SIGTERM or SIGINT, for `hotscope diff -p`.
#include <hotscope/hotscope.hpp>

#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

// Functions at file scope (static), not in an anonymous namespace, so that their names are just
// "regressed" and so on.
using std::chrono::microseconds;

static std::chrono::nanoseconds thread_cpu_time() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return std::chrono::seconds(now.tv_sec) + std::chrono::nanoseconds(now.tv_nsec);
}

// Spins until the thread has computed for `duration`: its CPU time per call is then what it says
// however loaded the machine is (which `hotscope diff`'s CPU columns compare), and its wall time
// at least that.
static void spin_for(microseconds duration) {
  const auto end = thread_cpu_time() + duration;
  while (thread_cpu_time() < end) {
  }
}

static void* kept[50]; // the leak: never freed (an array, so that keeping them allocates nothing)
static int kept_count = 0;

__attribute__((noinline)) static void steady_parse() {
  HOTSCOPE_FUNCTION();
  spin_for(microseconds(200));
}

__attribute__((noinline)) static void regressed(bool slow) {
  HOTSCOPE_FUNCTION();
  spin_for(microseconds(slow ? 1000 : 200));
}

__attribute__((noinline)) static void steady_io() {
  HOTSCOPE_FUNCTION();
  spin_for(microseconds(100));
}

__attribute__((noinline)) static void leaky_site(bool leak, int request) {
  HOTSCOPE_FUNCTION();
  auto* block = static_cast<volatile char*>(std::malloc(4096));
  block[0] = static_cast<char>(request);
  if (leak && request % 4 == 0 && kept_count < 50) {
    kept[kept_count++] = const_cast<char*>(block);
  } else {
    std::free(const_cast<char*>(block));
  }
}

__attribute__((noinline)) static void cache_site(int request) {
  HOTSCOPE_FUNCTION();
  std::vector<char> cache(1024, static_cast<char>(request));
  static_cast<volatile char*>(cache.data())[1] = 0;
}

static void handle_request(bool slow, bool leak, int request) {
  HOTSCOPE_FUNCTION();
  steady_parse();
  regressed(slow);
  steady_io();
  leaky_site(leak, request);
  cache_site(request);
}

__attribute__((noinline)) static void background_task() {
  HOTSCOPE_FUNCTION();
  spin_for(microseconds(200));
}

static volatile sig_atomic_t stop = 0;

int main(int argc, char** argv) {
  bool slow = false, leak = false, wait = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--slow") == 0) {
      slow = true;
    } else if (std::strcmp(argv[i], "--leak") == 0) {
      leak = true;
    } else if (std::strcmp(argv[i], "--wait") == 0) {
      wait = true;
    } else {
      std::fprintf(stderr, "workload_program: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  HOTSCOPE_THREAD_NAME("main");
  std::thread worker([] {
    HOTSCOPE_THREAD_NAME("worker");
    for (int i = 0; i < 100; ++i) {
      background_task();
    }
  });
  std::minstd_rand random(static_cast<unsigned>(getpid()));
  std::uniform_int_distribution<int> pause_us(0, 500);
  for (int request = 0; request < 200; ++request) {
    handle_request(slow, leak, request);
    spin_for(microseconds(pause_us(random)));
  }
  worker.join();
  if (wait) {
    // Blocked until sigsuspend waits, so a signal sent right after "ready" is not missed.
    sigset_t ending, before;
    sigemptyset(&ending);
    sigaddset(&ending, SIGTERM);
    sigaddset(&ending, SIGINT);
    sigprocmask(SIG_BLOCK, &ending, &before);
    signal(SIGTERM, [](int) { stop = 1; });
    signal(SIGINT, [](int) { stop = 1; });
    std::printf("ready\n");
    std::fflush(stdout);
    while (stop == 0) {
      sigsuspend(&before);
    }
  }
  return 0;
}
