#include "agent/routes.hpp"

#include "agent/protocol.hpp"
#include "export/export.hpp"
#include "heap_link/heap_link.hpp"
#include "trace/trace.hpp"

#include <hotscope/hotscope.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <array>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <sstream>
#include <string_view>
#include <unordered_map>

namespace hotscope::agent {
namespace {

using Json = nlohmann::ordered_json;

constexpr const char* kJson = "application/json";
constexpr const char* kText = "text/plain; charset=utf-8";
constexpr const char* kPrometheus = "text/plain; version=0.0.4; charset=utf-8";
constexpr const char* kBinary = "application/octet-stream";

// What 404 lists, and what each endpoint accepts. Constant data: the agent's threads may still
// read it while static destructors run at exit, before the agent is stopped.
struct Endpoint {
  const char* path;
  const char* method; // GET endpoints answer HEAD too
  std::array<const char*, 2> parameters;
  const char* usage;
  bool tcp; // also served on the TCP listener: reads only what scrapers need, changes nothing
};
constexpr Endpoint kEndpoints[] = {
    {"/v1/info", "GET", {}, "GET /v1/info", false},
    {"/v1/stats", "GET", {"format"}, "GET /v1/stats?format=json|table|columns", false},
    {"/v1/trace",
     "GET",
     {"format", "seconds"},
     "GET /v1/trace?format=chrome|folded|text&seconds=N",
     false},
    {"/v1/threads",
     "GET",
     {"format", "stuck_ms"},
     "GET /v1/threads?format=json|text&stuck_ms=N",
     false},
    {"/v1/metrics", "GET", {}, "GET /v1/metrics", true},
    {"/v1/heap", "GET", {"format"}, "GET /v1/heap?format=dhat|pprof", false},
    {"/v1/reset", "POST", {}, "POST /v1/reset", false},
    {"/debug/pprof/heap", "GET", {}, "GET /debug/pprof/heap", true},
    {"/debug/pprof/profile", "GET", {"seconds"}, "GET /debug/pprof/profile?seconds=N", true},
};

// Go's default for /debug/pprof/profile, and the longest a profile may ask for.
constexpr double kDefaultProfileSeconds = 30;
constexpr double kMostProfileSeconds = 3600;

std::string dump(const Json& json) {
  return json.dump(2, ' ', false, Json::error_handler_t::replace) + '\n';
}

Response json_response(unsigned status, const Json& json) {
  return Response{status, kJson, dump(json), ""};
}

Response error(unsigned status, const std::string& message) {
  return json_response(status, {{"error", message}});
}

// Bytes a snapshot holds, charged to the agent's budget while its answer is written.
std::size_t snapshot_bytes(const Snapshot& snapshot) {
  std::size_t bytes = sizeof(Snapshot) + snapshot.trace.capacity() * sizeof(TraceEvent) +
                      snapshot.functions.capacity() * sizeof(FunctionStats) +
                      snapshot.threads.capacity() * sizeof(ThreadInfo);
  for (const std::string& name : snapshot.names) {
    bytes += sizeof(name) + name.capacity();
  }
  return bytes;
}

// The answer is written from the snapshot when it is sent, in pieces (the server's budget).
Response written(const char* content_type, Snapshot snapshot,
                 void (*writer)(const Snapshot&, std::ostream&)) {
  auto kept = std::make_shared<const Snapshot>(std::move(snapshot));
  Response response{200, content_type, "", ""};
  response.held_bytes = snapshot_bytes(*kept);
  response.write = [kept, writer](std::ostream& out) { writer(*kept, out); };
  return response;
}

// The value of `name` (the last one if repeated), if given.
std::optional<std::string> parameter(const Request& request, std::string_view name) {
  std::optional<std::string> value;
  for (const auto& [key, given] : request.query) {
    if (key == name) {
      value = given;
    }
  }
  return value;
}

// "" if `value` is one of `choices` (or absent), else the problem.
std::string check_choice(const std::optional<std::string>& value,
                         const std::vector<std::string_view>& choices) {
  if (!value) {
    return "";
  }
  for (std::string_view choice : choices) {
    if (*value == choice) {
      return "";
    }
  }
  std::string list;
  for (std::string_view choice : choices) {
    list += (list.empty() ? "" : ", ") + std::string(choice);
  }
  return fmt::format("format=\"{}\" is not one of {}", *value, list);
}

Json clock_json(const ClockInfo& clock) {
  return {{"source", clock.source},
          {"frequency_origin", clock.frequency_origin},
          {"ticks_per_second", clock.ticks_per_second},
          {"invariant_tsc", clock.invariant_tsc},
          {"reason", clock.reason}};
}

Json enabled_json(const Process& process) {
  return {{"timing", true},
          {"trace", process.trace_window_bytes > 0},
          {"trace_window_bytes", process.trace_window_bytes},
          {"heap", heap_link::mode_name()},
          {"metrics_tcp", process.metrics_tcp.empty() ? Json(nullptr) : Json(process.metrics_tcp)}};
}

Json process_object(const Process& process) {
  return {{"api_version", kApiVersion},
          {"hotscope_version", HOTSCOPE_VERSION},
          {"pid", process.pid},
          {"name", process.name},
          {"executable", process.executable},
          {"start_unix_ns", process.start_unix_ns},
          {"start_ticks", process.start_ticks},
          {"socket", process.socket},
          {"enabled", enabled_json(process)}};
}

Response info(const Process& process) {
  const Snapshot snapshot = trace::snapshot(trace::Contents::StatisticsOnly);
  Json json = process_object(process);
  json["clock"] = clock_json(snapshot.clock);
  json["window"] = {{"start_unix_ns", snapshot.start_unix_ns},
                    {"duration_ns", snapshot.duration_ns}};
  json["records"] = {{"written", snapshot.records.written},
                     {"kept", snapshot.records.kept},
                     {"dropped", snapshot.records.dropped}};
  json["trace"] = {{"events", snapshot.trace_window_events},
                   {"evicted", snapshot.trace_evicted},
                   {"open_scopes", snapshot.trace_open_scopes}};
  json["threads_folded"] = snapshot.threads_folded;
  return json_response(200, json);
}

Response stats(const Request& request) {
  const auto format = parameter(request, "format");
  if (std::string problem = check_choice(format, {"json", "table", "columns"}); !problem.empty()) {
    return error(400, problem);
  }
  if (format == "table") {
    return written(kText, trace::snapshot(trace::Contents::StatisticsOnly), exporters::write_table);
  }
  if (format == "columns") {
    return Response{200, kJson,
                    exporters::stats_columns(trace::snapshot(trace::Contents::ProcessTotals)), ""};
  }
  return written(kJson, trace::snapshot(trace::Contents::StatisticsOnly),
                 exporters::write_stats_json);
}

// `text` as a finite number in (0, 1e9], or in [0, 1e9] when `zero_allowed`; else nothing.
std::optional<double> bounded_number(const std::string& text, bool zero_allowed) {
  double value = 0;
  const auto [end, problem] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (problem != std::errc() || end != text.data() + text.size() || !std::isfinite(value) ||
      value < 0 || (value == 0 && !zero_allowed) || value > 1e9) {
    return std::nullopt;
  }
  return value;
}

Response trace_off() {
  return error(501, "the trace window is off in this process (HOTSCOPE_TRACE_MIB=0); start it "
                    "with HOTSCOPE_TRACE_MIB set to a size in MiB (default 32) to keep a trace");
}

Response trace_window(const Process& process, const Request& request) {
  const auto format = parameter(request, "format");
  if (std::string problem = check_choice(format, {"chrome", "folded", "text"}); !problem.empty()) {
    return error(400, problem);
  }
  std::optional<std::uint64_t> recent_ns;
  if (const auto seconds = parameter(request, "seconds")) {
    const auto value = bounded_number(*seconds, false);
    if (!value) {
      return error(400, fmt::format("seconds=\"{}\" is not a number of seconds above 0", *seconds));
    }
    recent_ns = static_cast<std::uint64_t>(*value * 1e9);
  }
  if (process.trace_window_bytes == 0) {
    return trace_off();
  }
  Snapshot snapshot = trace::snapshot();
  if (recent_ns) {
    keep_recent_trace(snapshot, *recent_ns);
  }
  if (format == "folded") {
    return written(kText, std::move(snapshot), exporters::write_folded);
  }
  if (format == "text") {
    return written(kText, std::move(snapshot), exporters::write_text_tree);
  }
  return written(kJson, std::move(snapshot), exporters::write_chrome_json);
}

Response threads(const Request& request) {
  const auto format = parameter(request, "format");
  if (std::string problem = check_choice(format, {"json", "text"}); !problem.empty()) {
    return error(400, problem);
  }
  std::uint64_t stuck_ns = kDefaultStuckMs * 1'000'000;
  if (const auto stuck_ms = parameter(request, "stuck_ms")) {
    const auto value = bounded_number(*stuck_ms, true);
    if (!value) {
      return error(400, fmt::format("stuck_ms=\"{}\" is not a number of milliseconds (0 or more)",
                                    *stuck_ms));
    }
    stuck_ns = static_cast<std::uint64_t>(*value * 1e6);
  }
  const Snapshot snapshot = trace::snapshot(trace::Contents::StatisticsOnly);
  std::ostringstream out;
  if (format == "text") {
    exporters::write_threads_text(snapshot, stuck_ns, out);
    return Response{200, kText, std::move(out).str(), ""};
  }
  exporters::write_threads_json(snapshot, stuck_ns, out);
  return Response{200, kJson, std::move(out).str(), ""};
}

Response heap(bool pprof) {
  if (std::string reason = heap_link::unavailable_reason(); !reason.empty()) {
    return error(501, reason);
  }
  std::string profile;
  if (std::string problem =
          hotscope::heap_profile(pprof ? HeapFormat::Pprof : HeapFormat::Dhat, profile);
      !problem.empty()) {
    return error(500, problem);
  }
  return Response{200, pprof ? kBinary : kJson, std::move(profile), ""};
}

// Set when the agent stops: a profile being taken ends at once instead of delaying the exit.
struct StopSignal {
  std::mutex mutex;
  std::condition_variable changed;
  bool stopping = false;
};
StopSignal& stop_signal() {
  static auto* signal = new StopSignal; // never destroyed: agent threads may wait during exit
  return *signal;
}

// Wall time per scope stack over the next N seconds, from the trace window, as Go's
// /debug/pprof/profile?seconds=N answers with CPU samples. One at a time: each holds one of the
// agent's threads for N seconds.
Response wall_profile(const Process& process, const Request& request) {
  double seconds = kDefaultProfileSeconds;
  if (const auto given = parameter(request, "seconds")) {
    const auto value = bounded_number(*given, false);
    if (!value || *value > kMostProfileSeconds) {
      return error(400, fmt::format("seconds=\"{}\" is not a number of seconds above 0 and at "
                                    "most {}",
                                    *given, kMostProfileSeconds));
    }
    seconds = *value;
  }
  if (process.trace_window_bytes == 0) {
    return trace_off();
  }
  static std::atomic<bool> busy{false};
  if (busy.exchange(true)) {
    return error(409, "another /debug/pprof/profile is being taken; ask again when it is done");
  }
  const std::chrono::duration<double> period(seconds);
  StopSignal& stop = stop_signal();
  bool stopping = false;
  {
    std::unique_lock lock(stop.mutex);
    stopping = stop.changed.wait_for(lock, period, [&] { return stop.stopping; });
  }
  busy = false;
  if (stopping) {
    return error(503, "the process is exiting");
  }
  Snapshot snapshot = trace::snapshot();
  keep_recent_trace(snapshot, static_cast<std::uint64_t>(seconds * 1e9));
  return written(kBinary, std::move(snapshot), exporters::write_pprof_wall);
}

Response not_found(Listener listener, const std::string& path) {
  Json list = Json::array();
  for (const Endpoint& endpoint : kEndpoints) {
    if (listener == Listener::Unix || endpoint.tcp) {
      list.push_back(endpoint.usage);
    }
  }
  return json_response(404, {{"error", fmt::format("no endpoint {}", path)},
                             {"api_version", kApiVersion},
                             {"endpoints", std::move(list)}});
}

} // namespace

void interrupt_waits() {
  StopSignal& stop = stop_signal();
  {
    const std::lock_guard lock(stop.mutex);
    stop.stopping = true;
  }
  stop.changed.notify_all();
}

std::string process_json(const Process& process) {
  return dump(process_object(process));
}

Response forbidden(uid_t peer_uid, uid_t own_uid) {
  return error(403, fmt::format("uid {} may not use this agent: only uid {} and root may", peer_uid,
                                own_uid));
}

Response route(const Process& process, Listener listener, const Request& request) {
  Response response = answer(process, listener, request);
  if (response.write) {
    std::ostringstream out;
    response.write(out);
    response.body = std::move(out).str();
    response.write = nullptr;
    response.held_bytes = 0;
  }
  return response;
}

Response answer(const Process& process, Listener listener, const Request& request) {
  if (request.query_cut) {
    return error(414, fmt::format("the query has more than {} parameters (no endpoint takes more "
                                  "than 2)",
                                  kMaxParameters));
  }
  const Endpoint* endpoint = nullptr;
  for (const Endpoint& candidate : kEndpoints) {
    if (request.path == candidate.path && (listener == Listener::Unix || candidate.tcp)) {
      endpoint = &candidate;
    }
  }
  if (endpoint == nullptr) {
    return not_found(listener, request.path);
  }
  const std::string_view method = endpoint->method;
  const bool get = method == "GET";
  if (request.method != method && !(get && request.method == "HEAD")) {
    Response response =
        error(405, fmt::format("{} takes {}, not {}", endpoint->path, method, request.method));
    response.allow = get ? "GET, HEAD" : "POST";
    return response;
  }
  if (request.has_body) {
    return error(413, "the agent accepts no request body");
  }
  for (const auto& [key, value] : request.query) {
    bool known = false;
    for (const char* accepted : endpoint->parameters) {
      known = known || (accepted != nullptr && key == accepted);
    }
    if (!known) {
      return error(400, fmt::format("{} takes no parameter \"{}\" (see {})", endpoint->path, key,
                                    endpoint->usage));
    }
  }
  const std::string_view path = request.path;
  if (path == "/v1/info") {
    return info(process);
  }
  if (path == "/v1/stats") {
    return stats(request);
  }
  if (path == "/v1/trace") {
    return trace_window(process, request);
  }
  if (path == "/v1/threads") {
    return threads(request);
  }
  if (path == "/v1/metrics") {
    Snapshot snapshot = trace::snapshot(trace::Contents::StatisticsOnly);
    snapshot.heap = heap_link::figures();
    return written(kPrometheus, std::move(snapshot), exporters::write_prometheus);
  }
  if (path == "/v1/heap") {
    const auto format = parameter(request, "format");
    if (std::string problem = check_choice(format, {"dhat", "pprof"}); !problem.empty()) {
      return error(400, problem);
    }
    return heap(format == "pprof");
  }
  if (path == "/debug/pprof/heap") {
    return heap(true);
  }
  if (path == "/debug/pprof/profile") {
    return wall_profile(process, request);
  }
  trace::reset();
  heap_link::reset();
  return json_response(200, {{"reset", true}});
}

void keep_recent_trace(Snapshot& snapshot, std::uint64_t ns) {
  if (snapshot.duration_ns <= ns || snapshot.duration_ns - ns <= snapshot.trace_start_ns) {
    return;
  }
  const std::uint64_t cut = snapshot.duration_ns - ns;
  // Replays the events before the cut to learn which scopes are open there, as walk_trace does.
  std::unordered_map<std::uint32_t, std::vector<std::uint32_t>> open;
  std::size_t first_kept = 0;
  for (; first_kept < snapshot.trace.size() && snapshot.trace[first_kept].ns < cut; ++first_kept) {
    const TraceEvent& event = snapshot.trace[first_kept];
    std::vector<std::uint32_t>& stack = open[event.thread];
    if (opens_slice(event.kind)) {
      stack.push_back(event.name);
    } else if (closes_slice(event.kind) && !stack.empty()) {
      stack.pop_back();
    }
  }
  std::vector<TraceEvent> kept;
  for (const ThreadInfo& thread : snapshot.threads) {
    for (const std::uint32_t name : open[thread.index]) {
      kept.push_back(TraceEvent{cut, thread.index, EventKind::Begin, name, 0});
    }
  }
  kept.insert(kept.end(), snapshot.trace.begin() + static_cast<std::ptrdiff_t>(first_kept),
              snapshot.trace.end());
  snapshot.trace = std::move(kept);
  snapshot.trace_start_ns = cut;
}

} // namespace hotscope::agent
