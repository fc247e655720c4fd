// `hotscope threads`: the deadlocks standing, then one block per thread, its open scopes as an
// indented stack with how long each has been open, stuck threads first. An unmodified program's
// threads have their state and CPU time only.
#include "export/common.hpp"
#include "export/export.hpp"
#include "text/text.hpp"

#include <algorithm>
#include <ostream>

namespace hotscope::exporters {
namespace {

std::string duration(std::uint64_t ns) {
  return detail::human_duration(static_cast<double>(ns));
}

} // namespace

void write_threads_text(const Snapshot& snapshot, std::uint64_t stuck_ns, std::ostream& out) {
  const std::vector<const ThreadInfo*> threads = detail::stuck_first(snapshot, stuck_ns);
  const auto stuck = std::count_if(threads.begin(), threads.end(), [&](const ThreadInfo* thread) {
    return detail::is_stuck(*thread, stuck_ns);
  });
  out << text::cat("hotscope ", snapshot.hotscope_version, ": ", detail::process_label(snapshot),
                   " (pid ", snapshot.pid, "), ", duration(snapshot.duration_ns),
                   " into the window\n");
  out << text::cat(stuck, " of ", threads.size(),
                   " threads stuck (innermost scope open longer than ", duration(stuck_ns), ")\n");
  if (snapshot.unmodified_program) {
    out << kUnmodifiedProgram << '\n';
  }
  if (!snapshot.deadlocks.empty()) {
    out << '\n' << detail::deadlocks_text(snapshot.deadlocks, "");
  }
  for (const ThreadInfo* thread : threads) {
    out << '\n' << detail::thread_heading(*thread);
    if (detail::is_stuck(*thread, stuck_ns)) {
      out << text::cat(" STUCK for ", duration(thread->open_scopes.back().open_ns), " in ",
                       thread->open_scopes.back().name);
    }
    out << '\n';
    if (!thread->os.state.empty()) {
      const OsThreadFigures& os = thread->os;
      out << text::cat("state ", os.state, ", CPU ", duration(os.cpu_user_ns), " user + ",
                       duration(os.cpu_system_ns), " system, context switches ",
                       os.voluntary_switches, " voluntary + ", os.involuntary_switches,
                       " involuntary\n");
    }
    if (thread->os_only) {
      continue; // no records, no scopes
    }
    out << text::cat("records: ", detail::records_summary(thread->records), "\n");
    if (thread->open_scopes.empty()) {
      out << "(no scope open)\n";
    }
    std::size_t depth = 0;
    for (const OpenScope& scope : thread->open_scopes) {
      const std::string where =
          scope.file.empty() ? "" : text::cat(" (", scope.file, ":", scope.line, ")");
      out << std::string(2 * depth++, ' ') << scope.name << where << "  open "
          << duration(scope.open_ns) << '\n';
    }
  }
}

} // namespace hotscope::exporters
