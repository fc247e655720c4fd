#include "clock/clock.hpp"

#include <hotscope/hotscope.hpp>

#include <atomic>
#include <ctime>
#include <mutex>
#include <new>
#include <pthread.h>
#include <string>
#include <thread>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace hotscope::detail {
bool clock_is_tsc = false;
} // namespace hotscope::detail

namespace hotscope::clock {
namespace {

// A calibration this short is only the first guess; refinement replaces it.
constexpr std::uint64_t kFirstCalibrationNs = 10'000'000;
// A (monotonic, tsc, monotonic) reading taking longer than this was interrupted.
constexpr std::uint64_t kMaxPairReadNs = 2'000;

std::atomic<bool> manual_clock{false};
std::atomic<std::uint64_t> manual_ticks{0};

struct State {
  std::mutex mutex;
  bool initialized = false;
  ClockInfo info;
  std::uint64_t anchor_ticks = 0;
  std::uint64_t anchor_ns = 0;
};

State* state_instance = nullptr; // set once by state()

// A forked child's only thread holds no lock, whoever held this one at the fork (info() on an
// agent thread): the child gets a fresh one.
void fresh_lock_in_child() {
  new (&state_instance->mutex) std::mutex;
}

State& state() {
  static State* instance = [] { // never destroyed: used from exit handlers
    state_instance = new State;
    pthread_atfork(nullptr, nullptr, fresh_lock_in_child);
    return state_instance;
  }();
  return *instance;
}

std::uint64_t read_monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

#if defined(__x86_64__)
// A TSC reading and the CLOCK_MONOTONIC time at the same instant (midpoint of two reads).
void paired_reading(std::uint64_t& ticks, std::uint64_t& ns) {
  for (int attempt = 0;; ++attempt) {
    const std::uint64_t before = read_monotonic_ns();
    ticks = __rdtsc();
    const std::uint64_t after = read_monotonic_ns();
    ns = before + (after - before) / 2;
    if (after - before <= kMaxPairReadNs || attempt == 8) {
      return;
    }
  }
}
#endif

} // namespace

// CPUID traps to the hypervisor in a virtual machine: 6 µs to 0.3 ms each on the 2-core test
// machine, a visible part of a short program's start under `hotscope run`. So each leaf is asked
// once, after one look at the highest leaf (where <cpuid.h>'s __get_cpuid asks for both each time).
bool cpu_has_invariant_tsc() {
#if defined(__x86_64__)
  if (__get_cpuid_max(0x80000000u, nullptr) < 0x80000007u) {
    return false;
  }
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  __cpuid(0x80000007u, eax, ebx, ecx, edx);
  return (edx & (1u << 8)) != 0;
#else
  return false;
#endif
}

std::optional<double> cpuid_tsc_hz() {
#if defined(__x86_64__)
  const unsigned highest = __get_cpuid_max(0, nullptr);
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (highest >= 0x15) {
    __cpuid_count(0x15, 0, eax, ebx, ecx, edx);
    if (eax != 0 && ebx != 0 && ecx != 0) {
      return static_cast<double>(ecx) * ebx / eax; // crystal Hz * TSC/crystal ratio
    }
  }
  if (highest >= 0x16) {
    __cpuid_count(0x16, 0, eax, ebx, ecx, edx);
    if ((eax & 0xffff) != 0) {
      return (eax & 0xffff) * 1e6; // base frequency in MHz, which the TSC runs at
    }
  }
#endif
  return std::nullopt;
}

void init(Request request) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (s.initialized) {
    return;
  }
  s.initialized = true;
  s.info.invariant_tsc = cpu_has_invariant_tsc();
  bool use_tsc = false;
#if defined(__x86_64__)
  switch (request) {
  case Request::Auto:
    use_tsc = s.info.invariant_tsc;
    s.info.reason = use_tsc ? "invariant TSC (CPUID 0x80000007 EDX bit 8)"
                            : "CPUID reports no invariant TSC; set HOTSCOPE_CLOCK=tsc to force it";
    break;
  case Request::Tsc:
    use_tsc = true;
    s.info.reason = "HOTSCOPE_CLOCK=tsc";
    break;
  case Request::Monotonic:
    s.info.reason = "HOTSCOPE_CLOCK=monotonic";
    break;
  }
#else
  (void)request;
  s.info.reason = "no TSC on this architecture";
#endif
  if (use_tsc) {
#if defined(__x86_64__)
    s.info.source = "tsc";
    paired_reading(s.anchor_ticks, s.anchor_ns);
    if (const auto hz = cpuid_tsc_hz()) {
      s.info.ticks_per_second = *hz;
      s.info.frequency_origin = "cpuid";
    } else {
      s.info.frequency_origin = "calibrated";
    }
#endif
  } else {
    s.info.source = "monotonic";
    s.info.frequency_origin = "fixed";
    s.info.ticks_per_second = 1e9;
  }
  detail::clock_is_tsc = use_tsc;
}

double ticks_per_second() {
  return info().ticks_per_second;
}

ClockInfo info() {
  State& s = state();
  std::lock_guard lock(s.mutex);
#if defined(__x86_64__)
  if (s.info.frequency_origin == "calibrated") {
    std::uint64_t ticks = 0, ns = 0;
    paired_reading(ticks, ns);
    if (ns - s.anchor_ns < kFirstCalibrationNs) {
      std::this_thread::sleep_for(
          std::chrono::nanoseconds(kFirstCalibrationNs - (ns - s.anchor_ns)));
      paired_reading(ticks, ns);
    }
    s.info.ticks_per_second =
        static_cast<double>(ticks - s.anchor_ticks) * 1e9 / static_cast<double>(ns - s.anchor_ns);
  }
#endif
  return s.info;
}

std::uint64_t now_ticks() {
  return detail::now();
}

std::uint64_t monotonic_ns() {
  return read_monotonic_ns();
}

FreeRunningClock::FreeRunningClock(bool allow_tsc)
    : tsc_(allow_tsc && cpu_has_invariant_tsc()), start_ticks_(0), start_ns_(monotonic_ns()) {
  start_ticks_ = ticks();
}

double FreeRunningClock::microseconds_per_tick(std::uint64_t elapsed_ticks) const {
  if (!tsc_) {
    return 1e-3;
  }
  const double elapsed_us = static_cast<double>(monotonic_ns() - start_ns_) / 1e3;
  return elapsed_ticks == 0 ? 0.0 : elapsed_us / static_cast<double>(elapsed_ticks);
}

void use_manual_clock_for_testing() {
  State& s = state();
  std::lock_guard lock(s.mutex);
  s.initialized = true;
  s.info.source = "manual";
  s.info.frequency_origin = "fixed";
  s.info.ticks_per_second = 1e9;
  s.info.reason = "test clock";
  manual_clock.store(true);
  detail::clock_is_tsc = false;
}

void advance_manual_clock(std::uint64_t ns) {
  manual_ticks.fetch_add(ns);
}

} // namespace hotscope::clock

std::uint64_t hotscope::detail::fallback_ticks() noexcept {
  if (clock::manual_clock.load(std::memory_order_relaxed)) {
    return clock::manual_ticks.load(std::memory_order_relaxed);
  }
  return clock::read_monotonic_ns();
}
