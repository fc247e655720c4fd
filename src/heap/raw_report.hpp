// A heap report before symbolization: the raw profile with what is needed to name its frames
// after the process has ended (its memory map) and to write and summarize it as the process
// would have. The sampled mode's program writes it at exit and `hotscope run`, which waits for
// the program, symbolizes and writes heap.json and heap.pb.gz from it (docs/heap.md, "The report
// at exit"). The file is read only by the same build that wrote it.
#pragma once

#include "heap/engine.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace hotscope::heap {

struct RawReport {
  std::string json_path; // where heap.json and heap.pb.gz go (absolute)
  std::string pprof_path;
  std::string program; // the program's file name, as the summary names it
  std::string command;
  std::int64_t pid = 0;
  std::string memory_map;  // as /proc/PID/maps at exit: objects::loaded_objects_map
  std::string debug_cache; // HeapOptions::debug_cache
  bool summary = true;
  bool sampling = false;
  std::uint64_t sample_bytes = 0;
  std::uint64_t sampled_allocations = 0;
  std::int64_t pprof_period = 0;
  RawProfile raw;
  // Read: the sites' stacks, one after the other, which raw.sites' spans point into.
  std::vector<std::uintptr_t> stack_words;
};

// Writes `report` to `path`, which must not exist yet and is read only once the writer has ended
// (atomic_file::write_new: a write cut short leaves a short file, which read_raw_report rejects):
// "" or the reason it could not.
std::string write_raw_report(const std::string& path, const RawReport& report);
// Reads what write_raw_report wrote: "" or the reason it could not.
std::string read_raw_report(const std::string& path, RawReport& report);

} // namespace hotscope::heap
