// The process runtime, libhotscope's composition root: reads the configuration once, chooses
// the clock, starts the collector and the agent, and writes the reports at exit. Everything
// starts on the first record or at load time.
#pragma once

#include "config/config.hpp"

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

} // namespace hotscope::runtime
