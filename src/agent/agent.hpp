// The live agent (docs/agent.md): an HTTP/1.1 server on threads of its own that answers
// questions about this process on a Unix socket in the runtime directory, and optionally
// /v1/metrics on a TCP port. The measured threads never wait for it: it works from snapshots.
#pragma once

#include "config/config.hpp"

#include <chrono>
#include <string>
#include <vector>

namespace hotscope::agent {

// Starts the agent (the runtime calls it once, after the collector started; start_agent() again
// when none runs). Returns one line
// per problem; the part concerned (the Unix socket or the TCP listener) then stays off and the
// program runs on.
std::vector<std::string> start(const config::Config& config);

// True when this process started an agent (even one whose socket could not be set up) that
// did not stop because the program closed its descriptors.
bool running();

// Stops serving and removes <pid>.sock and <pid>.json; clients still connected are dropped.
// Does nothing when no agent runs, and in a forked child (the files are its parent's).
void stop();

// At exit, after stop(): waits at most `most` for the answers stopped agents' workers were still
// building (a large snapshot), which read the profiler's state and must end before the process
// tears down. False when one is still being built.
bool wait_for_answers(std::chrono::milliseconds most);

} // namespace hotscope::agent
