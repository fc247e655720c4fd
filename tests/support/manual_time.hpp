// The time base of a snapshot taken by hand from an Aggregator in tests: one tick per ns, so
// record timestamps read as nanoseconds.
#pragma once

#include "trace/trace.hpp"

#include <cstdint>

namespace hotscope::test_support {

inline trace::TimeBase manual_time_at(std::uint64_t now_ticks) {
  trace::TimeBase time;
  time.clock.source = "manual";
  time.clock.ticks_per_second = 1e9;
  time.now_ticks = now_ticks;
  return time;
}

} // namespace hotscope::test_support
