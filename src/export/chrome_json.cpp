// Chrome Trace Event JSON, object form, one event per line. Events are streamed rather than
// built as one JSON document so large trace windows need no second copy in memory; nlohmann
// escapes every string and writes otherData.
#include "export/common.hpp"
#include "export/export.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <map>
#include <ostream>
#include <string_view>
#include <utility>

namespace hotscope::exporters {
namespace {

// Names may hold any bytes (a message cut at its size limit can end mid-character): invalid
// UTF-8 becomes U+FFFD instead of making the whole file unreadable.
std::string json_string(std::string_view text) {
  return nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Perfetto reads pid and tid as 32-bit values: an external track's os_tid (2^32 + n) would
// collapse onto tid n. Each external track (a guest) becomes a process of its own instead, with
// a pid above any real one (pid_max is at most 2^22) and its one thread's tid equal to it.
constexpr std::int64_t kExternalPidBase = std::int64_t{1} << 30;

struct TrackIds {
  std::int64_t pid;
  std::int64_t tid;
};

TrackIds track_ids(const Snapshot& snapshot, const ThreadInfo& thread) {
  if (thread.external()) {
    const std::int64_t pid = kExternalPidBase + (thread.os_tid - kExternalTidBase);
    return {pid, pid};
  }
  return {snapshot.pid, thread.os_tid};
}

} // namespace

void write_chrome_json(const Snapshot& snapshot, std::ostream& out) {
  out << "{\"traceEvents\":[";
  // No separator after the last event: speedscope rejects a trailing empty element.
  bool first = true;
  auto emit = [&](const std::string& event) {
    out << (first ? "\n" : ",\n") << event;
    first = false;
  };
  const auto name_process = [&](std::int64_t pid, const std::string& name) {
    emit(fmt::format(R"({{"ph":"M","name":"process_name","pid":{},"tid":{},"args":{{"name":{}}}}})",
                     pid, pid, json_string(name)));
  };
  name_process(snapshot.pid, detail::process_label(snapshot));
  const auto name_thread = [&](const ThreadInfo& thread) {
    const TrackIds ids = track_ids(snapshot, thread);
    if (thread.external()) {
      name_process(ids.pid, detail::thread_label(thread)); // "guest: NAME"
    }
    emit(fmt::format(R"({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":{}}}}})",
                     ids.pid, ids.tid, json_string(detail::thread_label(thread))));
  };
  for (const ThreadInfo& thread : snapshot.threads) {
    name_thread(thread);
  }
  for (const ThreadInfo& thread : snapshot.trace_threads) {
    name_thread(thread);
  }

  // Flow arrows from the scope that pushed an item to the scope that popped it. A flow's ends
  // must lie inside slices: a push or pop outside any scope gets a zero-length slice of its own.
  std::map<std::pair<std::string_view, std::int64_t>, std::uint64_t> flows_started;
  // A task's slices are linked the same way: a flow from each suspension to the next resumption.
  std::map<std::int64_t, std::uint64_t> task_flows;
  std::uint64_t next_flow = 1;
  detail::walk_trace(snapshot, [&](const detail::TraceStep& step) {
    const TraceEvent& event = step.event;
    const TrackIds ids = track_ids(snapshot, step.thread);
    const std::string where = fmt::format(R"("pid":{},"tid":{},"ts":{})", ids.pid, ids.tid,
                                          detail::fixed3(event.ns, 1000));
    switch (event.kind) {
    case EventKind::Begin:
      emit(fmt::format(R"({{"ph":"B","name":{},"cat":"function",{}}})",
                       json_string(snapshot.names.at(event.name)), where));
      break;
    case EventKind::End:
      // The name of the Begin being closed, so both halves always agree (speedscope needs it).
      emit(fmt::format(R"({{"ph":"E","name":{},"cat":"function",{}}})",
                       json_string(snapshot.names.at(step.open.back())), where));
      break;
    case EventKind::TaskResume: {
      const std::string name = json_string(snapshot.names.at(event.name));
      emit(fmt::format(R"({{"ph":"B","name":{},"cat":"task",{},"args":{{"task":{}}}}})", name,
                       where, static_cast<std::uint64_t>(event.value)));
      if (const auto started = task_flows.find(event.value); started != task_flows.end()) {
        emit(fmt::format(R"({{"ph":"f","bp":"e","id":{},"name":{},"cat":"task",{}}})",
                         started->second, name, where));
        task_flows.erase(started);
      }
      break;
    }
    case EventKind::TaskSuspend:
    case EventKind::TaskComplete: {
      const std::string name = json_string(snapshot.names.at(step.open.back()));
      if (event.kind == EventKind::TaskSuspend) {
        task_flows[event.value] = next_flow;
        emit(fmt::format(R"({{"ph":"s","id":{},"name":{},"cat":"task",{}}})", next_flow++, name,
                         where));
      }
      emit(fmt::format(R"({{"ph":"E","name":{},"cat":"task",{}}})", name, where));
      break;
    }
    case EventKind::Message:
      emit(fmt::format(R"({{"ph":"i","name":{},"cat":"message","s":"t",{}}})",
                       json_string(snapshot.names.at(event.name)), where));
      break;
    case EventKind::Counter:
      emit(fmt::format(R"({{"ph":"C","name":{},{},"args":{{"value":{}}}}})",
                       json_string(snapshot.names.at(event.name)), where, event.value));
      break;
    case EventKind::QueuePush:
    case EventKind::QueuePop: {
      const std::string_view queue = snapshot.names.at(event.name);
      const auto key = std::make_pair(queue, event.value);
      const bool push = event.kind == EventKind::QueuePush;
      std::uint64_t flow = next_flow;
      if (push) {
        flows_started[key] = next_flow++;
      } else if (const auto started = flows_started.find(key); started != flows_started.end()) {
        flow = started->second;
        flows_started.erase(started);
      } else {
        break;
      }
      const bool own_slice = step.open.empty();
      const std::string slice_name =
          own_slice ? json_string(fmt::format("{} {}", push ? "push" : "pop", queue)) : "";
      if (own_slice) {
        emit(fmt::format(R"({{"ph":"B","name":{},"cat":"queue",{}}})", slice_name, where));
      }
      // Both ends bind to the slice enclosing them (an `f` needs "bp":"e" for that).
      emit(fmt::format(R"({{"ph":"{}",{}"id":{},"name":{},"cat":"queue",{}}})", push ? "s" : "f",
                       push ? "" : R"("bp":"e",)", flow, json_string(queue), where));
      if (own_slice) {
        emit(fmt::format(R"({{"ph":"E","name":{},"cat":"queue",{}}})", slice_name, where));
      }
      break;
    }
    }
  });

  nlohmann::ordered_json other = {
      {"hotscope_version", snapshot.hotscope_version},
      {"clock_source", snapshot.clock.source},
      {"frequency_origin", snapshot.clock.frequency_origin},
      {"ticks_per_second", snapshot.clock.ticks_per_second},
      {"records_written", snapshot.records.written},
      {"records_kept", snapshot.records.kept},
      {"records_dropped", snapshot.records.dropped},
      {"trace_evicted", snapshot.trace_evicted},
      {"trace_open_scopes", snapshot.trace_open_scopes},
      {"threads_folded", snapshot.threads_folded},
      {"guest_images", detail::guest_images_json(snapshot.guest_images)},
  };
  out << "\n],\"displayTimeUnit\":\"ns\",\"otherData\":"
      << other.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "}\n";
}

} // namespace hotscope::exporters
