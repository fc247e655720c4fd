// `hotscope mcp`: a Model Context Protocol server over stdio (docs/mcp.md). JSON-RPC 2.0, one
// message a line on standard input and output (no network listener): initialize, ping,
// tools/list and tools/call. Its tools are read-only and ask what the CLI's agent commands ask
// (agent_client.hpp), with results bounded in size, each saying what it cut.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <functional>
#include <istream>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

namespace hotscope::cli::mcp {

using Json = nlohmann::json;

// The protocol revisions the server speaks, newest first.
inline constexpr const char* kProtocolVersions[] = {"2025-11-25", "2025-06-18", "2025-03-26"};
// At most this many characters of text in one tool result: an assistant's context is small.
inline constexpr std::size_t kMaxResultChars = 16000;
// A tool's result text within kMaxResultChars: a JSON object loses the last rows of its longest
// lists until it fits (and says how many went, under "cut"), so that it stays JSON; other text
// is cut, and says by how much.
std::string bounded(std::string text);

// Arguments a tool cannot take: a JSON-RPC "invalid params" error.
struct InvalidParams : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Tool {
  const char* name;
  const char* title;
  const char* description;
  Json input_schema;
  // The result's text from the call's arguments; throws InvalidParams, or a Failure
  // (agent_client.hpp) that the caller gets as a tool error.
  std::function<std::string(const Json& arguments)> call;
};
const std::vector<Tool>& tools();

// The answer to one JSON-RPC message (a request), or none (a notification).
std::optional<Json> handle(const Json& message);
// Reads messages from `in` until it ends, answers each on `out`; the exit status.
int serve(std::istream& in, std::ostream& out);

class McpCommand {
public:
  explicit McpCommand(CLI::App& app);
  std::optional<int> run() const;

private:
  CLI::App* command_ = nullptr;
};

} // namespace hotscope::cli::mcp
