// The entry points of libhotscope-pprof.so, the heap libraries' report module: loaded (dlopen)
// at a process's first profile, so that the symbolizer (libdw, libelf and what they load) and the
// pprof writer enter a process only when it builds a profile, and never one whose report
// `hotscope run` writes (docs/heap.md, "The report at exit"). C++ types cross by reference: the
// module and the libraries come from one build, each with its own hidden C++ runtime of the same
// version, and allocate through the same malloc.
#pragma once

#include "heap/engine.hpp"
#include "snapshot/snapshot.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace hotscope::heap::report_module {

// What a profile's symbolization took: the code addresses it resolved itself (the others were
// resolved ahead, or by an earlier profile), and the time it took to build.
struct Symbolized {
  std::size_t addresses = 0;
  std::size_t ahead = 0;
  double seconds = 0;
  // Compressed debug files this process opened: inflated now, or an inflated copy cached by an
  // earlier run.
  std::size_t debug_files_inflated = 0;
  std::size_t debug_files_from_cache = 0;
  std::vector<std::string> problems; // the symbolizer's, one line each
};

// The profiles of the calling library's one stack table are built by one symbolizer and one
// ProfileBuilder kept in the module for the process's life, one call at a time (the library's
// lock). `debug_cache`: where inflated debug files are cached (the first call's is kept).

// The profile of `raw` into `profile`; `last` (the report at exit) hands the builder's tables
// over instead of copying them.
using Build = void(const RawProfile& raw, bool last, const std::string& command, std::int64_t pid,
                   const std::string& debug_cache, HeapProfile& profile, Symbolized& symbolized);
// Before stacks are added ahead: refreshes the symbolizer, starts over if it forgot results, and
// returns how many stacks were added (the next one to add is the stack of that id).
using Prepare = std::size_t(const std::string& debug_cache);
// Adds the next stack ahead of the next profile.
using Add = void(std::span<const std::uintptr_t> stack);
// Hands the pprof bytes of `profile` to `sink`.
using Pprof = void(const HeapProfile& profile, std::int64_t period,
                   void (*sink)(void*, const char*, std::size_t), void* context);
// Writes heap.json and heap.pb.gz, and the summary on stderr, from the raw report at `raw_path`
// of a program that has ended, symbolized now from its memory map (raw_report.hpp). False after
// one line on stderr per problem.
using Report = bool(const char* raw_path);

} // namespace hotscope::heap::report_module
