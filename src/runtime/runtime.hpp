// The process runtime: reads the configuration once, chooses the clock, starts the collector
// and writes the reports at exit. Everything starts on the first record or at load time.
#pragma once

#include "config/config.hpp"

namespace hotscope::runtime {

// Starts hotscope once (later calls return the same configuration).
const config::Config& ensure_started();

// Drains everything and writes the reports into HOTSCOPE_OUT (what happens at exit).
void finish();

} // namespace hotscope::runtime
