// How libhotscope writes each output format of export/formats.hpp (docs/architecture.md, "Output
// formats"). Exactly one of a format's writing members is set.
#pragma once

#include "export/formats.hpp"
#include "snapshot/snapshot.hpp"

#include <cstdint>
#include <iosfwd>
#include <string>

namespace hotscope::exporters {

struct Writer {
  // The snapshot into a stream (a large answer is written as it is sent).
  void (*stream)(const Snapshot&, std::ostream&) = nullptr;
  // /v1/threads's: the same, with the threshold above which a thread is stuck.
  void (*threads)(const Snapshot&, std::uint64_t stuck_ns, std::ostream&) = nullptr;
  // Returned whole, not through a stream (stats_columns: a stream would copy it again).
  std::string (*whole)(const Snapshot&) = nullptr;
  // Written by the heap library, which the agent asks through hotscope::heap_profile.
  bool heap = false;
  // When set, write_all writes the format's file only for a snapshot this accepts.
  bool (*written_if)(const Snapshot&) = nullptr;
};

Writer writer(Format format);

} // namespace hotscope::exporters
