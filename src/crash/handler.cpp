// The handlers and their place among the process's own (docs/crash.md, "What a program sees").
#include "crash/crash.hpp"
#include "crash/report.hpp"

#include <cxxabi.h>
#include <fcntl.h>
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <exception>
#include <mutex>

namespace hotscope::crash {
namespace {

constexpr int kSignals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
// The report's time: what is not written by then is left out, and the crash goes on.
constexpr std::uint64_t kReportNs = 2'000'000'000;
// A thread's alternate signal stack, beside a guard page: the report's deepest path (the
// unwinder, an ELF header's program headers) needs some 20 KiB.
constexpr std::size_t kAltStackBytes = 128 * 1024;

int out_dir = -1; // opened at install
struct sigaction previous[NSIG];
std::terminate_handler previous_terminate = nullptr;
HeapReader heap_reader = nullptr;
pthread_key_t alt_stack_key;
std::atomic<bool> installed{false};
// The thread writing the report (0: none yet), and the signal it reports (0: std::terminate).
std::atomic<std::int64_t> reporter{0};
std::atomic<int> reported_signal{0};
std::atomic<bool> report_done{false};

std::int64_t own_tid() {
  return static_cast<std::int64_t>(syscall(SYS_gettid));
}

int open_report(const char* extension) {
  char name[64] = "crash.";
  char digits[20];
  int count = 0;
  for (auto pid = static_cast<unsigned>(getpid()); pid != 0 || count == 0; pid /= 10) {
    digits[count++] = static_cast<char>('0' + pid % 10);
  }
  std::size_t at = std::strlen(name);
  while (count != 0) {
    name[at++] = digits[--count];
  }
  std::strcpy(name + at, extension);
  return openat(out_dir, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
}

void write_files(Crash& crash) {
  crash.heap = heap_reader;
  const int text = open_report(".txt");
  const int json = open_report(".json");
  write_report(crash, text, json);
  if (text >= 0) {
    close(text);
  }
  if (json >= 0) {
    close(json);
  }
}

// Claims the report for the calling thread. False when another thread writes one (the calling
// thread then waits for it, within the report's time) or when the calling thread crashed while
// writing it.
bool claim_report(int signal) {
  std::int64_t none = 0;
  const std::int64_t tid = own_tid();
  if (reporter.compare_exchange_strong(none, tid)) {
    reported_signal.store(signal);
    return true;
  }
  if (none != tid) {
    const std::uint64_t until = monotonic_ns() + kReportNs;
    while (!report_done.load() && monotonic_ns() < until) {
      const timespec pause{0, 10'000'000};
      nanosleep(&pause, nullptr);
    }
  }
  return false;
}

void restore(int signal) {
  sigaction(signal, &previous[signal], nullptr);
}

// Hands the signal to what was there before hotscope. A fault the kernel raised (si_code > 0)
// happens again when the handler returns, with its own address and code; a signal that was sent
// (kill, raise, abort) is sent again with the same siginfo, delivered when the handler returns.
void pass_on(int signal, siginfo_t* info) {
  restore(signal);
  if (info != nullptr && info->si_code > 0) {
    return;
  }
  if (info == nullptr || syscall(SYS_rt_tgsigqueueinfo, getpid(), own_tid(), signal, info) != 0) {
    raise(signal);
  }
}

// A crash inside the report: the signal being reported goes on at once, as without hotscope.
void abandon_report() {
  const int signal = reported_signal.load();
  if (signal == 0) {
    return; // std::terminate's: its abort() follows
  }
  restore(signal);
  sigset_t only;
  sigemptyset(&only);
  sigaddset(&only, signal);
  raise(signal);
  pthread_sigmask(SIG_UNBLOCK, &only, nullptr);
}

void on_signal(int signal, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  if (claim_report(signal)) {
    Crash crash;
    crash.signal = signal;
    if (info != nullptr) {
      crash.code = info->si_code;
      crash.has_address = info->si_code > 0 && signal != SIGABRT;
      crash.address = reinterpret_cast<std::uint64_t>(info->si_addr);
    }
    crash.context = context;
    crash.deadline_ns = monotonic_ns() + kReportNs;
    write_files(crash);
    report_done.store(true);
  } else if (reporter.load() == own_tid() && !report_done.load()) {
    abandon_report();
  }
  pass_on(signal, info);
  errno = saved_errno;
}

// The uncaught exception's type and what(), where it has them.
void describe_exception(Crash& crash) {
  const std::type_info* type = abi::__cxa_current_exception_type();
  crash.exception = type != nullptr ? type->name() : nullptr;
  if (type == nullptr) {
    return;
  }
  try {
    throw;
  } catch (const std::exception& exception) {
    crash.what = exception.what();
  } catch (...) {
  }
}

[[noreturn]] void on_terminate() {
  if (claim_report(0)) {
    Crash crash;
    describe_exception(crash);
    unw_context_t here; // the stack from here: this handler, then the C++ runtime's callers
    unw_getcontext(&here);
    crash.context = &here;
    crash.signal_frame = false;
    crash.deadline_ns = monotonic_ns() + kReportNs;
    write_files(crash);
    report_done.store(true); // the abort() that follows passes SIGABRT on at once
  }
  if (previous_terminate != nullptr) {
    previous_terminate();
  }
  std::abort();
}

// At the thread's end: its alternate stack goes, unless the program has put its own in place.
void free_alt_stack(void* memory) {
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  stack_t current{};
  if (sigaltstack(nullptr, &current) == 0 && current.ss_sp == static_cast<char*>(memory) + page) {
    stack_t none{};
    none.ss_flags = SS_DISABLE;
    sigaltstack(&none, nullptr);
  }
  munmap(memory, kAltStackBytes + page);
}

} // namespace

std::string install(const std::string& directory, HeapReader heap) {
  static std::once_flag once;
  static std::string problem;
  std::call_once(once, [&] {
    heap_reader = heap;
    out_dir = open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (out_dir < 0) {
      problem = "hotscope: HOTSCOPE_OUT=" + directory + ": " + std::strerror(errno) +
                "; no crash reports";
      return;
    }
    remember_clock_origin();
    // libunwind's set-up is not async-signal-safe: done here, once, rather than in the handler.
    unw_context_t context;
    unw_cursor_t cursor;
    unw_getcontext(&context);
    unw_init_local(&cursor, &context);
    if (heap_reader != nullptr) {
      heap_reader(); // binds its symbols now, not lazily in the handler (the loader may lock)
    }
    pthread_key_create(&alt_stack_key, free_alt_stack);
    struct sigaction action {};
    action.sa_sigaction = on_signal;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
    sigemptyset(&action.sa_mask);
    for (const int signal : kSignals) {
      sigaction(signal, &action, &previous[signal]);
    }
    previous_terminate = std::set_terminate(on_terminate);
    installed.store(true, std::memory_order_release);
    prepare_thread();
  });
  return problem;
}

void prepare_thread() noexcept {
  if (!installed.load(std::memory_order_acquire) || pthread_getspecific(alt_stack_key) != nullptr) {
    return;
  }
  stack_t current{};
  if (sigaltstack(nullptr, &current) != 0 || (current.ss_flags & SS_DISABLE) == 0) {
    return; // the program gave the thread one of its own
  }
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  void* memory = mmap(nullptr, kAltStackBytes + page, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (memory == MAP_FAILED) {
    return; // no report of this thread's stack overflowing
  }
  mprotect(memory, page, PROT_NONE); // the guard: an overflow here is a crash, not corruption
  stack_t stack{};
  stack.ss_sp = static_cast<char*>(memory) + page;
  stack.ss_size = kAltStackBytes;
  if (sigaltstack(&stack, nullptr) != 0) {
    munmap(memory, kAltStackBytes + page);
    return;
  }
  pthread_setspecific(alt_stack_key, memory);
}

} // namespace hotscope::crash
