// The tools of `hotscope mcp` (docs/mcp.md, "Tools"): each asks a process's agent what the CLI's
// commands ask (agent_client.hpp) and reads the answer with the CLI's readers (profiles/), or
// compares profiles as `hotscope diff` does; its result is compact JSON (Markdown for diff),
// bounded, saying what it left out.
#include "mcp.hpp"

#include "agent_client.hpp"
#include "agent_commands.hpp"
#include "diff/diff.hpp"
#include "export/formats.hpp"
#include "profiles/profiles.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

namespace hotscope::cli::mcp {
namespace {

constexpr std::int64_t kMaxRows = 100;

void only(const Json& arguments, std::initializer_list<const char*> keys) {
  for (const auto& [key, value] : arguments.items()) {
    if (std::none_of(keys.begin(), keys.end(), [&](const char* k) { return key == k; })) {
      std::string names;
      for (const char* k : keys) {
        names += (names.empty() ? "" : ", ") + std::string(k);
      }
      throw InvalidParams(
          fmt::format("no argument '{}' (arguments: {})", key, names.empty() ? "none" : names));
    }
  }
}

std::optional<std::string> text_arg(const Json& arguments, const char* key) {
  if (!arguments.contains(key)) {
    return std::nullopt;
  }
  if (!arguments[key].is_string()) {
    throw InvalidParams(fmt::format("'{}' must be a string", key));
  }
  return arguments[key].get<std::string>();
}

double number_arg(const Json& arguments, const char* key, double fallback, double low,
                  double high) {
  if (!arguments.contains(key)) {
    return fallback;
  }
  const Json& value = arguments[key];
  if (!value.is_number() || value.get<double>() < low || value.get<double>() > high) {
    throw InvalidParams(fmt::format("'{}' must be a number from {} to {}", key, low, high));
  }
  return value.get<double>();
}

std::size_t limit_arg(const Json& arguments, std::int64_t fallback) {
  const double limit = number_arg(arguments, "limit", static_cast<double>(fallback), 1,
                                  static_cast<double>(kMaxRows));
  return static_cast<std::size_t>(limit);
}

std::string choice_arg(const Json& arguments, const char* key,
                       const std::vector<std::string>& choices) {
  const std::string value = text_arg(arguments, key).value_or(choices.front());
  if (std::find(choices.begin(), choices.end(), value) == choices.end()) {
    throw InvalidParams(fmt::format("'{}' must be one of {}", key, fmt::join(choices, ", ")));
  }
  return value;
}

// The process the arguments name ("process": a pid or a name), or the only one with an agent.
AgentProcess target(const Json& arguments) {
  const std::string dir = runtime_dir();
  if (const std::optional<std::string> process = text_arg(arguments, "process")) {
    const bool pid = !process->empty() && process->size() < 10 &&
                     process->find_first_not_of("0123456789") == std::string::npos;
    try {
      return pid ? find_by_pid(dir, std::stoll(*process)) : find_by_name(dir, *process);
    } catch (const Failure& failure) {
      throw Failure(failure.code, fmt::format("{} (list_processes lists the processes that run "
                                              "an agent)",
                                              failure.what()));
    }
  }
  const std::vector<AgentProcess> agents = live_agents(dir);
  if (agents.size() == 1) {
    return agents.front();
  }
  if (agents.empty()) {
    throw Failure(kNoProcess,
                  fmt::format("no process runs a hotscope agent in {}: start a program linked "
                              "with hotscope (or under `hotscope run`), as the same user, with "
                              "the same HOTSCOPE_RUNTIME_DIR as this server",
                              dir));
  }
  std::string names;
  for (const AgentProcess& agent : agents) {
    names += fmt::format("{}{} ({})", names.empty() ? "" : ", ", agent.pid, agent.name());
  }
  throw Failure(kUsage, fmt::format("{} processes run an agent: {}; say which with \"process\" "
                                    "(a pid or a name)",
                                    agents.size(), names));
}

std::string label(const AgentProcess& process) {
  return fmt::format("{} ({})", process.pid, process.name());
}

Json schema(Json properties, std::vector<std::string> required = {}) {
  Json out{
      {"type", "object"}, {"properties", std::move(properties)}, {"additionalProperties", false}};
  if (!required.empty()) {
    out["required"] = required;
  }
  return out;
}

Json process_property() {
  return {{"type", "string"},
          {"description", "The process: its pid or its name (list_processes); may be left out "
                          "when only one process runs an agent"}};
}

Json limit_property(std::int64_t fallback) {
  return {{"type", "integer"},
          {"minimum", 1},
          {"maximum", kMaxRows},
          {"default", fallback},
          {"description", "How many rows at most"}};
}

// `cut` rows of `total` shown: what the result says about what it left out.
std::string cut_note(std::size_t shown, std::size_t total, const char* what) {
  return shown == total ? fmt::format("all {} {}", total, what)
                        : fmt::format("{} of {} {} shown (raise limit, at most {})", shown, total,
                                      what, kMaxRows);
}

std::string list_processes(const Json& arguments) {
  only(arguments, {});
  const std::vector<AgentProcess> agents = live_agents(runtime_dir());
  if (agents.empty()) {
    return fmt::format("no process runs a hotscope agent in {}", runtime_dir());
  }
  std::string text;
  for (const std::string& line : process_table(agents)) {
    text += line + "\n";
  }
  return text;
}

const std::map<std::string, std::function<double(const profiles::FunctionStats&)>>& sort_keys() {
  static const std::map<std::string, std::function<double(const profiles::FunctionStats&)>> keys{
      {"self", [](const auto& f) { return static_cast<double>(f.self_ns); }},
      {"total", [](const auto& f) { return static_cast<double>(f.total_ns); }},
      {"calls", [](const auto& f) { return static_cast<double>(f.calls); }},
      {"mean", [](const auto& f) { return f.mean_ns; }},
      {"p99", [](const auto& f) { return static_cast<double>(f.p99_ns); }},
      {"max", [](const auto& f) { return static_cast<double>(f.max_ns); }},
      {"alloc_bytes", [](const auto& f) { return static_cast<double>(f.alloc_bytes_total); }},
  };
  return keys;
}

std::string function_stats(const Json& arguments) {
  only(arguments, {"process", "sort", "limit", "filter"});
  std::vector<std::string> choices{"self"};
  for (const auto& [key, get] : sort_keys()) {
    if (key != "self") {
      choices.push_back(key);
    }
  }
  const std::string sort = choice_arg(arguments, "sort", choices);
  const std::size_t limit = limit_arg(arguments, 20);
  const std::string filter = text_arg(arguments, "filter").value_or("");
  const AgentProcess process = target(arguments);
  const std::string path = exporters::format_info(exporters::Format::StatsJson).path;
  profiles::Stats stats;
  try {
    profiles::read_stats(request(process, "GET", path).body, label(process), stats);
  } catch (const nlohmann::json::exception&) {
    throw Failure(kFailed, fmt::format("process {} answered GET {} with something that is not "
                                       "JSON: is it a hotscope agent of this version?",
                                       label(process), path));
  }
  std::vector<const profiles::FunctionStats*> rows;
  for (const profiles::FunctionStats& function : stats.functions) {
    if (function.name.find(filter) != std::string::npos) {
      rows.push_back(&function);
    }
  }
  const auto& get = sort_keys().at(sort);
  std::stable_sort(rows.begin(), rows.end(),
                   [&](const auto* a, const auto* b) { return get(*a) > get(*b); });
  Json out{{"process", label(process)},
           {"sorted_by", sort + ", largest first"},
           {"times", "ns; self and total summed over the calls, the others per call"},
           {"shown", cut_note(std::min(limit, rows.size()), rows.size(),
                              filter.empty() ? "functions" : "matching functions")},
           {"functions", Json::array()}};
  for (std::size_t i = 0; i < std::min(limit, rows.size()); ++i) {
    const profiles::FunctionStats& f = *rows[i];
    out["functions"].push_back({{"name", f.name},
                                {"file", f.file},
                                {"line", f.line},
                                {"calls", f.calls},
                                {"mean_ns", std::llround(f.mean_ns)},
                                {"p50_ns", f.p50_ns},
                                {"p99_ns", f.p99_ns},
                                {"max_ns", f.max_ns},
                                {"self_ns", f.self_ns},
                                {"total_ns", f.total_ns},
                                {"alloc_bytes", f.alloc_bytes_total}});
  }
  return out.dump();
}

Json thread_json(const profiles::ThreadStats& thread) {
  Json scopes = Json::array();
  for (const profiles::OpenScope& scope : thread.open_scopes) {
    scopes.push_back(scope.name);
  }
  Json out{{"name", thread.name},
           {"os_tid", thread.os_tid},
           {"stuck", thread.stuck},
           {"state", thread.state.value_or("")},
           {"open_scopes", scopes}};
  if (!thread.open_scopes.empty()) {
    out["innermost_open_ns"] = thread.open_scopes.back().open_ns;
  }
  if (thread.cpu_user_ns && thread.cpu_system_ns) {
    out["cpu_ns"] = *thread.cpu_user_ns + *thread.cpu_system_ns;
  }
  return out;
}

std::string threads(const Json& arguments) {
  only(arguments, {"process", "stuck_ms", "limit"});
  const double stuck_ms = number_arg(arguments, "stuck_ms", 1000, 0, 86'400'000);
  const std::size_t limit = limit_arg(arguments, 30);
  const AgentProcess process = target(arguments);
  const std::string path = fmt::format("/v1/threads?stuck_ms={}", stuck_ms);
  const std::string source =
      fmt::format("the answer of process {} to GET {}", label(process), path);
  const std::string body = request(process, "GET", path).body;
  profiles::ThreadsAnswer answer;
  try {
    answer = profiles::read_threads(profiles::parse_json(body, source), source);
  } catch (const Failure& failure) {
    throw Failure(kFailed, failure.what());
  }
  // The agent lists stuck threads first.
  const std::size_t stuck = static_cast<std::size_t>(std::count_if(
      answer.threads.begin(), answer.threads.end(), [](const auto& t) { return t.stuck; }));
  Json out{{"process", label(process)},
           {"stuck_threads", stuck},
           {"stuck_after_ms", stuck_ms},
           {"shown", cut_note(std::min(limit, answer.threads.size()), answer.threads.size(),
                              "threads (stuck first)")},
           {"threads", Json::array()},
           {"deadlocks", Json::array()}};
  for (std::size_t i = 0; i < std::min(limit, answer.threads.size()); ++i) {
    out["threads"].push_back(thread_json(answer.threads[i]));
  }
  for (const profiles::Deadlock& deadlock : answer.deadlocks) {
    Json cycle = Json::array();
    for (const profiles::DeadlockLink& link : deadlock.cycle) {
      cycle.push_back(fmt::format("{} waits for {}, held by {}", link.waiter.thread, link.lock,
                                  link.holder.thread));
    }
    out["deadlocks"].push_back(cycle);
  }
  return out.dump();
}

std::string heap_top(const Json& arguments) {
  only(arguments, {"process", "sort", "limit"});
  const std::string sort =
      choice_arg(arguments, "sort", {"end_bytes", "total_bytes", "gmax_bytes"});
  const std::size_t limit = limit_arg(arguments, 15);
  const AgentProcess process = target(arguments);
  const profiles::Profile heap = diff::live_profile(profiles::Kind::Heap, process);
  std::vector<profiles::Site> sites = profiles::heap_sites(heap);
  const auto figure = [&](const profiles::Site& site) {
    return sort == "end_bytes"    ? site.end_bytes
           : sort == "gmax_bytes" ? site.gmax_bytes
                                  : site.total_bytes;
  };
  std::stable_sort(sites.begin(), sites.end(),
                   [&](const auto& a, const auto& b) { return figure(a) > figure(b); });
  std::uint64_t total = 0, end = 0;
  for (const profiles::Site& site : sites) {
    total += site.total_bytes;
    end += site.end_bytes;
  }
  Json out{{"process", label(process)},
           {"sorted_by", sort + " (end: live now; gmax: at the peak), largest first"},
           {"all_sites", {{"total_bytes", total}, {"end_bytes", end}}},
           {"shown", cut_note(std::min(limit, sites.size()), sites.size(), "sites")},
           {"sites", Json::array()}};
  for (std::size_t i = 0; i < std::min(limit, sites.size()); ++i) {
    const profiles::Site& site = sites[i];
    Json stack = Json::array();
    for (std::size_t f = 0; f < std::min<std::size_t>(site.frames.size(), 6); ++f) {
      stack.push_back(profiles::short_frame(*site.frames[f]));
    }
    out["sites"].push_back({{"site", profiles::site_name(site)},
                            {"total_bytes", site.total_bytes},
                            {"total_blocks", site.total_blocks},
                            {"gmax_bytes", site.gmax_bytes},
                            {"end_bytes", site.end_bytes},
                            {"end_blocks", site.end_blocks},
                            {"stack_innermost_first", stack}});
  }
  return out.dump();
}

// At most this many of a stack's innermost frames are shown.
constexpr std::size_t kMaxStackFrames = 12;

// `frames` (root first, ';' between) with only its kMaxStackFrames innermost frames, saying how
// many it left out.
std::string innermost(std::string_view frames) {
  std::size_t start = frames.size();
  for (std::size_t kept = 0; kept < kMaxStackFrames; ++kept) {
    const std::size_t semicolon = frames.rfind(';', start == 0 ? 0 : start - 1);
    if (start == 0 || semicolon == std::string_view::npos) {
      return std::string(frames);
    }
    start = semicolon;
  }
  const auto left_out =
      std::count(frames.begin(), frames.begin() + static_cast<long>(start), ';') + 1;
  return fmt::format("({} outer frames left out){}", left_out, frames.substr(start));
}

// Folded stacks summarized: the leaf functions and the stacks with the largest counts.
Json stacks_summary(const std::string& text, const std::string& source, std::size_t limit) {
  const profiles::StackLines stacks = profiles::folded_stacks(text, source);
  std::map<std::string, std::uint64_t> leaves;
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < stacks.starts.size(); ++i) {
    const std::string_view frames = stacks.frames(i);
    const std::size_t semicolon = frames.rfind(';');
    leaves[std::string(semicolon == std::string_view::npos ? frames
                                                           : frames.substr(semicolon + 1))] +=
        stacks.count_at(stacks.starts[i]);
    order.push_back(i);
  }
  std::vector<std::pair<std::string, std::uint64_t>> functions(leaves.begin(), leaves.end());
  std::stable_sort(functions.begin(), functions.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return stacks.count_at(stacks.starts[a]) > stacks.count_at(stacks.starts[b]);
  });
  const auto share = [&](std::uint64_t count) {
    return stacks.total == 0 ? 0.0
                             : std::round(1000.0 * static_cast<double>(count) /
                                          static_cast<double>(stacks.total)) /
                                   10;
  };
  Json out{{"total", stacks.total},
           {"functions_shown",
            cut_note(std::min(limit, functions.size()), functions.size(), "functions")},
           {"stacks_shown", cut_note(std::min(limit, order.size()), order.size(), "stacks")},
           {"top_functions_self", Json::array()},
           {"top_stacks", Json::array()}};
  for (std::size_t i = 0; i < std::min(limit, functions.size()); ++i) {
    out["top_functions_self"].push_back({{"function", functions[i].first},
                                         {"count", functions[i].second},
                                         {"percent", share(functions[i].second)}});
  }
  for (std::size_t i = 0; i < std::min(limit, order.size()); ++i) {
    const std::uint64_t count = stacks.count_at(stacks.starts[order[i]]);
    out["top_stacks"].push_back({{"stack_root_first", innermost(stacks.frames(order[i]))},
                                 {"count", count},
                                 {"percent", share(count)}});
  }
  return out;
}

