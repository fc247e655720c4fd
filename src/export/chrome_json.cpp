// Chrome Trace Event JSON, object form, one event per line. Events are streamed rather than
// built as one JSON document so large trace windows need no second copy in memory; the text
// component escapes every string and writes otherData.
#include "export/common.hpp"
#include "export/export.hpp"
#include "text/text.hpp"

#include <map>
#include <ostream>
#include <string_view>
#include <utility>

namespace hotscope::exporters {
namespace {

// Names may hold any bytes (a message cut at its size limit can end mid-character): invalid
// UTF-8 becomes U+FFFD instead of making the whole file unreadable.
std::string json_string(std::string_view text) {
  std::string quoted;
  text::append_json_string(quoted, text);
  return quoted;
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
    emit(text::cat(R"({"ph":"M","name":"process_name","pid":)", pid, R"(,"tid":)", pid,
                   R"(,"args":{"name":)", json_string(name), "}}"));
  };
  name_process(snapshot.pid, detail::process_label(snapshot));
  const auto name_thread = [&](const ThreadInfo& thread) {
    const TrackIds ids = track_ids(snapshot, thread);
    if (thread.external()) {
      name_process(ids.pid, detail::thread_label(thread)); // "guest: NAME"
    }
    emit(text::cat(R"({"ph":"M","name":"thread_name","pid":)", ids.pid, R"(,"tid":)", ids.tid,
                   R"(,"args":{"name":)", json_string(detail::thread_label(thread)), "}}"));
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
    const std::string where = text::cat(R"("pid":)", ids.pid, R"(,"tid":)", ids.tid, R"(,"ts":)",
                                        detail::fixed3(event.ns, 1000));
    switch (event.kind) {
    case EventKind::Begin:
      emit(text::cat(R"({"ph":"B","name":)", json_string(snapshot.names.at(event.name)),
                     R"(,"cat":"function",)", where, '}'));
      break;
    case EventKind::End:
      // The name of the Begin being closed, so both halves always agree (speedscope needs it).
      emit(text::cat(R"({"ph":"E","name":)", json_string(snapshot.names.at(step.open.back())),
                     R"(,"cat":"function",)", where, '}'));
      break;
    case EventKind::TaskResume: {
      const std::string name = json_string(snapshot.names.at(event.name));
      emit(text::cat(R"({"ph":"B","name":)", name, R"(,"cat":"task",)", where,
                     R"(,"args":{"task":)", static_cast<std::uint64_t>(event.value), "}}"));
      if (const auto started = task_flows.find(event.value); started != task_flows.end()) {
        emit(text::cat(R"({"ph":"f","bp":"e","id":)", started->second, R"(,"name":)", name,
                       R"(,"cat":"task",)", where, '}'));
        task_flows.erase(started);
      }
      break;
    }
    case EventKind::TaskSuspend:
    case EventKind::TaskComplete: {
      const std::string name = json_string(snapshot.names.at(step.open.back()));
      if (event.kind == EventKind::TaskSuspend) {
        task_flows[event.value] = next_flow;
        emit(text::cat(R"({"ph":"s","id":)", next_flow++, R"(,"name":)", name, R"(,"cat":"task",)",
                       where, '}'));
      }
      emit(text::cat(R"({"ph":"E","name":)", name, R"(,"cat":"task",)", where, '}'));
      break;
    }
    case EventKind::Message:
      emit(text::cat(R"({"ph":"i","name":)", json_string(snapshot.names.at(event.name)),
                     R"(,"cat":"message","s":"t",)", where, '}'));
      break;
    case EventKind::Counter:
      emit(text::cat(R"({"ph":"C","name":)", json_string(snapshot.names.at(event.name)), ',', where,
                     R"(,"args":{"value":)", event.value, "}}"));
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
          own_slice ? json_string(text::cat(push ? "push " : "pop ", queue)) : "";
      if (own_slice) {
        emit(text::cat(R"({"ph":"B","name":)", slice_name, R"(,"cat":"queue",)", where, '}'));
      }
      // Both ends bind to the slice enclosing them (an `f` needs "bp":"e" for that).
      emit(text::cat(R"({"ph":")", push ? "s" : "f", R"(",)", push ? "" : R"("bp":"e",)",
                     R"("id":)", flow, R"(,"name":)", json_string(queue), R"(,"cat":"queue",)",
                     where, '}'));
      if (own_slice) {
        emit(text::cat(R"({"ph":"E","name":)", slice_name, R"(,"cat":"queue",)", where, '}'));
      }
      break;
    }
    }
  });

  std::string other;
  text::JsonWriter json(other);
  json.begin_object()
      .member("hotscope_version", snapshot.hotscope_version)
      .member("clock_source", snapshot.clock.source)
      .member("frequency_origin", snapshot.clock.frequency_origin)
      .member("ticks_per_second", snapshot.clock.ticks_per_second)
      .member("records_written", snapshot.records.written)
      .member("records_kept", snapshot.records.kept)
      .member("records_dropped", snapshot.records.dropped)
      .member("trace_evicted", snapshot.trace_evicted)
      .member("trace_open_scopes", snapshot.trace_open_scopes)
      .member("threads_folded", snapshot.threads_folded)
      .key("guest_images");
  detail::write_guest_images(json, snapshot.guest_images);
  json.end_object();
  out << "\n],\"displayTimeUnit\":\"ns\",\"otherData\":" << other << "}\n";
}

} // namespace hotscope::exporters
