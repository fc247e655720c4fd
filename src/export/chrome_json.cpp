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

// Streams the events, one per line: the tracks' names, then the trace window's events with the
// flows that link a queue's push to its pop and a task's suspension to its next resumption.
class EventWriter {
public:
  EventWriter(const Snapshot& snapshot, std::ostream& out) : snapshot_(snapshot), out_(out) {}

  void name_tracks() {
    name_process(snapshot_.pid, detail::process_label(snapshot_));
    for (const auto* threads : {&snapshot_.threads, &snapshot_.trace_threads}) {
      for (const ThreadInfo& thread : *threads) {
        name_thread(thread);
      }
    }
  }

  void event(const detail::TraceStep& step) {
    const TraceEvent& event = step.event;
    const TrackIds ids = track_ids(snapshot_, step.thread);
    const std::string where = text::cat(R"("pid":)", ids.pid, R"(,"tid":)", ids.tid, R"(,"ts":)",
                                        detail::fixed3(event.ns, 1000));
    switch (event.kind) {
    case EventKind::Begin:
      emit(
          text::cat(R"({"ph":"B","name":)", name(event.name), R"(,"cat":"function",)", where, '}'));
      break;
    case EventKind::End:
      // The name of the Begin being closed, so both halves always agree (speedscope needs it).
      emit(text::cat(R"({"ph":"E","name":)", name(step.open.back()), R"(,"cat":"function",)", where,
                     '}'));
      break;
    case EventKind::TaskResume:
    case EventKind::TaskSuspend:
    case EventKind::TaskComplete:
      task(step, where);
      break;
    case EventKind::Message:
      emit(text::cat(R"({"ph":"i","name":)", name(event.name), R"(,"cat":"message","s":"t",)",
                     where, '}'));
      break;
    case EventKind::Counter:
      emit(text::cat(R"({"ph":"C","name":)", name(event.name), ',', where, R"(,"args":{"value":)",
                     event.value, "}}"));
      break;
    case EventKind::QueuePush:
    case EventKind::QueuePop:
      queue(step, where);
      break;
    case EventKind::LockWait: { // a complete slice that ends at the event
      const std::uint64_t waited = static_cast<std::uint64_t>(event.value);
      emit(text::cat(R"({"ph":"X","name":)",
                     json_string("wait for " + snapshot_.names.at(event.name)),
                     R"(,"cat":"lock","pid":)", ids.pid, R"(,"tid":)", ids.tid, R"(,"ts":)",
                     detail::fixed3(event.ns - std::min(waited, event.ns), 1000), R"(,"dur":)",
                     detail::fixed3(waited, 1000), '}'));
      break;
    }
    case EventKind::LockHandoff:
    case EventKind::LockAcquired:
      break;
    }
  }

private:
  // No separator after the last event: speedscope rejects a trailing empty element.
  void emit(const std::string& event) {
    out_ << (first_ ? "\n" : ",\n") << event;
    first_ = false;
  }

  std::string name(std::uint32_t id) const { return json_string(snapshot_.names.at(id)); }

  void name_process(std::int64_t pid, const std::string& name) {
    emit(text::cat(R"({"ph":"M","name":"process_name","pid":)", pid, R"(,"tid":)", pid,
                   R"(,"args":{"name":)", json_string(name), "}}"));
  }

  void name_thread(const ThreadInfo& thread) {
    const TrackIds ids = track_ids(snapshot_, thread);
    if (thread.external()) {
      name_process(ids.pid, detail::thread_label(thread)); // "guest: NAME"
    }
    emit(text::cat(R"({"ph":"M","name":"thread_name","pid":)", ids.pid, R"(,"tid":)", ids.tid,
                   R"(,"args":{"name":)", json_string(detail::thread_label(thread)), "}}"));
  }

  // A task's running slice, and a flow from each suspension to the next resumption.
  void task(const detail::TraceStep& step, const std::string& where) {
    const TraceEvent& event = step.event;
    if (event.kind == EventKind::TaskResume) {
      const std::string task = name(event.name);
      emit(text::cat(R"({"ph":"B","name":)", task, R"(,"cat":"task",)", where,
                     R"(,"args":{"task":)", static_cast<std::uint64_t>(event.value), "}}"));
      if (const auto started = task_flows_.find(event.value); started != task_flows_.end()) {
        emit(text::cat(R"({"ph":"f","bp":"e","id":)", started->second, R"(,"name":)", task,
                       R"(,"cat":"task",)", where, '}'));
        task_flows_.erase(started);
      }
      return;
    }
    const std::string task = name(step.open.back());
    if (event.kind == EventKind::TaskSuspend) {
      task_flows_[event.value] = next_flow_;
      emit(text::cat(R"({"ph":"s","id":)", next_flow_++, R"(,"name":)", task, R"(,"cat":"task",)",
                     where, '}'));
    }
    emit(text::cat(R"({"ph":"E","name":)", task, R"(,"cat":"task",)", where, '}'));
  }

  // A flow arrow from the scope that pushed an item to the scope that popped it. A flow's ends
  // must lie inside slices: a push or pop outside any scope gets a zero-length slice of its own.
  void queue(const detail::TraceStep& step, const std::string& where) {
    const TraceEvent& event = step.event;
    const std::string_view queue = snapshot_.names.at(event.name);
    const auto key = std::make_pair(queue, event.value);
    const bool push = event.kind == EventKind::QueuePush;
    std::uint64_t flow = next_flow_;
    if (push) {
      flows_started_[key] = next_flow_++;
    } else if (const auto started = flows_started_.find(key); started != flows_started_.end()) {
      flow = started->second;
      flows_started_.erase(started);
    } else {
      return;
    }
    const bool own_slice = step.open.empty();
    const std::string slice_name =
        own_slice ? json_string(text::cat(push ? "push " : "pop ", queue)) : "";
    if (own_slice) {
      emit(text::cat(R"({"ph":"B","name":)", slice_name, R"(,"cat":"queue",)", where, '}'));
    }
    // Both ends bind to the slice enclosing them (an `f` needs "bp":"e" for that).
    emit(text::cat(R"({"ph":")", push ? "s" : "f", R"(",)", push ? "" : R"("bp":"e",)", R"("id":)",
                   flow, R"(,"name":)", json_string(queue), R"(,"cat":"queue",)", where, '}'));
    if (own_slice) {
      emit(text::cat(R"({"ph":"E","name":)", slice_name, R"(,"cat":"queue",)", where, '}'));
    }
  }

  const Snapshot& snapshot_;
  std::ostream& out_;
  bool first_ = true;
  std::map<std::pair<std::string_view, std::int64_t>, std::uint64_t> flows_started_;
  std::map<std::int64_t, std::uint64_t> task_flows_; // by task id
  std::uint64_t next_flow_ = 1;
};

// otherData: the clock, the records' counts and the guest images, for readers of the file.
std::string other_data(const Snapshot& snapshot) {
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
  return other;
}

} // namespace

void write_chrome_json(const Snapshot& snapshot, std::ostream& out) {
  out << "{\"traceEvents\":[";
  EventWriter events(snapshot, out);
  events.name_tracks();
  detail::walk_trace(snapshot, [&](const detail::TraceStep& step) { events.event(step); });
  out << "\n],\"displayTimeUnit\":\"ns\",\"otherData\":" << other_data(snapshot) << "}\n";
}

} // namespace hotscope::exporters