std::string cpu_top(const Json& arguments) {
  only(arguments, {"process", "seconds", "limit"});
  const std::size_t limit = limit_arg(arguments, 15);
  const double seconds = number_arg(arguments, "seconds", 0, 0, 30);
  const AgentProcess process = target(arguments);
  const long whole = static_cast<long>(std::ceil(seconds));
  const std::string path = whole > 0
                               ? fmt::format("/debug/pprof/profile?format=folded&seconds={}", whole)
                               : "/v1/cpu?format=folded";
  const std::string body = request(process, "GET", path, whole).body;
  Json out = stacks_summary(body, fmt::format("process {}'s GET {}", label(process), path), limit);
  if (out["total"] == 0) {
    return fmt::format("process {} has no CPU samples {}: {}", label(process),
                       whole > 0 ? fmt::format("from the last {} s", whole)
                                 : "in its measuring window",
                       whole > 0 ? "it used no CPU then, or its sampler cannot run (stderr of the "
                                   "process says why)"
                                 : "its sampler is off (HOTSCOPE_CPU_HZ unset); call cpu_top with "
                                   "seconds=5 to sample the next 5 s");
  }
  out["process"] = label(process);
  out["window"] =
      whole > 0 ? fmt::format("the {} s just sampled", whole) : "the measuring window so far";
  out["count"] = "CPU samples";
  return out.dump();
}

