// Tab 5: the process's tasks, coroutines (HOTSCOPE_TASK) and Asio operations: how many are alive,
// created and resumed per second, how long their running slices, waits and lives are (the `tasks`
// array of the statistics, docs/formats-output.md).
#include "model.hpp"
#include "text.hpp"
#include "view.hpp"

#include <fmt/format.h>

namespace hotscope::cli::console {

Page tasks_page(const Model& model) {
  Page page;
  if (!model.stats().tasks) {
    page.fixed.push_back(
        Line{" this process's agent reports no tasks (an older hotscope)", Style::Alert});
    return page;
  }
  const std::vector<TaskRow>& tasks = model.tasks();
  if (tasks.empty() && model.stats().unmodified_program) {
    page.fixed.push_back(unmodified_program_line("tasks"));
    return page;
  }
  if (tasks.empty()) {
    page.fixed.push_back(Line{" no task in this process: HOTSCOPE_TASK(name) in a coroutine whose "
                              "promise derives from hotscope::TaskPromise, or Asio built with "
                              "hotscope/asio_handler_tracking.hpp, reports them",
                              Style::Dim});
    return page;
  }
  page.fixed.push_back(Line{" rates over the last interval; run = one running slice, wait = a "
                            "finished task's time not running (Asio: the operation's latency)",
                            Style::Dim});
  std::vector<Cells> table{{"Task", "Kind", "Alive", "New/s", "Resumes/s", "Run p50", "p99",
                            "Wait p50", "p99", "Life p99", "Unfinished"}};
  for (const TaskRow& t : tasks) {
    const auto ns = [](std::uint64_t value) { return duration(static_cast<double>(value)); };
    table.push_back({t.name, t.kind, fmt::format("{}", t.alive), per_second(t.created_rate),
                     per_second(t.resume_rate), ns(t.running_p50_ns), ns(t.running_p99_ns),
                     ns(t.waiting_p50_ns), ns(t.waiting_p99_ns), ns(t.lifetime_p99_ns),
                     fmt::format("{}", t.destroyed_unfinished)});
  }
  const std::vector<std::string> lines = align(table, 0, Glyphs{});
  page.fixed.push_back(Line{lines[0], Style::Heading});
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const bool unfinished = tasks[i - 1].destroyed_unfinished > 0;
    page.rows.push_back(Line{lines[i], unfinished ? Style::Alert : Style::Normal});
  }
  return page;
}

} // namespace hotscope::cli::console
