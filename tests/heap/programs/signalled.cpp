// A program for `hotscope run` and signals (run_signals_test.cpp). It records a scope, prints
// "ready PID" and then, by argv[1]:
//   wait   waits with every signal's default action until one ends it;
//   count  counts SIGINT in a handler of its own and returns 0 half a second after the first,
//          printing "sigint N";
//   exit   returns 40 + the number of the first of SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 it gets.
#include <hotscope/hotscope.hpp>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <unistd.h>

namespace {

volatile std::sig_atomic_t received = 0;
volatile std::sig_atomic_t sigints = 0;

void ready() {
  HOTSCOPE_SCOPE("ready");
  std::printf("ready %d\n", static_cast<int>(getpid()));
  std::fflush(stdout);
}

} // namespace

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "wait";
  if (std::strcmp(mode, "count") == 0) {
    std::signal(SIGINT, [](int) { sigints = sigints + 1; });
    ready();
    while (sigints == 0) {
      pause();
    }
    usleep(500'000); // room for a second SIGINT, if one is sent
    std::printf("sigint %d\n", static_cast<int>(sigints));
    return 0;
  }
  if (std::strcmp(mode, "exit") == 0) {
    for (const int signal : {SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2}) {
      std::signal(signal, [](int number) { received = number; });
    }
    ready();
    while (received == 0) {
      pause();
    }
    return 40 + received;
  }
  ready();
  for (;;) {
    pause();
  }
}
