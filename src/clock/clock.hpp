// The process clock: raw ticks on the measured threads (TSC where it is invariant), and the
// conversion of ticks to nanoseconds, which only the collector and exporters need.
#pragma once

#include "snapshot/snapshot.hpp"

#include <cstdint>
#include <optional>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace hotscope::clock {

enum class Request { Auto, Tsc, Monotonic };

// What CPUID says about the TSC on this machine.
bool cpu_has_invariant_tsc();
// The TSC frequency from CPUID leaf 0x15 (crystal ratio) or 0x16 (base MHz), if given.
std::optional<double> cpuid_tsc_hz();

// Chooses the source once per process; later calls keep the first choice.
// Must run before any thread records (the runtime does it on first use).
void init(Request request);
// The current estimate; a calibrated TSC frequency is refined on every call
// against the whole time since init().
double ticks_per_second();
ClockInfo info();
std::uint64_t now_ticks();
std::uint64_t monotonic_ns();

// A clock that needs no init(), for code that runs before anything is set up (the heap libraries'
// hooks, from the process's first allocation on): TSC ticks where CPUID says the TSC is invariant,
// else CLOCK_MONOTONIC in ns. Copyable, no lock, no allocation.
class FreeRunningClock {
public:
  // Chooses the source and reads the start. `allow_tsc` false: CLOCK_MONOTONIC, for a clock read
  // rarely, whose TSC check (CPUID, some 7 µs a call in a virtual machine) would cost more.
  explicit FreeRunningClock(bool allow_tsc = true);
  std::uint64_t ticks() const {
#if defined(__x86_64__)
    if (tsc_) {
      return __rdtsc();
    }
#endif
    return monotonic_ns();
  }
  bool tsc() const {
    return tsc_;
  }
  std::uint64_t start_ticks() const {
    return start_ticks_;
  }
  // µs per tick, measured against CLOCK_MONOTONIC over the time since the start, given the ticks
  // counted since then (`elapsed_ticks`, 0 gives 0).
  double microseconds_per_tick(std::uint64_t elapsed_ticks) const;

private:
  bool tsc_ = false;
  std::uint64_t start_ticks_ = 0;
  std::uint64_t start_ns_ = 0;
};

// Tests: a clock that only moves when told to; one tick is one nanosecond.
void use_manual_clock_for_testing();
void advance_manual_clock(std::uint64_t ns);

} // namespace hotscope::clock
