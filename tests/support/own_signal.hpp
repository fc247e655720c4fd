// For test programs that check that a process's signals reach only its own threads.
#pragma once

#include <csignal>
#include <functional>
#include <pthread.h>
#include <thread>
#include <unistd.h>

namespace hotscope::test_support {

// Blocks SIGUSR1 in the calling thread (call it before the program starts any thread), runs
// `meanwhile`, sends SIGUSR1 to the process and takes it with sigwait() on a thread of the
// program: 0 when that thread got it. A profiler thread that left SIGUSR1 unblocked would take it
// instead and end the process (its default action).
inline int signal_reaches_the_program(const std::function<void()>& meanwhile) {
  sigset_t usr1;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &usr1, nullptr);
  int received = 0;
  std::thread waiter([&] { sigwait(&usr1, &received); });
  meanwhile();
  kill(getpid(), SIGUSR1);
  waiter.join();
  return received == SIGUSR1 ? 0 : 4;
}

} // namespace hotscope::test_support
