#include "agent/routes.hpp"

#include "agent/http_parser.hpp"
#include "agent/protocol.hpp"
#include "clock/clock.hpp"
#include "cpu/cpu.hpp"
#include "export/common.hpp"
#include "export/export.hpp"
#include "export/formats.hpp"
#include "export/writers.hpp"
#include "heap_link/heap_link.hpp"
#include "instrument/instrument.hpp"
#include "objects/objects.hpp"
#include "text/text.hpp"
#include "trace/trace.hpp"

#include <hotscope/control.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <fnmatch.h>
#include <mutex>
#include <optional>
#include <sstream>
#include <string_view>
#include <unordered_map>

namespace hotscope::agent {
namespace {

using exporters::Format;
using exporters::FormatInfo;

// What 404 lists, and what each endpoint accepts; the choices of `format` are those of
// export/formats.hpp. Constant data: the agent's threads may still read it while static
// destructors run at exit, before the agent is stopped.
struct Endpoint {
  const char* path;
  const char* method; // GET endpoints answer HEAD too
  std::array<const char*, 3> parameters;
  bool tcp; // also served on the TCP listener: reads only what scrapers need, changes nothing
};
constexpr Endpoint kEndpoints[] = {
    {"/v1/info", "GET", {}, false},
    {"/v1/stats", "GET", {"format"}, false},
    {"/v1/trace", "GET", {"format", "seconds"}, false},
    {"/v1/threads", "GET", {"format", "stuck_ms"}, false},
    {"/v1/slow", "GET", {"format", "function", "top"}, false},
    {"/v1/locks", "GET", {}, false},
    {"/v1/metrics", "GET", {}, true},
    {"/v1/heap", "GET", {"format"}, false},
    {"/v1/cpu", "GET", {"format"}, false},
    {"/v1/reset", "POST", {}, false},
    {"/v1/instrument", "POST", {"state", "function"}, false},
    {"/debug/pprof/heap", "GET", {}, true},
    {"/debug/pprof/profile", "GET", {"format", "seconds"}, true},
    {"/debug/pprof/wall", "GET", {"seconds"}, true},
    {"/debug/pprof/mutex", "GET", {}, true},
};

// "GET /v1/trace?format=chrome|folded|text&seconds=N", "GET /v1/slow?...&function=NAME".
std::string usage(const Endpoint& endpoint) {
  std::string line = text::cat(endpoint.method, " ", endpoint.path);
  char separator = '?';
  for (const char* accepted : endpoint.parameters) {
    if (accepted != nullptr) {
      const std::string_view name = accepted;
      line += text::cat(separator, name, "=",
                        name == "format"     ? exporters::format_names(endpoint.path, "|")
                        : name == "function" ? "NAME"
                        : name == "state"    ? "on|off"
                                             : "N");
      separator = '&';
    }
  }
  return line;
}

// Go's default for /debug/pprof/profile, and the longest a wall or a CPU profile may ask for.
constexpr double kDefaultProfileSeconds = 30;
constexpr double kMostProfileSeconds = 3600;
// The rate /debug/pprof/profile samples at when the sampler is off: the rate `hotscope run --cpu`
// sets (docs/cpu.md).
constexpr unsigned kAgentCpuHz = 99;

// The agent's JSON answers: indented, invalid UTF-8 replaced, a line feed at the end.
Response json_response(unsigned status, const std::function<void(text::JsonWriter&)>& write) {
  std::string body;
  text::JsonWriter json(body, 2);
  write(json);
  body += '\n';
  return Response{status, exporters::kJsonMime, std::move(body), ""};
}

// Bytes a snapshot holds, charged to the agent's budget while its answer is written.
std::size_t snapshot_bytes(const Snapshot& snapshot) {
  std::size_t bytes = sizeof(Snapshot) + snapshot.trace.capacity() * sizeof(TraceEvent) +
                      snapshot.functions.capacity() * sizeof(FunctionStats) +
                      snapshot.threads.capacity() * sizeof(ThreadInfo);
  for (const SlowCall& call : snapshot.slow_calls) {
    bytes += sizeof(SlowCall) + call.events.capacity() * sizeof(TraceEvent);
  }
  for (const std::string& name : snapshot.names) {
    bytes += sizeof(name) + name.capacity();
  }
  return bytes;
}

// `format` of the snapshot. A stream's answer is written from the snapshot when it is sent, in
// pieces (the server's budget).
Response written(Format format, Snapshot snapshot) {
  const exporters::Writer writer = exporters::writer(format);
  const char* mime = exporters::format_info(format).mime;
  if (writer.whole != nullptr) {
    return Response{200, mime, writer.whole(snapshot), ""};
  }
  auto kept = std::make_shared<const Snapshot>(std::move(snapshot));
  Response response{200, mime, "", ""};
  response.held_bytes = snapshot_bytes(*kept);
  response.write = [kept, write = writer.stream](std::ostream& out) { write(*kept, out); };
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

// The format the request's `format` parameter chooses at its path (without one, the path's
// first), or nullptr with the problem in `problem`.
const FormatInfo* chosen_format(const Request& request, std::string& problem) {
  const auto name = parameter(request, "format");
  const FormatInfo* format = exporters::find_format(request.path, name.value_or(""));
  if (format == nullptr || (name && name->empty())) {
    problem = text::cat("format=\"", name.value_or(""), "\" is not one of ",
                        exporters::format_names(request.path, ", "));
    return nullptr;
  }
  return format;
}

Response info(const Process& process) {
  const Snapshot snapshot = trace::snapshot(trace::Contents::StatisticsOnly);
  return json_response(200, [&](text::JsonWriter& json) {
    json.begin_object();
    write_process_members(json, process, heap_link::mode_name());
    json.key("clock");
    exporters::detail::write_clock(json, snapshot.clock);
    json.key("window")
        .begin_object()
        .member("start_unix_ns", snapshot.start_unix_ns)
        .member("duration_ns", snapshot.duration_ns)
        .end_object()
        .key("records");
    exporters::detail::write_records(json, snapshot.records);
    json.key("trace")
        .begin_object()
        .member("events", snapshot.trace_window_events)
        .member("evicted", snapshot.trace_evicted)
        .member("open_scopes", snapshot.trace_open_scopes)
        .end_object()
        .member("threads_folded", snapshot.threads_folded)
        .end_object();
  });
}

Response stats(const Request& request) {
  std::string problem;
  const FormatInfo* format = chosen_format(request, problem);
  if (format == nullptr) {
    return error_response(400, problem);
  }
  // Live views (columns) read the totals only: no per-thread function lists.
  return written(format->format, trace::snapshot(format->format == Format::Columns
                                                     ? trace::Contents::ProcessTotals
                                                     : trace::Contents::StatisticsOnly));
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
  return error_response(
      501, "the trace window is off in this process (HOTSCOPE_TRACE_MIB=0); start it "
           "with HOTSCOPE_TRACE_MIB set to a size in MiB (default 32) to keep a trace");
}

Response trace_window(const Process& process, const Request& request) {
  std::string problem;
  const FormatInfo* format = chosen_format(request, problem);
  if (format == nullptr) {
    return error_response(400, problem);
  }
  std::optional<std::uint64_t> recent_ns;
  if (const auto seconds = parameter(request, "seconds")) {
    const auto value = bounded_number(*seconds, false);
    if (!value) {
      return error_response(
          400, text::cat("seconds=\"", *seconds, "\" is not a number of seconds above 0"));
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
  return written(format->format, std::move(snapshot));
}

// The kept slowest calls (docs/slow.md): of one function (`function`, its exact name; none kept:
// an empty list), at most `top` per function.
Response slow_calls(const Request& request) {
  std::string problem;
  const FormatInfo* format = chosen_format(request, problem);
  if (format == nullptr) {
    return error_response(400, problem);
  }
  std::size_t top = 0;
  if (const auto given = parameter(request, "top")) {
    const auto [end, error] = std::from_chars(given->data(), given->data() + given->size(), top);
    if (error != std::errc() || end != given->data() + given->size() || top == 0) {
      return error_response(400, text::cat("top=\"", *given, "\" is not a whole number above 0"));
    }
  }
  const auto function = parameter(request, "function");
  if (function && function->empty()) {
    return error_response(400, "function=\"\" names no function");
  }
  Snapshot snapshot = trace::snapshot(trace::Contents::StatisticsAndSlowCalls);
  exporters::keep_slow_calls(snapshot, function ? &*function : nullptr, top);
  return written(format->format, std::move(snapshot));
}

Response threads(const Request& request) {
  std::string problem;
  const FormatInfo* format = chosen_format(request, problem);
  if (format == nullptr) {
    return error_response(400, problem);
  }
  std::uint64_t stuck_ns = kDefaultStuckMs * 1'000'000;
  if (const auto stuck_ms = parameter(request, "stuck_ms")) {
    const auto value = bounded_number(*stuck_ms, true);
    if (!value) {
      return error_response(400, text::cat("stuck_ms=\"", *stuck_ms,
                                           "\" is not a number of milliseconds (0 or more)"));
    }
    stuck_ns = static_cast<std::uint64_t>(*value * 1e6);
  }
  const Snapshot snapshot = trace::snapshot(trace::Contents::StatisticsOnly);
  std::ostringstream out;
  exporters::writer(format->format).threads(snapshot, stuck_ns, out);
  return Response{200, format->mime, std::move(out).str(), ""};
}

// A heap format, written by the heap library.
Response heap(const FormatInfo& format) {
  if (std::string reason = heap_link::unavailable_reason(); !reason.empty()) {
    return error_response(501, reason);
  }
  std::string profile;
  if (const Result result = hotscope::heap_profile(
          format.format == Format::PprofHeap ? HeapFormat::Pprof : HeapFormat::Dhat, profile);
      !result) {
    return error_response(500, result.problem());
  }
  return Response{200, format.mime, std::move(profile), ""};
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

// One profile of a kind at a time: each holds one of the agent's threads for its seconds.
class ProfileTurn {
public:
  ProfileTurn(std::atomic<bool>& busy, const char* path)
      : busy_(busy), path_(path), taken_(!busy.exchange(true)) {}
  ProfileTurn(const ProfileTurn&) = delete;
  ProfileTurn& operator=(const ProfileTurn&) = delete;
  ~ProfileTurn() {
    if (taken_) {
      busy_ = false;
    }
  }
  // 409 when another request of the kind has the turn.
  std::optional<Response> refused() const {
    if (taken_) {
      return std::nullopt;
    }
    return error_response(
        409, text::cat("another ", path_, " is being taken; ask again when it is done"));
  }

private:
  std::atomic<bool>& busy_;
  const char* path_;
  bool taken_;
};

// Waits `seconds`; false when the agent stopped meanwhile (it answers 503 then).
bool waited(double seconds) {
  const std::chrono::duration<double> period(seconds);
  StopSignal& stop = stop_signal();
  std::unique_lock lock(stop.mutex);
  return !stop.changed.wait_for(lock, period, [&] { return stop.stopping; });
}

// Wall time per scope stack over the next N seconds, from the trace window, as Go's
// /debug/pprof/profile?seconds=N answers CPU samples.
Response wall_profile(const Process& process, const Request& request) {
  double seconds = kDefaultProfileSeconds;
  if (const auto given = parameter(request, "seconds")) {
    const auto value = bounded_number(*given, false);
    if (!value || *value > kMostProfileSeconds) {
      return error_response(400, text::cat("seconds=\"", *given,
                                           "\" is not a number of seconds above 0 and at most ",
                                           static_cast<std::uint64_t>(kMostProfileSeconds)));
    }
    seconds = *value;
  }
  if (process.trace_window_bytes == 0) {
    return trace_off();
  }
  static std::atomic<bool> busy{false};
  const ProfileTurn turn(busy, "/debug/pprof/wall");
  if (auto refused = turn.refused()) {
    return std::move(*refused);
  }
  if (!waited(seconds)) {
    return error_response(503, "the process is exiting");
  }
  Snapshot snapshot = trace::snapshot();
  keep_recent_trace(snapshot, static_cast<std::uint64_t>(seconds * 1e9));
  return written(Format::PprofWall, std::move(snapshot));
}

// The CPU samples of the next N seconds (whole seconds, as Go's): the difference of the CPU
// profiles of snapshots taken before and after. A sampler that is off runs for those seconds.
Response cpu_profile(const Request& request) {
  std::string problem;
  const FormatInfo* format = chosen_format(request, problem);
  if (format == nullptr) {
    return error_response(400, problem);
  }
  std::uint64_t seconds = static_cast<std::uint64_t>(kDefaultProfileSeconds);
  if (const auto given = parameter(request, "seconds")) {
    const auto value = bounded_number(*given, false);
    if (!value || *value < 1 || *value > static_cast<double>(kMostCpuProfileSeconds) ||
        *value != std::floor(*value)) {
      return error_response(400, text::cat("seconds=\"", *given,
                                           "\" is not a whole number of seconds from 1 to ",
                                           kMostCpuProfileSeconds));
    }
    seconds = static_cast<std::uint64_t>(*value);
  }
  static std::atomic<bool> busy{false};
  const ProfileTurn turn(busy, "/debug/pprof/profile");
  if (auto refused = turn.refused()) {
    return std::move(*refused);
  }
  const bool started = cpu::hz() == 0;
  if (started) {
    trace::start_collector_thread(); // the samples' buffer is emptied as they come
    if (const std::string problem = cpu::start(kAgentCpuHz); !problem.empty()) {
      return error_response(503, "the CPU sampler cannot start: " + problem);
    }
  }
  const Snapshot before = trace::snapshot(trace::Contents::StatisticsOnly);
  // The window is the seconds asked from the first snapshot's capture: the time that snapshot
  // takes to finish (a second under ASan on a busy program) is part of the wait, not added to it.
  const std::uint64_t now = clock::now_ticks();
  const double spent =
      static_cast<double>(now > before.captured_ticks ? now - before.captured_ticks : 0) /
      clock::ticks_per_second();
  const bool complete = waited(std::max(0.0, static_cast<double>(seconds) - spent));
  Snapshot after = trace::snapshot(trace::Contents::StatisticsOnly);
  if (started) {
    cpu::stop();
  }
  if (!complete) {
    return error_response(503, "the process is exiting");
  }
  // A reset in between started a new measuring window: all of it is in the wait.
  if (after.start_unix_ns == before.start_unix_ns && after.duration_ns >= before.duration_ns) {
    after.cpu = cpu_difference(before.cpu, after.cpu);
    after.start_unix_ns += before.duration_ns;
    after.duration_ns -= before.duration_ns;
  }
  return written(format->format, std::move(after));
}

// POST /v1/instrument?state=on|off[&function=PATTERN] (docs/agent.md): XRay's sleds patched or
// unpatched, all or those of the functions whose name PATTERN matches (fnmatch); without a
// function, the -finstrument-functions hooks too (they have no per-function switch).
Response switch_instrumentation(const Request& request) {
  const std::optional<std::string> state = parameter(request, "state");
  if (!state || (*state != "on" && *state != "off")) {
    return error_response(400, text::cat("state=\"", state.value_or(""),
                                         "\" is not on or off (POST "
                                         "/v1/instrument?state=on|off&function=PATTERN)"));
  }
  const bool on = *state == "on";
  const std::optional<std::string> pattern = parameter(request, "function");
  if (pattern && pattern->empty()) {
    return error_response(400, "function= is empty: give a name pattern (*, ?, [...]) or leave "
                               "it out to switch every function");
  }
  const std::vector<instrument::XrayFunction> functions = instrument::xray_functions();
  if (pattern && functions.empty()) {
    return error_response(409, "this process has no XRay function: only XRay's sleds are "
                               "switched one function at a time (docs/instrument.md)");
  }
  std::size_t switched = 0;
  if (!pattern) {
    instrument::hooks_off.store(!on, std::memory_order_relaxed);
    if (!functions.empty() && !instrument::switch_xray(0, on)) {
      return error_response(500, "XRay could not patch the sleds");
    }
    switched = functions.size();
  } else {
    for (const instrument::XrayFunction& function : functions) {
      const std::string name = objects::function_at(function.entry).name;
      if (fnmatch(pattern->c_str(), name.c_str(), 0) == 0 &&
          instrument::switch_xray(function.id, on)) {
        ++switched;
      }
    }
  }
  return json_response(200, [&](text::JsonWriter& json) {
    json.begin_object().member("state", *state).member("xray_functions", functions.size());
    json.member("switched", switched).end_object();
  });
}

Response not_found(Listener listener, const std::string& path) {
  return json_response(404, [&](text::JsonWriter& json) {
    json.begin_object()
        .member("error", text::cat("no endpoint ", path))
        .member("api_version", kApiVersion)
        .key("endpoints")
        .begin_array();
    for (const Endpoint& endpoint : kEndpoints) {
      if (listener == Listener::Unix || endpoint.tcp) {
        json.value(usage(endpoint));
      }
    }
    json.end_array().end_object();
  });
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

Response error_response(unsigned status, const std::string& problem) {
  return json_response(status, [&](text::JsonWriter& json) {
    json.begin_object().member("error", problem).end_object();
  });
}

Response forbidden(uid_t peer_uid, uid_t own_uid) {
  return error_response(403, text::cat("uid ", peer_uid, " may not use this agent: only uid ",
                                       own_uid, " and root may"));
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
    return error_response(414, text::cat("the query has more than ", kMaxParameters,
                                         " parameters (no endpoint takes more than 3)"));
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
        error_response(405, text::cat(endpoint->path, " takes ", method, ", not ", request.method));
    response.allow = get ? "GET, HEAD" : "POST";
    return response;
  }
  if (request.has_body) {
    return error_response(413, "the agent accepts no request body");
  }
  for (const auto& [key, value] : request.query) {
    bool known = false;
    for (const char* accepted : endpoint->parameters) {
      known = known || (accepted != nullptr && key == accepted);
    }
    if (!known) {
      return error_response(400, text::cat(endpoint->path, " takes no parameter \"", key,
                                           "\" (see ", usage(*endpoint), ")"));
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
  if (path == "/v1/slow") {
    return slow_calls(request);
  }
  if (path == "/v1/locks" || path == "/debug/pprof/mutex") {
    return written(path == "/v1/locks" ? Format::Locks : Format::PprofMutex,
                   trace::snapshot(trace::Contents::StatisticsOnly));
  }
  if (path == "/v1/metrics") {
    Snapshot snapshot = trace::snapshot(trace::Contents::StatisticsOnly);
    snapshot.heap = heap_link::figures();
    if (wants_openmetrics(request.accept)) {
      std::ostringstream out;
      exporters::write_openmetrics(snapshot, out);
      return Response{200, exporters::kOpenMetricsMime, std::move(out).str(), ""};
    }
    return written(Format::Prometheus, std::move(snapshot));
  }
  if (path == "/v1/heap" || path == "/v1/cpu") {
    std::string problem;
    const FormatInfo* format = chosen_format(request, problem);
    if (format == nullptr) {
      return error_response(400, problem);
    }
    return path == "/v1/heap"
               ? heap(*format)
               : written(format->format, trace::snapshot(trace::Contents::StatisticsOnly));
  }
  if (path == "/debug/pprof/heap") {
    return heap(exporters::format_info(Format::PprofHeap));
  }
  if (path == "/debug/pprof/profile") {
    return cpu_profile(request);
  }
  if (path == "/debug/pprof/wall") {
    return wall_profile(process, request);
  }
  if (path == "/v1/instrument") {
    return switch_instrumentation(request);
  }
  trace::reset();
  heap_link::reset();
  return json_response(
      200, [](text::JsonWriter& json) { json.begin_object().member("reset", true).end_object(); });
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
