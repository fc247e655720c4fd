// The CLI's side of the agent: finding processes that run one (the runtime directory's
// <pid>.json files), and HTTP requests over their Unix sockets with libcurl. Every failure is
// a Failure: one line for the user and the documented exit code (docs/agent.md).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace hotscope::cli {

enum ExitCode : int {
  kOk = 0,
  kFailed = 1,            // the agent answered with an error, or not at all
  kUsage = 2,             // bad command line; a name that matches several processes
  kNoProcess = 3,         // no such process
  kNoAgent = 4,           // the process runs no agent
  kPermissionDenied = 5,  // another user's process
  kOtherApiVersion = 6,   // the agent speaks another API version
  kNotEnabled = 7,        // the capability is not enabled in that process
  kCannotWriteOutput = 8, // -o FILE cannot be written
};

struct Failure : std::runtime_error {
  Failure(int code, const std::string& message) : std::runtime_error(message), code(code) {}
  int code;
};

// One process with an agent, as its <pid>.json describes it.
struct AgentProcess {
  std::int64_t pid = 0;
  nlohmann::json info;
  std::string socket;
  std::string name() const { return info.value("name", ""); }
};

// The directory agents put their files in, by the same rules as the library.
std::string runtime_dir();

// Every live agent in `dir`, by pid. What earlier processes left behind is removed: the files
// of a process that has ended or whose pid now belongs to another process (its start time
// differs), and a socket without its <pid>.json on which nobody listens. Each removal adds one
// line to `removed`, if given.
std::vector<AgentProcess> live_agents(const std::string& dir,
                                      std::vector<std::string>* removed = nullptr);

// The agent of process `pid`, or a Failure saying why there is none.
AgentProcess find_by_pid(const std::string& dir, std::int64_t pid);
// The one agent whose process is called `name` (its comm, or its executable's file name).
AgentProcess find_by_name(const std::string& dir, const std::string& name);

struct Reply {
  long status = 0;
  std::string body;
};

// Sends `method path` to the agent of `process` and returns its answer whatever the HTTP status;
// a Failure only when there is no answer (the agent is gone, or another user's). An answer that
// takes time by design (a CPU profile of N seconds) is waited for `wait_seconds` longer.
Reply send(const AgentProcess& process, const std::string& method, const std::string& path,
           long wait_seconds = 0);
// As send(), and a Failure for anything but a 2xx answer.
Reply request(const AgentProcess& process, const std::string& method, const std::string& path,
              long wait_seconds = 0);
// `value` percent-encoded for a query ("Tree::insert" -> "Tree%3A%3Ainsert"), by libcurl.
std::string query_value(const std::string& value);
// A Failure saying what a `reply` that is not 2xx means (nothing for a 2xx one).
void check_status(const AgentProcess& process, const std::string& method, const std::string& path,
                  const Reply& reply);

} // namespace hotscope::cli