// The kept slowest calls (GET /v1/slow, docs/slow.md): the slowest first over all functions, or
// one function's; each call's tree cut to `lines` lines.
std::string slowest_calls(const Json& arguments) {
  only(arguments, {"process", "function", "limit", "lines"});
  const std::size_t limit = limit_arg(arguments, 5);
  const auto lines = static_cast<std::size_t>(number_arg(arguments, "lines", 40, 1, 400));
  const AgentProcess process = target(arguments);
  std::string path = exporters::agent_target(exporters::Format::SlowJson);
  const std::optional<std::string> function = text_arg(arguments, "function");
  if (function) {
    path += "&function=" + query_value(*function);
  }
  const Json answer = profiles::parse_json(
      request(process, "GET", path).body, fmt::format("process {}'s GET {}", label(process), path));
  std::vector<Json> calls(answer.at("calls").begin(), answer.at("calls").end());
  std::stable_sort(calls.begin(), calls.end(), [](const Json& a, const Json& b) {
    return a.at("duration_ns").get<std::uint64_t>() > b.at("duration_ns").get<std::uint64_t>();
  });
  Json out{{"process", label(process)},
           {"per_function", answer.at("per_function")},
           {"kept", calls.size()},
           {"calls", Json::array()}};
  if (calls.size() > limit) {
    out["calls_cut"] = fmt::format("{} of {} kept calls shown, the slowest", limit, calls.size());
  }
  for (std::size_t i = 0; i < std::min(limit, calls.size()); ++i) {
    const Json& call = calls[i];
    std::istringstream tree(call.at("tree").get<std::string>());
    std::string kept_lines;
    std::size_t count = 0, total = 0;
    for (std::string line; std::getline(tree, line); ++total) {
      if (count < lines) {
        kept_lines += line + "\n";
        ++count;
      }
    }
    Json entry{{"id", call.at("id")},
               {"function", call.at("function")},
               {"duration_ns", call.at("duration_ns")},
               {"thread", call.at("thread")},
               {"start_unix_ns", call.at("start_unix_ns")},
               {"tree", kept_lines}};
    if (total > count) {
      entry["tree_cut"] = fmt::format("{} of {} lines shown", count, total);
    }
    out["calls"].push_back(std::move(entry));
  }
  if (calls.empty()) {
    return fmt::format("process {} keeps no slow call{}: {}", label(process),
                       function ? " of " + *function : std::string(),
                       answer.at("per_function") == 0
                           ? "it runs with HOTSCOPE_SLOWEST=0"
                           : "no call ended in its measuring window yet, or no such function");
  }
  return out.dump();
}

