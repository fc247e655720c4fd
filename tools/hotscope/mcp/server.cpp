// The JSON-RPC 2.0 side of `hotscope mcp` (docs/mcp.md): messages read a line at a time, requests
// dispatched, errors with the codes JSON-RPC and MCP give them.
#include "mcp.hpp"

#include "agent_client.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iostream>

namespace hotscope::cli::mcp {
namespace {

constexpr int kParseError = -32700;
constexpr int kInvalidRequest = -32600;
constexpr int kMethodNotFound = -32601;
constexpr int kInvalidParams = -32602;

Json error(const Json& id, int code, const std::string& message) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}};
}

Json initialize(const Json& params) {
  // The client's revision when the server speaks it, else the newest the server speaks: the
  // client then decides whether it can go on.
  const std::string asked = params.is_object() ? params.value("protocolVersion", "") : "";
  const auto known = std::find(std::begin(kProtocolVersions), std::end(kProtocolVersions), asked);
  return {
      {"protocolVersion", known != std::end(kProtocolVersions) ? asked : kProtocolVersions[0]},
      {"capabilities", {{"tools", {{"listChanged", false}}}}},
      {"serverInfo", {{"name", "hotscope"}, {"title", "hotscope"}, {"version", HOTSCOPE_VERSION}}},
      {"instructions",
       "Read-only views of processes profiled by hotscope: list_processes first, then ask "
       "one process (by pid or name) for its functions, threads, heap, CPU or trace; diff "
       "compares two stats.json or heap.json files, or a file and a live process."}};
}

Json list_tools() {
  Json list = Json::array();
  for (const Tool& tool : tools()) {
    list.push_back({{"name", tool.name},
                    {"title", tool.title},
                    {"description", tool.description},
                    {"inputSchema", tool.input_schema},
                    {"annotations", {{"readOnlyHint", true}, {"openWorldHint", false}}}});
  }
  return {{"tools", list}};
}

// The longest non-empty list among `object`'s members, or none.
Json* longest_list(Json& object) {
  Json* longest = nullptr;
  std::size_t longest_size = 0;
  for (auto& member : object.items()) {
    Json& value = member.value();
    if (value.is_array() && !value.empty()) {
      const std::size_t size = value.dump().size();
      if (longest == nullptr || size > longest_size) {
        longest = &value;
        longest_size = size;
      }
    }
  }
  return longest;
}

} // namespace

std::string bounded(std::string text) {
  if (text.size() <= kMaxResultChars) {
    return text;
  }
  Json object = Json::parse(text, nullptr, false);
  if (object.is_object()) {
    std::size_t rows_left_out = 0;
    Json* list = nullptr;
    while (object.dump().size() > kMaxResultChars && (list = longest_list(object)) != nullptr) {
      list->erase(list->size() - 1);
      ++rows_left_out;
      object["cut"] = fmt::format("{} more rows left out to stay within {} characters; ask for "
                                  "fewer rows (limit)",
                                  rows_left_out, kMaxResultChars);
    }
    if (object.dump().size() <= kMaxResultChars) {
      return object.dump();
    }
  }
  const std::size_t cut = text.size() - kMaxResultChars;
  text.resize(kMaxResultChars);
  // Not in the middle of a UTF-8 sequence.
  while (!text.empty() && (static_cast<unsigned char>(text.back()) & 0xC0) == 0x80) {
    text.pop_back();
  }
  return text + fmt::format("\n[cut: {} more characters; ask for fewer rows (limit)]", cut);
}

namespace {

// tools/call: an unknown tool or bad arguments are protocol errors; what goes wrong asking the
// process is a tool error (isError), its message saying what to do.
Json call_tool(const Json& id, const Json& params) {
  if (!params.is_object() || !params.contains("name") || !params["name"].is_string()) {
    return error(id, kInvalidParams, "tools/call needs params.name, a tool's name (tools/list)");
  }
  const std::string name = params["name"];
  const auto& all = tools();
  const auto tool =
      std::find_if(all.begin(), all.end(), [&](const Tool& t) { return name == t.name; });
  if (tool == all.end()) {
    std::string names;
    for (const Tool& t : all) {
      names += (names.empty() ? "" : ", ") + std::string(t.name);
    }
    return error(id, kInvalidParams, fmt::format("no tool '{}' (tools: {})", name, names));
  }
  const Json arguments = params.value("arguments", Json::object());
  if (!arguments.is_object()) {
    return error(id, kInvalidParams, fmt::format("{}: arguments must be an object", name));
  }
  Json result;
  try {
    result = {{"content", {{{"type", "text"}, {"text", bounded(tool->call(arguments))}}}},
              {"isError", false}};
  } catch (const InvalidParams& invalid) {
    return error(id, kInvalidParams, fmt::format("{}: {}", name, invalid.what()));
  } catch (const Failure& failure) {
    result = {{"content", {{{"type", "text"}, {"text", failure.what()}}}}, {"isError", true}};
  } catch (const std::exception& other) {
    // Not one of the CLI's failures (an answer too odd to read): still the tool's error, and the
    // server goes on.
    result = {
        {"content", {{{"type", "text"}, {"text", fmt::format("{}: {}", name, other.what())}}}},
        {"isError", true}};
  }
  return {{"jsonrpc", "2.0"}, {"id", id}, {"result", result}};
}

} // namespace

std::optional<Json> handle(const Json& message) {
  if (!message.is_object() || message.value("jsonrpc", "") != "2.0" ||
      !message.contains("method") || !message["method"].is_string()) {
    return error(message.is_object() ? message.value("id", Json()) : Json(), kInvalidRequest,
                 "not a JSON-RPC 2.0 request: an object with \"jsonrpc\": \"2.0\" and a method");
  }
  const std::string method = message["method"];
  if (!message.contains("id")) {
    return std::nullopt; // a notification (notifications/initialized, cancelled): no answer
  }
  const Json& id = message["id"];
  const Json params = message.value("params", Json::object());
  const auto answer = [&](Json result) {
    return Json{{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}};
  };
  if (method == "initialize") {
    return answer(initialize(params));
  }
  if (method == "ping") {
    return answer(Json::object());
  }
  if (method == "tools/list") {
    return answer(list_tools());
  }
  if (method == "tools/call") {
    return call_tool(id, params);
  }
  return error(id, kMethodNotFound,
               fmt::format("no method '{}': hotscope mcp serves initialize, ping, tools/list and "
                           "tools/call",
                           method));
}

int serve(std::istream& in, std::ostream& out) {
  std::string line;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) {
      continue;
    }
    const Json message = Json::parse(line, nullptr, false);
    const std::optional<Json> reply =
        message.is_discarded() ? error(Json(), kParseError, "not JSON") : handle(message);
    if (reply) {
      // dump() escapes line breaks inside strings: one message, one line.
      out << reply->dump(-1, ' ', false, Json::error_handler_t::replace) << '\n' << std::flush;
    }
  }
  return kOk;
}

McpCommand::McpCommand(CLI::App& app) {
  command_ = app.add_subcommand(
      "mcp", "Serve hotscope's read-only views to an assistant: a Model Context Protocol server "
             "on standard input and output");
  command_->footer("No network listener. Tools, results and the client configuration: "
                   "docs/mcp.md.");
}

std::optional<int> McpCommand::run() const {
  if (!command_->parsed()) {
    return std::nullopt;
  }
  std::ios::sync_with_stdio(false);
  return serve(std::cin, std::cout);
}

} // namespace hotscope::cli::mcp
