// The kept slowest calls (docs/slow.md): slow.txt, each call as trace.txt's indented tree, and
// slow.json (docs/formats-output.md); GET /v1/slow answers both.
#include "export/common.hpp"
#include "export/export.hpp"
#include "text/text.hpp"

#include <algorithm>
#include <ctime>
#include <ostream>

namespace hotscope::exporters {
namespace {

// "2026-12-05 09:01:02.123456 UTC".
std::string utc_time(std::uint64_t unix_ns) {
  const auto seconds = static_cast<std::time_t>(unix_ns / 1'000'000'000);
  std::tm parts{};
  gmtime_r(&seconds, &parts);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S", &parts);
  const std::string micros = text::cat(unix_ns % 1'000'000'000 / 1000);
  return text::cat(date, '.', std::string(6 - micros.size(), '0'), micros, " UTC");
}

// "handle_get: 12.35 ms on worker-1 (tid 4242) from 2026-12-05 09:01:02.123456 UTC, call 17,
// 3 allocations (1.00 KiB), 2 CPU samples".
std::string call_heading(const Snapshot& snapshot, const SlowCall& call) {
  std::string heading = text::cat(snapshot.names.at(call.function), ": ",
                                  detail::human_duration(static_cast<double>(call.duration_ns)),
                                  " on ", call.thread_name, " (tid ", call.os_tid, ") from ",
                                  utc_time(snapshot.start_unix_ns + call.start_ns), ", call ",
                                  call.id, ", ", call.allocations, " allocations");
  if (call.allocations != 0) {
    text::append(heading, " (", detail::human_bytes(call.allocated_bytes), ")");
  }
  if (call.cpu_samples != 0) {
    text::append(heading, ", ", call.cpu_samples, " CPU samples");
  }
  if (call.cut_events != 0) {
    text::append(heading, ", cut: ", call.cut_events, " events not kept");
  }
  return heading;
}

void write_figures(text::JsonWriter& json, const Snapshot& snapshot) {
  const SlowCallFigures& figures = snapshot.slow_call_figures;
  json.member("per_function", figures.per_function)
      .member("budget_bytes", figures.budget_bytes)
      .member("bytes", snapshot.memory.slow_calls)
      .member("kept", figures.kept)
      .member("evicted", figures.evicted)
      .member("cut", figures.cut);
}

void write_call(text::JsonWriter& json, const Snapshot& snapshot, const SlowCall& call) {
  json.begin_object()
      .member("id", text::cat(call.id))
      .member("function", snapshot.names.at(call.function))
      .member("thread", call.thread_name)
      .member("os_tid", call.os_tid)
      .member("start_unix_ns", snapshot.start_unix_ns + call.start_ns)
      .member("duration_ns", call.duration_ns)
      .member("allocations", call.allocations)
      .member("allocated_bytes", call.allocated_bytes)
      .member("cpu_samples", call.cpu_samples)
      .member("cut_events", call.cut_events)
      .member("cut_at_ns", call.cut_events != 0 ? call.cut_at_ns - call.start_ns : 0)
      .member("tree", slow_call_tree(snapshot, call))
      .key("events")
      .begin_array();
  for (const TraceEvent& event : call.events) {
    json.begin_object()
        .member("at_ns", event.ns - std::min(event.ns, call.start_ns))
        .member("kind", detail::event_kind_name(event.kind))
        .member("name", snapshot.names.at(event.name))
        .member("value", event.value)
        .end_object();
  }
  json.end_array().end_object();
}

} // namespace

std::string slow_call_tree(const Snapshot& snapshot, const SlowCall& call) {
  std::string tree;
  std::vector<std::uint32_t> open;
  const auto since_start = [&](std::uint64_t ns) { return ns - std::min(ns, call.start_ns); };
  for (std::size_t i = 0; i < call.events.size(); ++i) {
    const TraceEvent& event = call.events[i];
    if (closes_slice(event.kind) && open.empty()) {
      continue;
    }
    if (call.cut_events != 0 && i + 1 == call.events.size()) {
      // The cut is before the End, which closes the call: the scopes open at the cut are not.
      text::append(
          tree, '[',
          text::pad_right(detail::fixed3(since_start(call.cut_at_ns), 1'000'000) + "ms", 9), "] ",
          std::string(open.size() * 2, ' '), "… ", call.cut_events, " events not kept (more than ",
          kSlowCallEvents, " in this call)\n");
      open.resize(std::min<std::size_t>(open.size(), 1));
    }
    tree += detail::trace_event_line(snapshot, event, open, since_start(event.ns));
    if (opens_slice(event.kind)) {
      open.push_back(event.name);
    } else if (closes_slice(event.kind)) {
      open.pop_back();
    }
  }
  return tree;
}

void keep_slow_calls(Snapshot& snapshot, const std::string* function, std::size_t top) {
  std::vector<SlowCall> kept;
  std::size_t of_this_function = 0;
  for (std::size_t i = 0; i < snapshot.slow_calls.size(); ++i) {
    SlowCall& call = snapshot.slow_calls[i];
    const bool same_function = i > 0 && snapshot.slow_calls[i - 1].function == call.function;
    of_this_function = same_function ? of_this_function + 1 : 0;
    if ((function == nullptr || snapshot.names.at(call.function) == *function) &&
        (top == 0 || of_this_function < top)) {
      kept.push_back(std::move(call));
    }
  }
  snapshot.slow_calls = std::move(kept);
}

void write_slow_text(const Snapshot& snapshot, std::ostream& out) {
  const SlowCallFigures& figures = snapshot.slow_call_figures;
  out << text::cat("hotscope ", snapshot.hotscope_version, ": ", detail::process_label(snapshot),
                   " (pid ", snapshot.pid,
                   "), the slowest calls of each function: ", figures.per_function,
                   " per function (HOTSCOPE_SLOWEST), ", figures.kept, " kept, ", figures.evicted,
                   " evicted, ", detail::human_bytes(snapshot.memory.slow_calls), " of ",
                   detail::human_bytes(figures.budget_bytes), " (HOTSCOPE_SLOWEST_MIB)\n");
  if (snapshot.slow_calls.empty()) {
    out << (figures.per_function == 0 ? "(off: HOTSCOPE_SLOWEST=0)\n" : "(no call kept)\n");
  }
  for (const SlowCall& call : snapshot.slow_calls) {
    out << '\n' << call_heading(snapshot, call) << '\n' << slow_call_tree(snapshot, call);
  }
}

void write_slow_json(const Snapshot& snapshot, std::ostream& out) {
  std::string text;
  text::JsonWriter json(text, 2);
  json.begin_object();
  write_figures(json, snapshot);
  json.key("calls").begin_array();
  for (const SlowCall& call : snapshot.slow_calls) {
    write_call(json, snapshot, call);
  }
  json.end_array().end_object();
  out << text << '\n';
}

} // namespace hotscope::exporters
