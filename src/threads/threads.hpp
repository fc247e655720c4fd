// Threads the profiler starts take none of the program's signals: a program that blocks a
// signal in all its threads to sigwait() for it must not find it delivered to one of ours (where
// its default action may end the process). Header-only: the heap libraries use it too.
#pragma once

#include <pthread.h>
#include <signal.h>

namespace hotscope::threads {

// Blocks every signal in the calling thread while it lives: threads started meanwhile start
// with every signal blocked, from their first instruction.
class SignalsBlocked {
public:
  SignalsBlocked() {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &before_);
  }
  ~SignalsBlocked() { pthread_sigmask(SIG_SETMASK, &before_, nullptr); }
  SignalsBlocked(const SignalsBlocked&) = delete;
  SignalsBlocked& operator=(const SignalsBlocked&) = delete;

private:
  sigset_t before_;
};

} // namespace hotscope::threads
