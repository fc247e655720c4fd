// `hotscope threads`: one block per thread, its open scopes as an indented stack with how long
// each has been open, stuck threads first.
#include "export/common.hpp"
#include "export/export.hpp"

#include <fmt/format.h>

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
  out << fmt::format("hotscope {}: {} (pid {}), {} into the window\n", snapshot.hotscope_version,
                     detail::process_label(snapshot), snapshot.pid, duration(snapshot.duration_ns));
  out << fmt::format("{} of {} threads stuck (innermost scope open longer than {})\n", stuck,
                     threads.size(), duration(stuck_ns));
  for (const ThreadInfo* thread : threads) {
    out << '\n' << detail::thread_heading(*thread);
    if (detail::is_stuck(*thread, stuck_ns)) {
      out << fmt::format(" STUCK for {} in {}", duration(thread->open_scopes.back().open_ns),
                         thread->open_scopes.back().name);
    }
    out << '\n';
    if (!thread->os.state.empty()) {
      const OsThreadFigures& os = thread->os;
      out << fmt::format("state {}, CPU {} user + {} system, context switches {} voluntary + {} "
                         "involuntary\n",
                         os.state, duration(os.cpu_user_ns), duration(os.cpu_system_ns),
                         os.voluntary_switches, os.involuntary_switches);
    }
    out << fmt::format("records: {}\n", detail::records_summary(thread->records));
    if (thread->open_scopes.empty()) {
      out << "(no scope open)\n";
    }
    std::size_t depth = 0;
    for (const OpenScope& scope : thread->open_scopes) {
      const std::string where =
          scope.file.empty() ? "" : fmt::format(" ({}:{})", scope.file, scope.line);
      out << fmt::format("{:{}}{}{}  open {}\n", "", 2 * depth++, scope.name, where,
                         duration(scope.open_ns));
    }
  }
}

} // namespace hotscope::exporters
