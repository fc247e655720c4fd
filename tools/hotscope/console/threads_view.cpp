// Tab 2: each measured thread, its CPU and records over the interval, and the scopes it is
// inside now, innermost last; an unmodified program's threads with their CPU and state only. A
// thread inside one scope longer than the threshold is stuck: a hang or a deadlock shows itself
// here, and a deadlock on locks the agent sees is named in a banner above them (docs/locks.md,
// "Deadlocks").
#include "export/export.hpp"
#include "model.hpp"
#include "text.hpp"
#include "view.hpp"

#include <fmt/format.h>

namespace hotscope::cli::console {
namespace {

constexpr const char* kNotApplicable = "n/a";

std::string inside(const ThreadRow& row) {
  if (row.os_only) {
    return kNotApplicable;
  }
  if (row.open_scopes.empty()) {
    return "-";
  }
  std::string text = row.stuck ? "STUCK " : "";
  text += fmt::format("{} in: ", duration(static_cast<double>(row.open_scopes.back().open_ns)));
  for (std::size_t i = 0; i < row.open_scopes.size(); ++i) {
    text += (i > 0 ? " > " : "") + row.open_scopes[i].name;
  }
  return text;
}

// The one entry older exited threads are merged into (docs/architecture.md, "The Aggregator"):
// no thread id of its own.
bool merged_row(const ThreadRow& row) {
  return row.exited && row.tid == 0;
}

std::string cpu(const std::optional<double>& value) {
  return value ? percent(*value) : "-";
}

} // namespace

Page threads_page(const Model& model, ViewState& state, std::size_t width) {
  Page page;
  const std::vector<ThreadRow>& threads = model.threads();
  if (model.threads_unsupported()) {
    page.fixed.push_back(Line{" this process's agent has no /v1/threads (an older hotscope): "
                              "open scopes and stuck threads are not shown",
                              Style::Alert});
  } else {
    page.fixed = deadlock_banner(model.deadlocks());
    std::size_t stuck = 0;
    std::size_t merged = 0;
    for (const ThreadRow& row : threads) {
      stuck += row.stuck ? 1 : 0;
      merged += merged_row(row) ? 1 : 0;
    }
    page.fixed.push_back(
        Line{fmt::format(" {} threads, {} stuck (inside one scope longer than {}); CPU and records "
                         "over the last interval",
                         threads.size() - merged, stuck,
                         duration(static_cast<double>(model.stuck_threshold_ns()))),
             stuck > 0 ? Style::Alert : Style::Dim});
    if (model.stats().unmodified_program) {
      page.fixed.push_back(Line{std::string(" ") + exporters::kUnmodifiedProgram, Style::Dim});
    }
  }
  std::vector<Cells> table{
      {"Thread", "TID", "State", "User", "Sys", "Records/s", "Dropped", "Inside now"}};
  for (const ThreadRow& row : threads) {
    table.push_back({row.name.empty() ? fmt::format("thread {}", row.tid) : row.name,
                     merged_row(row) ? "-" : fmt::format("{}", row.tid),
                     row.exited ? "exited" : row.state, cpu(row.user_percent),
                     cpu(row.system_percent),
                     row.os_only ? kNotApplicable : per_second(row.records_rate),
                     row.os_only ? kNotApplicable : fmt::format("{}", row.dropped), inside(row)});
  }
  // The last column is left-aligned text: pad it by hand after aligning the others.
  std::vector<Cells> numbers = table;
  for (Cells& cells : numbers) {
    cells.pop_back();
  }
  const std::vector<std::string> lines = align(numbers, width > 0 ? 24 : 0, Glyphs{});
  page.fixed.push_back(Line{lines[0] + "  " + table[0].back(), Style::Heading});
  for (std::size_t i = 0; i < threads.size(); ++i) {
    page.rows.push_back(Line{lines[i + 1] + "  " + table[i + 1].back(),
                             threads[i].stuck ? Style::Alert : Style::Normal});
    page.keys.push_back(fmt::format("{}", threads[i].tid));
  }
  if (threads.empty()) {
    page.rows.push_back(Line{" no thread has recorded anything yet", Style::Dim});
  }
  select_row(page, state);
  return page;
}

} // namespace hotscope::cli::console