std::string trace_summary(const Json& arguments) {
  only(arguments, {"process", "seconds", "limit"});
  const std::size_t limit = limit_arg(arguments, 15);
  const double seconds = number_arg(arguments, "seconds", 10, 0.001, 3600);
  const AgentProcess process = target(arguments);
  const std::string path =
      fmt::format("{}&seconds={}", exporters::agent_target(exporters::Format::Folded), seconds);
  const std::string body = request(process, "GET", path).body;
  Json out = stacks_summary(body, fmt::format("process {}'s GET {}", label(process), path), limit);
  out["process"] = label(process);
  out["window"] = fmt::format("the trace window's last {} s", seconds);
  out["count"] = "ns of self time in scopes";
  return out.dump();
}

std::string diff_tool(const Json& arguments) {
  only(arguments, {"base", "new", "process", "format"});
  const std::optional<std::string> base_path = text_arg(arguments, "base");
  if (!base_path) {
    throw InvalidParams("'base' is required: the path of a stats.json or heap.json");
  }
  const std::optional<std::string> new_path = text_arg(arguments, "new");
  if (new_path && arguments.contains("process")) {
    throw InvalidParams("give 'new' (a file) or 'process' (a live process), not both");
  }
  const std::string format = choice_arg(arguments, "format", {"markdown", "json"});
  const profiles::Profile base = profiles::read_profile(*base_path);
  const profiles::Profile now = new_path ? profiles::read_profile(*new_path)
                                         : diff::live_profile(base.kind, target(arguments));
  const diff::Comparison comparison = diff::compare(base, now, {});
  if (format == "markdown") {
    return diff::as_markdown(comparison);
  }
  Json out = diff::as_json(comparison);
  for (const char* key : {"rows", "queues", "locks"}) {
    const std::size_t rows = out.contains(key) ? out[key].size() : 0;
    if (rows > 20) {
      out[key].erase(out[key].begin() + 20, out[key].end());
      out[fmt::format("{}_cut", key)] =
          fmt::format("20 of {} {} shown, by impact; the markdown format lists every significant "
                      "change",
                      rows, key);
    }
  }
  return out.dump();
}

} // namespace

