// Whole-program instrumentation (docs/instrument.md): the compiler's entry and exit hooks
// (`__cyg_profile_func_enter` and `_exit`) and XRay's handler, defined in hooks.cpp, write a
// FUNCTION_BEGIN and a FUNCTION_END record named by the function's entry address into the
// thread's ring, unless the function is filtered (filter.cpp): the collector filters one whose
// first calls were all short. xray.cpp finds and patches the XRay sleds.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

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
// `hotscope instrument off` without a function: the -finstrument-functions hooks record nothing.
extern std::atomic<bool> hooks_off;

inline std::uint32_t filter_home(std::uint64_t entry) noexcept {
  return static_cast<std::uint32_t>((entry >> 4) ^ (entry >> 14)) % kFilterSlots;
}

// True when `entry`'s function is filtered; the call is then counted, not recorded.
__attribute__((no_instrument_function)) inline bool filtered(std::uint64_t entry) noexcept {
  if (__builtin_expect(filtered_count.load(std::memory_order_relaxed) == 0 &&
                           !hooks_off.load(std::memory_order_relaxed),
                       1)) {
    return false;
  }
  if (hooks_off.load(std::memory_order_relaxed)) {
    return true;
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

// Filters `entry`'s function from now on: an XRay function is unpatched, another goes into the
// table; false when its slots are all taken (it stays recorded). The collector's thread only.
bool filter(std::uint64_t entry) noexcept;
// The calls of `entry`'s function not recorded since it was filtered (0 for an XRay function:
// its sleds are nops, nothing counts them).
std::uint64_t skipped_calls(std::uint64_t entry) noexcept;

// ---- XRay (xray.cpp): the sleds of a program built with hotscope_instrument(MODE xray) ----

// What XRay's handler is told; the values of compiler-rt's XRayEntryType.
enum XrayEvent : int { kXrayEntry = 0, kXrayExit = 1, kXrayTail = 2 };
// The handler (hooks.cpp): a FUNCTION_BEGIN or END of the function XRay numbers `id`.
void xray_event(std::int32_t id, XrayEvent event) noexcept;

// The entry address of each XRay function, by id - 1, and their count: written once by
// start_xray, before the handler is installed, and only read after.
extern const std::uint64_t* xray_entries;
extern std::int32_t xray_count;

// When the program has XRay sleds (compiler-rt's runtime linked in): fills the table, installs
// the handler and patches every sled unless `patch` is false (HOTSCOPE_XRAY=off). False when
// there is no XRay function. Once, at start.
bool start_xray(bool patch);

struct XrayFunction {
  std::int32_t id;
  std::uint64_t entry;
};
// The program's XRay functions, by id (empty without XRay).
std::vector<XrayFunction> xray_functions();
// The id of the XRay function entered at `entry`, or 0.
std::int32_t xray_id(std::uint64_t entry) noexcept;
// Patches (on) or unpatches one function's sleds, or every sled with id 0 (functions filtered
// stay unpatched). A system call (mprotect): never from the hot path. False when XRay refused.
bool switch_xray(std::int32_t id, bool on) noexcept;
// The filter's unpatching of function `id` (filter()), which a global patch leaves alone.
bool filter_xray(std::int32_t id) noexcept;

} // namespace hotscope::instrument
