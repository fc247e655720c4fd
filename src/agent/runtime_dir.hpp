// The runtime directory the agent's files go to (docs/agent.md, "Files" and "Security model").
#pragma once

#include <string>

namespace hotscope::agent {

// The file whose presence says that the directory held nothing of another user's when it was
// last made private: an agent then reads no entry at start (docs/performance.md, "The sampled
// mode's fixed cost").
inline constexpr const char* kCheckedMark = ".checked";

// Creates the runtime directory, or checks that an existing one is ours and makes it private.
// "" or the line that says why it cannot be used.
std::string prepare_dir(const std::string& dir);

// A listening, non-blocking Unix socket at `path` (in a prepared directory), mode 0600. Whatever
// socket was there (a process's that had the pid before, or the launcher's standing in for the
// agent) is replaced at once: the path is never missing. The fd, or -1 with `problem`.
int listen_unix(const std::string& path, int backlog, std::string& problem);

} // namespace hotscope::agent
