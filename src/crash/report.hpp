// What a crash report says and how (docs/crash.md, "Formats"): written from the handler, into
// the two files at once. No allocation, no lock waited for.
#pragma once

#include "crash/crash.hpp"

#include <cstdint>

namespace hotscope::crash {

struct Crash {
  int signal = 0; // 0: std::terminate
  int code = 0;   // siginfo's si_code
  std::uint64_t address = 0;
  bool has_address = false;        // a fault's address (SIGSEGV, SIGBUS, SIGILL, SIGFPE)
  const char* exception = nullptr; // std::terminate: the uncaught exception's type, mangled
  const char* what = nullptr;      // and its what(), when it is a std::exception
  void* context = nullptr;       // where the stack starts: a signal's ucontext, or unw_getcontext's
  bool signal_frame = true;      // `context` is a signal's
  std::uint64_t deadline_ns = 0; // CLOCK_MONOTONIC: what is not written by then is left out
  HeapReader heap = nullptr;     // nullptr: the report says there is no heap profiler
};

// At install: the clock's origin, against which a crash converts ticks to time.
void remember_clock_origin() noexcept;

// Writes the report into `text` and `json` (file descriptors).
void write_report(const Crash& crash, int text, int json) noexcept;

std::uint64_t monotonic_ns() noexcept;

} // namespace hotscope::crash
