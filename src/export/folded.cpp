// Folded stacks: each line is one stack, root first, and its count. From the trace window
// (trace.folded), the self time in ns spent in each stack of scopes; process and thread lead
// every stack so lines always have >= 2 frames, which Perfetto's sniffer needs. From the CPU
// samples (cpu.folded), the samples of each stack of native frames and scopes.
#include "export/common.hpp"
#include "export/export.hpp"
#include "objects/objects.hpp"
#include "text/text.hpp"

#include <algorithm>
#include <map>
#include <ostream>
#include <unordered_map>

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
    for (const std::uint32_t open_frame : open) {
      stack += ';';
      stack += frame(detail::stack_frame_name(snapshot, open_frame));
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

void write_cpu_folded(const Snapshot& snapshot, std::ostream& out) {
  const CpuProfile& cpu = snapshot.cpu;
  // Each native address named once, all in one call to the symbolizer.
  const detail::CpuAddresses found = detail::cpu_addresses(cpu);
  const std::vector<std::vector<std::string>> native_names =
      objects::native_frame_names(found.addresses, objects::code_mappings());
  std::map<std::string, std::uint64_t> samples; // sorted; stacks that read alike add up
  std::vector<const std::string*> names;        // innermost first
  std::vector<const std::string*> scopes;       // those of the next native frame, innermost first
  for (const CpuStack& stack : cpu.stacks) {
    names.clear();
    bool innermost_native = true;
    for (const CpuFrame& cpu_frame : stack.frames) {
      if (cpu_frame.is_scope()) {
        scopes.push_back(&cpu.scopes.at(static_cast<std::size_t>(cpu_frame.scope)).name);
        continue;
      }
      const std::uint64_t address = detail::instruction_address(cpu_frame, innermost_native);
      innermost_native = false;
      // A scope in a frame whose code was inlined from several functions sits right inside the
      // outermost of them, the one the frame belongs to.
      const std::vector<std::string>& inlined = native_names[found.index.at(address)];
      for (auto name = inlined.rbegin(); name + 1 != inlined.rend(); ++name) {
        names.push_back(&*name);
      }
      names.insert(names.end(), scopes.begin(), scopes.end());
      scopes.clear();
      names.push_back(&inlined.front());
    }
    names.insert(names.end(), scopes.begin(), scopes.end()); // their frame was not unwound
    scopes.clear();
    std::string line;
    for (auto name = names.rbegin(); name != names.rend(); ++name) { // root first
      line += (line.empty() ? "" : ";") + frame(**name);
    }
    samples[line.empty() ? "[unknown]" : line] += stack.samples;
  }
  for (const auto& [stack, count] : samples) {
    out << stack << ' ' << count << '\n';
  }
}

} // namespace hotscope::exporters
