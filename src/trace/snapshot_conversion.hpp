// What the Aggregator's tables need to build their part of a snapshot: its tick conversions and
// thread labels, so that every table's figures are converted the same way.
#pragma once

#include "snapshot/snapshot.hpp"
#include "trace/histogram.hpp"

#include <cstdint>
#include <functional>
#include <string>

namespace hotscope::trace {

struct SnapshotConversion {
  std::uint64_t now_ticks = 0;
  std::function<std::uint64_t(std::uint64_t ticks)> duration;
  std::function<DurationStats(const Durations& durations)> durations;
  std::function<std::string(std::uint32_t thread)> thread_label; // "" for a forgotten thread
  std::function<std::uint64_t(std::uint64_t ticks)> since_start; // a time, in ns since the start
};

} // namespace hotscope::trace
