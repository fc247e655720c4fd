// The indented text tree of the trace window, one line per event, grouped by thread.
#include "export/common.hpp"
#include "export/export.hpp"
#include "text/text.hpp"

#include <ostream>
#include <unordered_map>

namespace hotscope::exporters {

// One line per event; every text output of events renders them here (trace.txt, slow.txt).
std::string detail::trace_event_line(const Snapshot& snapshot, const TraceEvent& event,
                                     const std::vector<std::uint32_t>& open, std::uint64_t ns) {
  std::size_t depth = open.size();
  std::string_view mark;
  std::string text;
  switch (event.kind) {
  case EventKind::Begin:
    mark = ">";
    text = snapshot.names.at(event.name);
    break;
  case EventKind::End:
    depth -= 1; // an exit lines up with its enter
    mark = "<";
    text = snapshot.names.at(open.back());
    break;
  case EventKind::TaskResume:
    mark = ">";
    text = text::cat(snapshot.names.at(event.name), " (task ",
                     static_cast<std::uint64_t>(event.value), " runs)");
    break;
  case EventKind::TaskSuspend:
  case EventKind::TaskComplete:
    depth -= 1;
    mark = "<";
    text = text::cat(snapshot.names.at(open.back()), " (task ",
                     static_cast<std::uint64_t>(event.value), " ",
                     event.kind == EventKind::TaskSuspend ? "waits" : "ends", ")");
    break;
  case EventKind::Message:
    mark = "-";
    text = snapshot.names.at(event.name);
    break;
  case EventKind::Counter:
    mark = "#";
    text = text::cat(snapshot.names.at(event.name), " = ", event.value);
    break;
  case EventKind::QueuePush:
  case EventKind::QueuePop:
    mark = event.kind == EventKind::QueuePush ? "→" : "←";
    text = text::cat(snapshot.names.at(event.name), " #", static_cast<std::uint64_t>(event.value));
    break;
  case EventKind::LockWait:
    mark = "~";
    text = text::cat("waited ", detail::fixed3(static_cast<std::uint64_t>(event.value), 1'000'000),
                     " ms for ", snapshot.names.at(event.name));
    break;
  case EventKind::LockHandoff:
    mark = "-";
    text = text::cat("let a waiter take ", snapshot.names.at(event.name));
    break;
  case EventKind::LockAcquired:
    mark = "-";
    text = text::cat("took ", snapshot.names.at(event.name));
    break;
  }
  return text::cat('[', text::pad_right(detail::fixed3(ns, 1'000'000) + "ms", 9), "] ",
                   std::string(depth * 2, ' '), mark, ' ', text, '\n');
}

void write_text_tree(const Snapshot& snapshot, std::ostream& out) {
  for (const GuestImage& image : snapshot.guest_images) { // what ran, first
    out << detail::guest_image_summary(image) << "\n";
  }
  out << text::cat("hotscope ", snapshot.hotscope_version, ": ", detail::process_label(snapshot),
                   " (pid ", snapshot.pid, "), ", detail::fixed3(snapshot.duration_ns, 1'000'000),
                   "ms measured\n");
  out << text::cat("clock: ", detail::clock_summary(snapshot.clock), "\n");
  out << text::cat("records: ", detail::records_summary(snapshot.records), "\n");
  out << text::cat("trace window: from ", detail::fixed3(snapshot.trace_start_ns, 1'000'000),
                   "ms, ", snapshot.trace.size(), " events, evicted=", snapshot.trace_evicted,
                   " open_scopes=", snapshot.trace_open_scopes, "\n");

  // The walk is in global time order; collect each thread's lines, print them thread by thread.
  std::unordered_map<const ThreadInfo*, std::string> listings;
  detail::walk_trace(snapshot, [&](const detail::TraceStep& step) {
    listings[&step.thread] +=
        detail::trace_event_line(snapshot, step.event, step.open, step.event.ns);
  });

  for (const ThreadInfo& thread : snapshot.threads) {
    out << '\n' << detail::thread_heading(thread) << '\n';
    auto listing = listings.find(&thread);
    out << (listing == listings.end() ? "(no events in the trace window)\n" : listing->second);
  }
  // Merged exited threads: only those with events left in the window.
  for (const ThreadInfo& thread : snapshot.trace_threads) {
    if (auto listing = listings.find(&thread); listing != listings.end()) {
      out << '\n' << detail::thread_heading(thread) << '\n' << listing->second;
    }
  }
}

} // namespace hotscope::exporters