const std::vector<Tool>& tools() {
  static const std::vector<Tool> all{
      {"list_processes", "Processes",
       "The running processes that have a hotscope agent: pid, name, uptime, what is enabled.",
       schema(Json::object()), list_processes},
      {"function_stats", "Function statistics",
       "Per-function timing of a live process (calls, mean, p50, p99, max, self and total time, "
       "bytes "
       "allocated), the top N by a column, optionally filtered by a name substring.",
       schema({{"process", process_property()},
               {"sort",
                {{"type", "string"},
                 {"enum", {"self", "alloc_bytes", "calls", "max", "mean", "p99", "total"}},
                 {"default", "self"}}},
               {"limit", limit_property(20)},
               {"filter",
                {{"type", "string"}, {"description", "Only functions whose name contains this"}}}}),
       function_stats},
      {"threads", "Threads",
       "What each thread of a live process is doing now: its open scopes, state and CPU time; "
       "stuck "
       "threads first, and the deadlocks standing.",
       schema({{"process", process_property()},
               {"stuck_ms",
                {{"type", "number"},
                 {"minimum", 0},
                 {"default", 1000},
                 {"description", "A thread whose innermost scope has been open longer is stuck"}}},
               {"limit", limit_property(30)}}),
       threads},
      {"heap_top", "Heap allocation sites",
       "The allocation sites of a live process with the most bytes live now (or in total, or at "
       "the "
       "peak). Needs the heap profiler in that process.",
       schema({{"process", process_property()},
               {"sort",
                {{"type", "string"},
                 {"enum", {"end_bytes", "total_bytes", "gmax_bytes"}},
                 {"default", "end_bytes"}}},
               {"limit", limit_property(15)}}),
       heap_top},
      {"cpu_top", "CPU top",
       "Where a live process spends CPU: the functions and stacks with most CPU samples, in its "
       "measuring window so far, or over the next N seconds (seconds > 0: the call waits for "
       "them).",
       schema({{"process", process_property()},
               {"seconds", {{"type", "number"}, {"minimum", 0}, {"maximum", 30}, {"default", 0}}},
               {"limit", limit_property(15)}}),
       cpu_top},
      {"slowest_calls", "Slowest calls",
       "The slowest calls a live process kept whole (per function, in its measuring window), "
       "slowest first: each with its thread, start and its tree of inner scopes, messages, lock "
       "and queue waits (docs/slow.md).",
       schema({{"process", process_property()},
               {"function",
                {{"type", "string"}, {"description", "Only this function's calls (exact name)"}}},
               {"limit", limit_property(5)},
               {"lines",
                {{"type", "integer"},
                 {"minimum", 1},
                 {"maximum", 400},
                 {"default", 40},
                 {"description", "Lines of each call's tree shown"}}}}),
       slowest_calls},
      {"trace_summary", "Trace window summary",
       "The last N seconds of a live process's trace, summarized: the scopes and scope stacks with "
       "the most self time (not the trace itself).",
       schema({{"process", process_property()},
               {"seconds",
                {{"type", "number"}, {"exclusiveMinimum", 0}, {"maximum", 3600}, {"default", 10}}},
               {"limit", limit_property(15)}}),
       trace_summary},
      {"diff", "Compare profiles",
       "hotscope diff: two stats.json (or heap.json) files, or a file and a live process now; "
       "regressions and improvements beyond noise.",
       schema(
           {{"base",
             {{"type", "string"}, {"description", "Path of the earlier stats.json or heap.json"}}},
            {"new",
             {{"type", "string"}, {"description", "Path of the later profile (or give process)"}}},
            {"process", process_property()},
            {"format",
             {{"type", "string"}, {"enum", {"markdown", "json"}}, {"default", "markdown"}}}},
           {"base"}),
       diff_tool},
  };
  return all;
}

} // namespace hotscope::cli::mcp
