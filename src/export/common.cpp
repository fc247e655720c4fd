#include "export/common.hpp"
#include "text/text.hpp"

#include <algorithm>
#include <tuple>
#include <unordered_map>

namespace hotscope::exporters::detail {

std::string fixed3(std::uint64_t value, std::uint64_t unit) {
  const std::string thousandths = text::cat(value % unit / (unit / 1000));
  return text::cat(value / unit, '.', std::string(3 - thousandths.size(), '0'), thousandths);
}

std::string human_duration(double ns) {
  // Thresholds sit just below each switch so that rounding never prints "1000.00 µs".
  if (ns < 999.5) {
    return text::cat(text::fixed(ns, 0), " ns");
  }
  if (ns < 999'995.0) {
    return text::cat(text::fixed(ns / 1e3, 2), " µs");
  }
  if (ns < 999'995'000.0) {
    return text::cat(text::fixed(ns / 1e6, 2), " ms");
  }
  return text::cat(text::fixed(ns / 1e9, 2), " s");
}

std::string human_bytes(std::uint64_t bytes) {
  if (bytes < 1024) {
    return text::cat(bytes, " B");
  }
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double value = static_cast<double>(bytes) / 1024.0;
  std::size_t unit = 0;
  // Switch just below 1024 so that rounding never prints "1024.00 KiB".
  while (value >= 1023.995 && unit + 1 < std::size(kUnits)) {
    value /= 1024.0;
    ++unit;
  }
  return text::cat(text::fixed(value, 2), " ", kUnits[unit]);
}

const char* event_kind_name(EventKind kind) {
  switch (kind) {
  case EventKind::Begin:
    return "begin";
  case EventKind::End:
    return "end";
  case EventKind::Message:
    return "message";
  case EventKind::Counter:
    return "counter";
  case EventKind::QueuePush:
    return "queue_push";
  case EventKind::QueuePop:
    return "queue_pop";
  case EventKind::TaskResume:
    return "task_resume";
  case EventKind::TaskSuspend:
    return "task_suspend";
  case EventKind::TaskComplete:
    return "task_complete";
  case EventKind::LockWait:
    return "lock_wait";
  case EventKind::LockHandoff:
    return "lock_handoff";
  case EventKind::LockAcquired:
    return "lock_acquired";
  }
  return "";
}

std::string process_label(const Snapshot& snapshot) {
  return snapshot.process_name.empty() ? text::cat("process ", snapshot.pid)
                                       : snapshot.process_name;
}

std::string thread_label(const ThreadInfo& thread) {
  return thread.name.empty() ? text::cat("thread ", thread.os_tid) : thread.name;
}

std::string thread_heading(const ThreadInfo& thread) {
  return text::cat("== ", thread_label(thread), " (tid ", thread.os_tid,
                   thread.exited ? ", exited" : "", ") ==");
}

std::string clock_summary(const ClockInfo& clock) {
  std::string summary = text::cat(clock.source, ", ", text::fixed(clock.ticks_per_second / 1e9, 3),
                                  " GHz (", clock.frequency_origin, ")");
  if (!clock.reason.empty()) {
    summary += "; " + clock.reason;
  }
  return summary;
}

std::string records_summary(const RecordCounts& records) {
  return text::cat("written=", records.written, " kept=", records.kept,
                   " dropped=", records.dropped);
}

std::string guest_image_summary(const GuestImage& image) {
  return text::cat("guest image ", image.path, ": ", image.bytes, " bytes, sha256 ", image.sha256,
                   ", track ", image.track);
}

void write_clock(text::JsonWriter& json, const ClockInfo& clock) {
  json.begin_object()
      .member("source", clock.source)
      .member("frequency_origin", clock.frequency_origin)
      .member("ticks_per_second", clock.ticks_per_second)
      .member("invariant_tsc", clock.invariant_tsc)
      .member("reason", clock.reason)
      .end_object();
}

void write_records(text::JsonWriter& json, const RecordCounts& records) {
  json.begin_object()
      .member("written", records.written)
      .member("kept", records.kept)
      .member("dropped", records.dropped)
      .end_object();
}

void write_guest_images(text::JsonWriter& json, const std::vector<GuestImage>& images) {
  json.begin_array();
  for (const GuestImage& image : images) {
    json.begin_object()
        .member("track", image.track)
        .member("path", image.path)
        .member("bytes", image.bytes)
        .member("sha256", image.sha256)
        .end_object();
  }
  json.end_array();
}

bool is_stuck(const ThreadInfo& thread, std::uint64_t stuck_ns) {
  return !thread.open_scopes.empty() && thread.open_scopes.back().open_ns > stuck_ns;
}

std::vector<const ThreadInfo*> stuck_first(const Snapshot& snapshot, std::uint64_t stuck_ns) {
  std::vector<const ThreadInfo*> threads;
  for (const ThreadInfo& thread : snapshot.threads) {
    threads.push_back(&thread);
  }
  const auto key = [&](const ThreadInfo* thread) {
    const bool stuck = is_stuck(*thread, stuck_ns);
    // Stuck first, longest open first; then by index.
    return std::make_tuple(!stuck, stuck ? UINT64_MAX - thread->open_scopes.back().open_ns : 0,
                           thread->index);
  };
  std::sort(threads.begin(), threads.end(),
            [&](const ThreadInfo* a, const ThreadInfo* b) { return key(a) < key(b); });
  return threads;
}

void walk_trace(const Snapshot& snapshot, const std::function<void(const TraceStep&)>& visit) {
  struct ThreadState {
    const ThreadInfo* info;
    std::vector<std::uint32_t> open;
    std::uint64_t previous_ns;
  };
  std::unordered_map<std::uint32_t, ThreadState> threads;
  for (const auto* list : {&snapshot.threads, &snapshot.trace_threads}) {
    for (const ThreadInfo& thread : *list) {
      threads.emplace(thread.index, ThreadState{&thread, {}, snapshot.trace_start_ns});
    }
  }
  for (const TraceEvent& event : snapshot.trace) {
    auto found = threads.find(event.thread);
    if (found == threads.end()) {
      continue;
    }
    ThreadState& state = found->second;
    if (closes_slice(event.kind) && state.open.empty()) {
      continue;
    }
    visit(TraceStep{event, *state.info, state.open, state.previous_ns});
    state.previous_ns = event.ns;
    if (opens_slice(event.kind)) {
      state.open.push_back(event.name);
    } else if (closes_slice(event.kind)) {
      state.open.pop_back();
    }
  }
}

std::map<ThreadStack, std::uint64_t> self_time_by_stack(const Snapshot& snapshot) {
  std::map<ThreadStack, std::uint64_t> self_ns;
  const auto lock_offset = static_cast<std::uint32_t>(snapshot.names.size());
  walk_trace(snapshot, [&](const TraceStep& step) {
    const TraceEvent& event = step.event;
    if (event.ns <= step.previous_ns) {
      return;
    }
    // A lock wait ends at its event: its part of the time since the thread's previous event is a
    // frame of its own inside the open scopes (nothing is recorded on a thread while it waits).
    std::uint64_t wait_start = event.ns;
    if (event.kind == EventKind::LockWait) {
      const auto waited = static_cast<std::uint64_t>(std::max<std::int64_t>(event.value, 0));
      wait_start = event.ns - std::min(waited, event.ns - step.previous_ns);
      std::vector<std::uint32_t> waiting = step.open;
      waiting.push_back(event.name + lock_offset);
      self_ns[ThreadStack(step.thread.index, std::move(waiting))] += event.ns - wait_start;
    }
    if (!step.open.empty() && wait_start > step.previous_ns) {
      self_ns[ThreadStack(step.thread.index, step.open)] += wait_start - step.previous_ns;
    }
  });
  return self_ns;
}

std::string stack_frame_name(const Snapshot& snapshot, std::uint32_t frame) {
  const std::size_t names = snapshot.names.size();
  return frame < names ? snapshot.names.at(frame)
                       : lock_wait_frame(snapshot.names.at(frame - names));
}

std::uint64_t instruction_address(const CpuFrame& frame, bool innermost_native) {
  return innermost_native || frame.address == 0 ? frame.address : frame.address - 1;
}

CpuAddresses cpu_addresses(const CpuProfile& cpu) {
  CpuAddresses found;
  for (const CpuStack& stack : cpu.stacks) {
    bool innermost_native = true;
    for (const CpuFrame& frame : stack.frames) {
      if (!frame.is_scope()) {
        const std::uint64_t address = instruction_address(frame, innermost_native);
        innermost_native = false;
        if (found.index.try_emplace(address, found.addresses.size()).second) {
          found.addresses.push_back(address);
        }
      }
    }
  }
  return found;
}

std::string deadlocks_text(const std::vector<Deadlock>& deadlocks, std::string_view indent) {
  std::string text;
  for (const Deadlock& deadlock : deadlocks) {
    text::append(text, indent, "deadlock: ");
    for (std::size_t i = 0; i < deadlock.cycle.size(); ++i) {
      const Deadlock::Link& link = deadlock.cycle[i];
      text::append(text, i == 0 ? "" : " → ", link.waiter.thread, " waits for ", link.lock,
                   " (held by ", link.holder.thread, " for ",
                   human_duration(static_cast<double>(link.holder.for_ns)), ")");
    }
    text += '\n';
    for (const Deadlock::Link& link : deadlock.cycle) {
      std::string scopes;
      for (const std::string& scope : link.waiter_scopes) {
        text::append(scopes, scopes.empty() ? "" : " > ", scope);
      }
      text::append(text, indent, "  ", link.waiter.thread, " in ",
                   scopes.empty() ? "(no scope open)" : scopes, "\n");
    }
  }
  return text;
}

std::string lock_wait_frame(std::string_view lock) {
  return text::cat("wait for ", lock);
}

} // namespace hotscope::exporters::detail
