// The process clock: raw ticks on the measured threads (TSC where it is invariant), and the
// conversion of ticks to nanoseconds, which only the collector and exporters need.
#pragma once

#include "snapshot/snapshot.hpp"

#include <cstdint>
#include <optional>

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

// Tests: a clock that only moves when told to; one tick is one nanosecond.
void use_manual_clock_for_testing();
void advance_manual_clock(std::uint64_t ns);

} // namespace hotscope::clock
