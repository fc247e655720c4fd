#include "signals/signals.hpp"

#include "locks/locks.hpp"
#include "threads/threads.hpp"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>
#include <pthread.h>
#include <semaphore.h>
#include <thread>
#include <unistd.h>

namespace hotscope::signals {
namespace {

constexpr int kReportedSignals[] = {SIGTERM, SIGINT, SIGHUP};
// How long a normal exit waits for a signal's reports (the reporter then ends the process).
constexpr std::chrono::seconds kExitPatience{10};

Sigaction real_sigaction = nullptr;
std::atomic<WriteReports> writer{nullptr};
// The process that installed the handler, and the one whose reporter thread runs (0 before it
// starts): a forked child has neither, its pid differs.
std::atomic<pid_t> handling_pid{0};
std::atomic<pid_t> reporter_pid{0};
std::atomic<bool> reporter_asked{false}; // start_reporter was called (once is enough)
sem_t wake;
std::atomic<int> received{0}; // the signal being reported; 0 while none arrived
// Set on the thread that writes a signal's reports: the reporter, or the one the handler
// interrupted where no reporter runs.
__thread bool writes_signal_reports = false;

// A report at exit handed to the reporter (run_on_reporter).
struct Job {
  void (*work)(void*);
  void* context;
  sem_t done;
};
std::atomic<Job*> job{nullptr};

void restore_default(int signal) {
  struct sigaction action {};
  action.sa_handler = SIG_DFL;
  sigemptyset(&action.sa_mask);
  real_sigaction(signal, &action, nullptr);
}

// Writes the reports of `signal` on this thread, then ends the process with it: the default
// action, the signal unblocked and raised again.
void report_and_end(int signal) {
  writes_signal_reports = true;
  if (const WriteReports write = writer.load()) {
    write();
  }
  restore_default(signal);
  sigset_t only;
  sigemptyset(&only);
  sigaddset(&only, signal);
  pthread_sigmask(SIG_UNBLOCK, &only, nullptr);
  raise(signal); // the default action: the whole process ends, killed by the signal
}

// Async-signal-safe where a reporter runs: getpid, sem_post, sigaction, raise and lock-free
// atomics only. Where none runs yet, this thread writes the reports itself.
void on_signal(int signal) {
  const int saved_errno = errno;
  const pid_t self = getpid();
  if (self != handling_pid.load()) {
    restore_default(signal);
    raise(signal); // blocked in this handler: taken, with the default action, when it returns
  } else if (int none = 0; received.compare_exchange_strong(none, signal)) {
    if (self == reporter_pid.load()) {
      sem_post(&wake);
    } else {
      report_and_end(signal);
    }
  }
  // A signal that arrives while the reports are written is not needed: the process ends with the
  // first one.
  errno = saved_errno;
}

void* run_reporter(void*) {
  pthread_setname_np(pthread_self(), "hotscope-signal"); // not the program's, in top -H
  locks::own_thread();
  const threads::OwnThread own;
  writes_signal_reports = true;
  for (;;) {
    while (sem_wait(&wake) != 0 && errno == EINTR) {
    }
    if (received.load() != 0) {
      break;
    }
    if (Job* const handed = job.exchange(nullptr)) {
      handed->work(handed->context);
      sem_post(&handed->done);
    }
  }
  report_and_end(received.load());
  return nullptr;
}

// Whether this thread may hand work to the reporter.
bool reporter_available() {
  return !writes_signal_reports && reporter_pid.load() == getpid() && received.load() == 0;
}

} // namespace

std::string start_reporter() {
  if (reporter_asked.load() || handling_pid.load() != getpid() || reporter_asked.exchange(true)) {
    return "";
  }
  const threads::SignalsBlocked blocked;
  pthread_t thread;
  if (const int error = pthread_create(&thread, nullptr, run_reporter, nullptr); error != 0) {
    return std::string("cannot start a thread: ") + std::strerror(error);
  }
  pthread_detach(thread);
  reporter_pid.store(getpid()); // a signal that came meanwhile was reported by its handler
  return "";
}

bool reported(int signal) {
  for (const int each : kReportedSignals) {
    if (each == signal) {
      return true;
    }
  }
  return false;
}

struct sigaction handler_action() {
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  for (const int signal : kReportedSignals) {
    sigaddset(&action.sa_mask, signal);
  }
  action.sa_flags = SA_RESTART;
  return action;
}

bool is_handler(const struct sigaction& action) {
  return (action.sa_flags & SA_SIGINFO) == 0 && action.sa_handler == on_signal;
}

std::string report_on_signal(Sigaction real, WriteReports write, Reporter reporter) {
  static std::once_flag once;
  static std::string problem;
  std::call_once(once, [&] {
    real_sigaction = real;
    if (sem_init(&wake, 0, 0) != 0) {
      problem = std::string("cannot make a semaphore: ") + std::strerror(errno);
      return;
    }
    handling_pid.store(getpid());
  });
  if (!problem.empty()) {
    return "hotscope: HOTSCOPE_ON_SIGNAL=report: " + problem + "; no reports on a signal";
  }
  if (reporter == Reporter::Now) {
    if (const std::string not_started = start_reporter(); !not_started.empty()) {
      return "hotscope: HOTSCOPE_ON_SIGNAL=report: " + not_started + "; no reports on a signal";
    }
  }
  writer.store(write);
  const struct sigaction handler = handler_action();
  for (const int signal : kReportedSignals) {
    struct sigaction current {};
    if (real_sigaction(signal, nullptr, &current) == 0 &&
        (is_handler(current) ||
         ((current.sa_flags & SA_SIGINFO) == 0 && current.sa_handler == SIG_DFL))) {
      real_sigaction(signal, &handler, nullptr);
    }
  }
  return "";
}

bool reporter_started() {
  return reporter_asked.load();
}

bool run_on_reporter(void (*work)(void*), void* context) {
  if (!reporter_available()) {
    return false;
  }
  Job handed{work, context, {}};
  if (sem_init(&handed.done, 0, 0) != 0) {
    return false;
  }
  Job* none = nullptr;
  if (!job.compare_exchange_strong(none, &handed)) {
    sem_destroy(&handed.done);
    return false; // another thread's report is there
  }
  sem_post(&wake);
  // A signal that comes first ends the process from the reporter, which writes its reports.
  while (sem_wait(&handed.done) != 0 && errno == EINTR) {
  }
  sem_destroy(&handed.done);
  return true;
}

void wait_for_signal_report() {
  if (writes_signal_reports || handling_pid.load() != getpid() || received.load() == 0) {
    return;
  }
  std::this_thread::sleep_for(kExitPatience);
}

} // namespace hotscope::signals
