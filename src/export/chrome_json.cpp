// Chrome Trace Event JSON, object form, one event per line. Events are streamed rather than
// built as one JSON document so large trace windows need no second copy in memory; the text
// component escapes every string and writes otherData.
#include "export/common.hpp"
#include "export/export.hpp"
#include "text/text.hpp"

#include <algorithm>
#include <map>
#include <ostream>
#include <string_view>
#include <tuple>
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
// The kept slowest calls' process (docs/slow.md), below the external tracks'; its tracks' tids
// are the threads' indexes plus one.
constexpr std::int64_t kSlowCallsPid = kExternalPidBase - 1;

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
// flows that link a queue's push to its pop, a task's suspension to its next resumption and a
// lock's release to the acquisition of the waiter it let in.
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
                     json_string(detail::lock_wait_frame(snapshot_.names.at(event.name))),
                     R"(,"cat":"lock","pid":)", ids.pid, R"(,"tid":)", ids.tid, R"(,"ts":)",
                     detail::fixed3(event.ns - std::min(waited, event.ns), 1000), R"(,"dur":)",
                     detail::fixed3(waited, 1000), '}'));
      break;
    }
    case EventKind::LockHandoff:
    case EventKind::LockAcquired:
      lock_handoff(step, where);
      break;
    }
  }

  // The kept slowest calls as a process of their own, a track per thread, so that they show even
  // once the window has let them go. A call inside one shown (before its cut) is not repeated.
  void slow_calls() {
    if (snapshot_.slow_calls.empty()) {
      return;
    }
    name_process(kSlowCallsPid, text::cat(detail::process_label(snapshot_), ": slowest calls"));
    std::map<std::uint32_t, std::vector<const SlowCall*>> by_thread;
    for (const SlowCall& call : snapshot_.slow_calls) {
      by_thread[call.thread].push_back(&call);
    }
    for (auto& [thread, calls] : by_thread) { // outer calls before the calls inside them
      std::sort(calls.begin(), calls.end(), [](const SlowCall* a, const SlowCall* b) {
        return std::tie(a->start_ns, b->duration_ns) < std::tie(b->start_ns, a->duration_ns);
      });
      emit(text::cat(R"({"ph":"M","name":"thread_name","pid":)", kSlowCallsPid, R"(,"tid":)",
                     std::int64_t{thread} + 1, R"(,"args":{"name":)",
                     json_string(text::cat("slowest calls of ", calls.front()->thread_name)),
                     "}}"));
      std::uint64_t shown_start = 0;
      std::uint64_t shown_end = 0; // of the last call shown: its cut, or its end
      for (const SlowCall* call : calls) {
        if (call->start_ns >= shown_start && call->start_ns + call->duration_ns <= shown_end) {
          continue;
        }
        slow_call(*call);
        shown_start = call->start_ns;
        shown_end = call->cut_events != 0 ? call->cut_at_ns : call->start_ns + call->duration_ns;
      }
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

  // A flow arrow from the scope that pushed an item to the scope that popped it.
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
    flow_in_slice(step, where, push, flow, queue, "queue", push ? "push " : "pop ");
  }

  // A flow arrow from the scope that released a lock (LockHandoff) to the scope of the waiter it
  // let in, at its acquisition (LockAcquired): the two ends share the handoff's id.
  void lock_handoff(const detail::TraceStep& step, const std::string& where) {
    const TraceEvent& event = step.event;
    const bool release = event.kind == EventKind::LockHandoff;
    std::uint64_t flow = next_flow_;
    if (release) {
      lock_flows_[event.value] = next_flow_++;
    } else if (const auto started = lock_flows_.find(event.value); started != lock_flows_.end()) {
      flow = started->second;
      lock_flows_.erase(started);
    } else {
      return;
    }
    flow_in_slice(step, where, release, flow, snapshot_.names.at(event.name), "lock",
                  release ? "release " : "acquire ");
  }

  // A flow's start or finish, which must lie inside a slice: the innermost scope open on the
  // thread, or, outside any scope, a zero-length slice of its own named `own_slice` + `name`.
  void flow_in_slice(const detail::TraceStep& step, const std::string& where, bool start,
                     std::uint64_t flow, std::string_view name, const char* category,
                     const char* own_slice) {
    const std::string cat = text::cat(R"(,"cat":")", category, R"(",)");
    const bool alone = step.open.empty();
    const std::string slice_name = alone ? json_string(text::cat(own_slice, name)) : "";
    if (alone) {
      emit(text::cat(R"({"ph":"B","name":)", slice_name, cat, where, '}'));
    }
    // Both ends bind to the slice enclosing them (an `f` needs "bp":"e" for that).
    emit(text::cat(R"({"ph":")", start ? "s" : "f", R"(",)", start ? "" : R"("bp":"e",)",
                   R"("id":)", flow, R"(,"name":)", json_string(name), cat, where, '}'));
    if (alone) {
      emit(text::cat(R"({"ph":"E","name":)", slice_name, cat, where, '}'));
    }
  }

  // One kept call's events on its thread's track of the kept calls' process; the instants name
  // their kind (message, counter, queue_push...) and carry their value.
  void slow_call(const SlowCall& call) {
    const std::string track =
        text::cat(R"(,"pid":)", kSlowCallsPid, R"(,"tid":)", std::int64_t{call.thread} + 1);
    const auto at = [&](std::uint64_t ns) {
      return text::cat(track, R"(,"ts":)", detail::fixed3(ns, 1000));
    };
    const auto slice = [&](const char* phase, const std::string& name, std::uint64_t ns,
                           const std::string& args) {
      emit(text::cat(R"({"ph":")", phase, R"(","name":)", name, R"(,"cat":"slow call")", at(ns),
                     args, '}'));
    };
    std::vector<std::string> open;
    for (const TraceEvent& event : call.events) {
      if (call.cut_events != 0 && &event == &call.events.back()) {
        // The cut is before the End: the slices open at the cut end there.
        emit(text::cat(R"({"ph":"i","name":)",
                       json_string(text::cat("… ", call.cut_events, " events not kept")),
                       R"(,"cat":"cut","s":"t")", at(call.cut_at_ns), '}'));
        for (; open.size() > 1; open.pop_back()) {
          slice("E", open.back(), call.cut_at_ns, "");
        }
      }
      const std::string name = this->name(event.name);
      if (&event == &call.events.front()) {
        // The call's id on an instant, not on its slice: viewers that key frames by name and
        // args (speedscope) would pair the slice's end with nothing.
        emit(text::cat(R"({"ph":"i","name":"kept call","cat":"slow call","s":"t")", at(event.ns),
                       R"(,"args":{"call_id":")", call.id, R"("}})"));
      }
      if (opens_slice(event.kind)) {
        slice("B", name, event.ns, "");
        open.push_back(name);
      } else if (closes_slice(event.kind)) {
        slice("E", name, event.ns, "");
        if (!open.empty()) {
          open.pop_back();
        }
      } else if (event.kind == EventKind::LockWait) {
        const auto waited = static_cast<std::uint64_t>(event.value);
        emit(text::cat(R"({"ph":"X","name":)",
                       json_string(detail::lock_wait_frame(snapshot_.names.at(event.name))),
                       R"(,"cat":"lock")", at(event.ns - std::min(waited, event.ns)), R"(,"dur":)",
                       detail::fixed3(waited, 1000), '}'));
      } else {
        emit(text::cat(R"({"ph":"i","name":)", name, R"(,"cat":")",
                       detail::event_kind_name(event.kind), R"(","s":"t")", at(event.ns),
                       R"(,"args":{"value":)", event.value, "}}"));
      }
    }
  }

  const Snapshot& snapshot_;
  std::ostream& out_;
  bool first_ = true;
  std::map<std::pair<std::string_view, std::int64_t>, std::uint64_t> flows_started_;
  std::map<std::int64_t, std::uint64_t> task_flows_; // by task id
  std::map<std::int64_t, std::uint64_t> lock_flows_; // by the handoff's flow id
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
  events.slow_calls();
  out << "\n],\"displayTimeUnit\":\"ns\",\"otherData\":" << other_data(snapshot) << "}\n";
}

} // namespace hotscope::exporters
