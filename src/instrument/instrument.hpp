// Whole-program instrumentation (docs/instrument.md): the compiler's entry and exit hooks
// (`__cyg_profile_func_enter` and `_exit`, defined in hooks.cpp) write a FUNCTION_BEGIN and a
// FUNCTION_END record named by the function's entry address into the thread's ring, unless the
// function is filtered (filter.cpp): the collector filters one whose first calls were all short.
#pragma once

#include <atomic>
#include <cstdint>

namespace hotscope::instrument {

// Deepest nesting of instrumented calls a thread follows; deeper calls are not recorded (their
// records are counted dropped).
constexpr std::uint32_t kDepthMax = 256;

// The filtered functions: an open-addressing table by entry address that only the collector
// writes (filter) and the hooks read without a lock. One slot per cache line, as the hooks count
// a filtered function's calls in its slot.
constexpr std::uint32_t kFilterSlots = 1024;
constexpr std::uint32_t kFilterProbes = 8;
struct alignas(64) FilterSlot {
  std::atomic<std::uint64_t> entry{0}; // 0: free
  std::atomic<std::uint64_t> skipped{0};
};
extern FilterSlot filter_slots[kFilterSlots];
extern std::atomic<std::uint32_t> filtered_count;

inline std::uint32_t filter_home(std::uint64_t entry) noexcept {
  return static_cast<std::uint32_t>((entry >> 4) ^ (entry >> 14)) % kFilterSlots;
}

// True when `entry`'s function is filtered; the call is then counted, not recorded.
__attribute__((no_instrument_function)) inline bool filtered(std::uint64_t entry) noexcept {
  if (__builtin_expect(filtered_count.load(std::memory_order_relaxed) == 0, 1)) {
    return false;
  }
  for (std::uint32_t probe = 0, slot = filter_home(entry); probe < kFilterProbes;
       ++probe, slot = (slot + 1) % kFilterSlots) {
    const std::uint64_t found = filter_slots[slot].entry.load(std::memory_order_relaxed);
    if (found == entry) {
      filter_slots[slot].skipped.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
    if (found == 0) {
      return false;
    }
  }
  return false;
}

// Filters `entry`'s function from now on; false when its slots are all taken (it stays recorded).
// The collector's thread only.
bool filter(std::uint64_t entry) noexcept;
// The calls of `entry`'s function not recorded since it was filtered.
std::uint64_t skipped_calls(std::uint64_t entry) noexcept;

} // namespace hotscope::instrument
