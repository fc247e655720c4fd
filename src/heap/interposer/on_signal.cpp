// Reports on a signal in the heap libraries (HOTSCOPE_ON_SIGNAL=report; src/signals): heap.json
// is written when SIGTERM, SIGINT or SIGHUP ends a program that has no handler of its own, such
// as python3 under `hotscope run --heap`. The handler must stand in for the default action
// without the program noticing: sigaction() and signal() are interposed so that the program sees
// the default action where the handler stands, and a program that installs its own handler only
// over the default one (Python's SIGINT handler, which raises KeyboardInterrupt) still does. A
// program that sets the default action back (Python re-raises SIGINT that way after a
// KeyboardInterrupt ends it) gets the handler again; any other action is installed as asked.
#include "clock/clock.hpp"
#include "config/config.hpp"
#include "heap/interposer/interposer.hpp"
#include "heap/interposer/real_allocator.hpp"
#include "heap/interposer/recording.hpp"
#include "signals/signals.hpp"

#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

namespace signals = hotscope::signals;

std::atomic<void (*)()> also_on_signal{nullptr}; // libhotscope's reports, when it is linked
std::atomic<bool> handler_installed{false};

// The sampled mode starts the reporter thread at its first sample after this long: a thread's
// start, its end and the hand-over of the report at exit are a fifth of what the sampled mode
// adds to a 12 ms `python3 -c pass` (docs/performance.md). Before it a signal's report is written
// from the handler, which a program rarely interrupts inside the allocator: a program that
// allocates gets its thread from here on, and an idle one is waiting, not allocating.
constexpr std::uint64_t kReporterAfterNs = 20'000'000;
std::uint64_t loaded_ns = 0;
std::atomic<bool> reporter_put_off{false};

signals::Sigaction real_sigaction() {
  static const auto real = reinterpret_cast<signals::Sigaction>(dlsym(RTLD_NEXT, "sigaction"));
  return real;
}

// The action each reported signal has in the program's eyes while the handler stands in for
// the default one (zero: SIG_DFL), under a spin lock taken with every signal blocked.
HOTSCOPE_LARGE_ZEROED struct sigaction program_actions[NSIG];
std::atomic_flag actions_lock = ATOMIC_FLAG_INIT;

// Starts the reporter thread, or says why it could not.
void start_reporter() {
  if (const std::string problem = signals::start_reporter(); !problem.empty()) {
    std::fprintf(stderr,
                 "hotscope: %s; a signal's reports are written by the thread it interrupts\n",
                 problem.c_str());
  }
}

void write_reports_on_signal() {
  if (void (*const also)() = also_on_signal.load()) {
    also();
  }
  hotscope::heap::interposer::write_report_now();
}

// Before main (the program's own handlers come later and replace it), once per process: only
// the heap library the program's calls reach (interposer.hpp, preceded()).
__attribute__((constructor)) void report_on_signals() {
  if (hotscope::heap::interposer::preceded()) {
    return;
  }
  hotscope_heap_enter(); // the reporter thread is the profiler's
  std::vector<std::string> errors;
  const bool report = hotscope::config::read_on_signal(
      [](const char* name) -> const char* { return std::getenv(name); }, errors);
  for (const std::string& error : errors) {
    std::fprintf(stderr, "%s\n", error.c_str());
  }
  if (report && real_sigaction() != nullptr) {
    loaded_ns = hotscope::clock::monotonic_ns();
    const hotscope::heap::Recorder* recorder = hotscope::heap::interposer::recording_state();
    const signals::Reporter reporter = recorder != nullptr && recorder->sampling()
                                           ? signals::Reporter::Later
                                           : signals::Reporter::Now;
    reporter_put_off.store(reporter == signals::Reporter::Later);
    const std::string problem =
        signals::report_on_signal(real_sigaction(), write_reports_on_signal, reporter);
    if (problem.empty()) {
      handler_installed.store(true, std::memory_order_release);
    } else {
      std::fprintf(stderr, "%s\n", problem.c_str());
    }
  }
  hotscope_heap_leave();
}

} // namespace

#define HOTSCOPE_EXPORT extern "C" __attribute__((visibility("default")))

HOTSCOPE_EXPORT void hotscope_heap_report_on_signal(void (*write)(void)) {
  also_on_signal.store(write);
  // The runtime's reports (a trace, the agent's files) are a long-running program's: its
  // thread, now.
  hotscope_heap_enter(); // the reporter thread is the profiler's
  start_reporter();
  hotscope_heap_leave();
}

void hotscope::heap::interposer::start_signal_reporter_if_due() {
  if (reporter_put_off.load(std::memory_order_relaxed) && !signals::reporter_started() &&
      handler_installed.load(std::memory_order_acquire) &&
      hotscope::clock::monotonic_ns() - loaded_ns >= kReporterAfterNs) {
    start_reporter();
  }
}

HOTSCOPE_EXPORT int sigaction(int signal, const struct sigaction* action,
                              struct sigaction* old) noexcept {
  const signals::Sigaction real = real_sigaction();
  if (!handler_installed.load(std::memory_order_acquire) || !signals::reported(signal)) {
    return real(signal, action, old);
  }
  sigset_t all;
  sigset_t before;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &before);
  while (actions_lock.test_and_set(std::memory_order_acquire)) {
  }
  struct sigaction current {};
  int result = real(signal, nullptr, &current);
  const bool standing_in = signals::is_handler(current);
  const struct sigaction seen = standing_in ? program_actions[signal] : current;
  if (result == 0 && action != nullptr) {
    if ((action->sa_flags & SA_SIGINFO) == 0 && action->sa_handler == SIG_DFL) {
      program_actions[signal] = *action;
      const struct sigaction handler = signals::handler_action();
      result = standing_in ? 0 : real(signal, &handler, nullptr);
    } else {
      result = real(signal, action, nullptr);
    }
  }
  actions_lock.clear(std::memory_order_release);
  pthread_sigmask(SIG_SETMASK, &before, nullptr);
  if (result == 0 && old != nullptr) {
    *old = seen;
  }
  return result;
}

// signal() as the C library's (BSD semantics: restarted calls, the signal blocked in its
// handler), through the sigaction above.
HOTSCOPE_EXPORT sighandler_t signal(int signal, sighandler_t handler) noexcept {
  struct sigaction action {};
  action.sa_handler = handler;
  sigemptyset(&action.sa_mask);
  sigaddset(&action.sa_mask, signal);
  action.sa_flags = SA_RESTART;
  struct sigaction old {};
  if (sigaction(signal, &action, &old) != 0) {
    return SIG_ERR;
  }
  return old.sa_handler;
}

bool hotscope::heap::interposer::signal_reporter_put_off() {
  return reporter_put_off.load() && !signals::reporter_started();
}
