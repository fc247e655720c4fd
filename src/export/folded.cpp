// Folded stacks from the trace window: each line is one stack, root first, with the self time
// in ns spent in it. Process and thread lead every stack so lines always have >= 2 frames,
// which Perfetto's sniffer needs.
#include "export/common.hpp"
#include "export/export.hpp"
#include "text/text.hpp"

#include <algorithm>
#include <map>
#include <ostream>

namespace hotscope::exporters {
namespace {

// ';' separates frames and a line break ends the stack, so neither may appear inside a frame.
// flamegraph.pl and inferno also read "stack 2 500" as a differential count pair, so a frame
// must not end in " <digits>" (a scope named "phase 2", say): that space becomes '_', in every
// frame alike so the scope stays one frame whether or not it is the leaf.
std::string frame(std::string_view name) {
  std::string text(name);
  std::replace_if(
      text.begin(), text.end(), [](char c) { return c == ';' || c == '\n' || c == '\r'; }, ':');
  const auto last_other = text.find_last_not_of("0123456789");
  if (last_other != std::string::npos && last_other + 1 < text.size() && text[last_other] == ' ') {
    text[last_other] = '_';
  }
  return text;
}

} // namespace

void write_folded(const Snapshot& snapshot, std::ostream& out) {
  const std::string process = frame(detail::process_label(snapshot));
  std::map<std::uint32_t, const ThreadInfo*> threads;
  for (const auto* list : {&snapshot.threads, &snapshot.trace_threads}) {
    for (const ThreadInfo& thread : *list) {
      threads[thread.index] = &thread;
    }
  }
  std::map<std::string, std::uint64_t> self_ns; // sorted, so the output is deterministic
  for (const auto& [thread_stack, ns] : detail::self_time_by_stack(snapshot)) {
    const auto& [index, open] = thread_stack;
    const ThreadInfo& thread = *threads.at(index);
    std::string stack =
        process + ';' +
        frame(thread.name.empty() ? text::cat("thread-", thread.os_tid) : thread.name);
    for (std::uint32_t name : open) {
      stack += ';';
      stack += frame(snapshot.names.at(name));
    }
    self_ns[stack] += ns;
  }

  for (const auto& [stack, ns] : self_ns) {
    out << stack << ' ' << ns << '\n';
  }
  // Comments go last: Perfetto recognises the format from the first lines, and flamegraph.pl
  // and speedscope skip lines that are not stacks.
  out << text::cat("# hotscope ", snapshot.hotscope_version, " clock=", snapshot.clock.source,
                   " records ", detail::records_summary(snapshot.records), "\n");
  out << text::cat("# trace window from ", snapshot.trace_start_ns,
                   " ns: evicted=", snapshot.trace_evicted,
                   " open_scopes=", snapshot.trace_open_scopes, "\n");
}

} // namespace hotscope::exporters
