// The agent's endpoints as a plain function from request to response, apart from the HTTP
// server, so they can be tested without a socket.
#pragma once

#include "agent/process_file.hpp"
#include "snapshot/snapshot.hpp"

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace hotscope::agent {

// The Unix socket serves every endpoint; the TCP listener only /v1/metrics and /debug/pprof/*.
enum class Listener { Unix, Tcp };

// No endpoint takes more query parameters than this; a longer query is not parsed (414).
inline constexpr std::size_t kMaxParameters = 64;

struct Request {
  std::string method;
  std::string path;
  std::vector<std::pair<std::string, std::string>> query; // decoded, in order
  bool has_body = false;
  bool query_cut = false; // it had more than kMaxParameters parameters, not in `query`
  std::string accept{};   // the Accept headers' values, joined by commas
};

struct Response {
  Response() = default;
  Response(unsigned status, std::string content_type, std::string body, std::string allow)
      : status(status), content_type(std::move(content_type)), body(std::move(body)),
        allow(std::move(allow)) {}

  unsigned status = 200;
  std::string content_type;
  std::string body;
  std::string allow; // the Allow header of a 405
  // When set, the body is not in `body`: this writes it (a large answer, written in pieces as
  // it is sent), from a snapshot of `held_bytes` bytes kept until then.
  std::function<void(std::ostream&)> write;
  std::size_t held_bytes = 0;
};

// The answer to `request`, its body written out.
Response route(const Process& process, Listener listener, const Request& request);
// The same, with the body of a large answer left to Response::write (what the server calls).
Response answer(const Process& process, Listener listener, const Request& request);

// Ends the waits of requests that take time (/debug/pprof/profile, /wall) at once, with 503: the
// agent is stopping. Called before the HTTP server is stopped.
void interrupt_waits();

// {"error": problem}, how the agent answers every request it refuses or cannot serve.
Response error_response(unsigned status, const std::string& problem);

// The answer to a peer whose uid is neither the process's nor root's.
Response forbidden(uid_t peer_uid, uid_t own_uid);

// Keeps the trace events of the last `ns` nanoseconds of the snapshot. Scopes open at the cut
// get a Begin at the cut, so every thread's events stay balanced; trace_start_ns becomes the cut.
void keep_recent_trace(Snapshot& snapshot, std::uint64_t ns);

// The CPU samples `later` has that `earlier` has not, when both are of one measuring window:
// each stack with the samples it gained (stacks that gained none left out), the counts less
// their earlier values. Scopes are matched by name, file and line; the result uses `later`'s.
CpuProfile cpu_difference(const CpuProfile& earlier, const CpuProfile& later);

} // namespace hotscope::agent
