// The process runtime: reads the configuration once, chooses the clock, starts the collector
// and writes the reports at exit. Everything starts on the first record or at load time.
// It also links libhotscope to a heap library when the program has one (libhotscope-heap.so
// through hotscope::heap, or the preload library): the public heap calls of hotscope.hpp.
#pragma once

#include "config/config.hpp"
#include "snapshot/snapshot.hpp"

#include <optional>
#include <string>

namespace hotscope::runtime {

// Starts hotscope once (later calls return the same configuration).
const config::Config& ensure_started();

// Drains everything and writes the reports into HOTSCOPE_OUT (what happens at exit). Once: a
// later call returns at once.
void finish();

// With HOTSCOPE_ON_SIGNAL=report, SIGTERM, SIGINT and SIGHUP run `write` (on a thread of the
// profiler's) before their default action ends the process (src/signals). Started with finish();
// a tool that writes its reports elsewhere (hotscope-vm) hands its own writer here.
void report_on_signal(void (*write)());

// While one lives, the calling thread is inside the profiler: the heap library records nothing
// it allocates or frees, and the threads it starts (collector, agent) are the profiler's for
// their whole life. Does nothing without a heap library.
class ProfilerSection {
public:
  ProfilerSection();
  ~ProfilerSection();
  ProfilerSection(const ProfilerSection&) = delete;
  ProfilerSection& operator=(const ProfilerSection&) = delete;
};

// Restarts the heap totals; blocks still live are kept. Does nothing without heap profiling.
void reset_heap();

// "full", "sampled", "off" or "not linked", as <pid>.json and /v1/info say.
const char* heap_mode_name();

// The heap profiler's figures now; empty when it does not run.
std::optional<HeapFigures> heap_figures();

// Why there is no heap profile in this process, naming what enables it; "" when there is one.
std::string heap_unavailable_reason();

} // namespace hotscope::runtime
