// libFuzzer target on the agent's HTTP request parser (docs/agent.md, "Requests"). Whatever the
// bytes, the parser must neither crash nor read outside them (ASan), answer a bad request with
// a status the server sends and a one-line problem, keep a complete request within its limits,
// keep no more than 32 KiB of an incomplete one, and not change its verdict on a complete head
// for bytes that come after it.
#include "agent/http_parser.hpp"

#include <cstdint>
#include <string_view>

namespace {

using hotscope::agent::ParsedRequest;

void require(bool condition) {
  if (!condition) {
    __builtin_trap();
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const ParsedRequest parsed = hotscope::agent::parse_request(bytes);
  switch (parsed.state) {
  case ParsedRequest::State::Incomplete:
    require(size <= hotscope::agent::kMaxHeadBytes); // what the server keeps of a client
    break;
  case ParsedRequest::State::Bad:
    require(parsed.status == 400 || parsed.status == 414 || parsed.status == 431 ||
            parsed.status == 505);
    require(!parsed.problem.empty() && parsed.problem.find('\n') == std::string::npos);
    require(std::string_view(hotscope::agent::reason_phrase(parsed.status)) != "Unknown");
    break;
  case ParsedRequest::State::Complete:
    require(!parsed.request.method.empty() && !parsed.request.path.empty());
    require(parsed.request.path[0] == '/');
    require(parsed.request.query.size() <= hotscope::agent::kMaxParameters);
    require(!parsed.request.query_cut || parsed.request.query.empty());
    break;
  }
  // Bytes after the blank line (a body, the next request) do not change a complete head's verdict.
  if (parsed.state != ParsedRequest::State::Incomplete) {
    std::string longer(bytes);
    longer += "X";
    const ParsedRequest again = hotscope::agent::parse_request(longer);
    require(again.state == parsed.state && again.status == parsed.status);
  }
  return 0;
}
