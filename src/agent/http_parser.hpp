// The agent's HTTP/1.1 request parser (docs/agent.md, "Requests"): bytes in, a Request for
// route() or the status of a bad request out. No I/O and no state, so a libFuzzer target
// (tests/agent/fuzz_request.cpp) drives it directly.
#pragma once

#include "agent/routes.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace hotscope::agent {

// The request line and headers together must fit in this; the agent takes no request body.
inline constexpr std::size_t kMaxHeadBytes = 32 * 1024;

struct ParsedRequest {
  enum class State { Incomplete, Complete, Bad };
  State state = State::Incomplete;
  unsigned status = 0; // Bad: 400, 414, 431 or 505
  std::string problem; // Bad: one line naming what is wrong
  Request request;     // Complete
  bool http10 = false; // an HTTP/1.0 request: its answer is not chunked
};

// Parses the start of what a client sent. Incomplete until the blank line after the headers;
// a body (Content-Length or Transfer-Encoding) is not read, only noted in request.has_body.
ParsedRequest parse_request(std::string_view bytes);

// Whether an Accept header's value ranks OpenMetrics text (any version) above the Prometheus
// text format (text/plain), by the media ranges' q values (docs/agent.md, "Prometheus metrics").
bool wants_openmetrics(std::string_view accept);

// The reason phrase of a status the agent answers with ("Not Found").
const char* reason_phrase(unsigned status);

} // namespace hotscope::agent
