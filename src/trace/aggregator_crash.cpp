// The aggregator's part of a crash report (docs/crash.md): read from a signal handler while the
// collector's lock is held, so nothing here allocates or changes anything.
#include "trace/trace.hpp"

namespace hotscope::trace {

void Aggregator::crash_thread(std::uint32_t thread, const detail::Ring& ring, std::int64_t os_tid,
                              CrashVisitor& visitor) const noexcept {
  const auto found = threads_.find(thread); // map::find: no allocation
  if (found == threads_.end()) {
    visitor.thread(os_tid, "", ring);
    return;
  }
  visitor.thread(os_tid, found->second.name.c_str(), ring);
  for (const Frame& frame : found->second.stack) {
    visitor.open_scope(names_[frame.location].name.c_str(), frame.start);
  }
}

void Aggregator::crash_series(CrashVisitor& visitor) const noexcept {
  for (const auto& [location, counter] : counters_) {
    if (counter.updates != 0) {
      visitor.counter(names_[location].name.c_str(), counter.last);
    }
  }
  queues_.each_depth(
      [&visitor](const char* name, std::uint64_t depth) { visitor.queue(name, depth); });
}

} // namespace hotscope::trace
