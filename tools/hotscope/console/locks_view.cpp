// Tab 8: the process's locks (docs/locks.md, "Reading contention"): the deadlocks standing now
// first, then each lock's acquisitions, contention, waits and holds, who holds it and who waits
// now, then the lock-order inversions; the same cells as `hotscope locks` (locks_text.cpp).
#include "locks_text.hpp"
#include "model.hpp"
#include "text.hpp"
#include "view.hpp"

#include <fmt/format.h>

namespace hotscope::cli::console {

std::vector<Line> deadlock_banner(const std::vector<profiles::Deadlock>& deadlocks) {
  std::vector<Line> lines;
  for (const profiles::Deadlock& deadlock : deadlocks) {
    for (const std::string& line : deadlock_lines(deadlock)) {
      lines.push_back(Line{" " + line, Style::Alert});
    }
  }
  return lines;
}

Page locks_page(const Model& model, ViewState& state, std::size_t width) {
  Page page;
  const profiles::LockReport& report = model.stats().locks;
  if (!report.locks) {
    page.fixed.push_back(
        Line{" this process's agent reports no locks (an older hotscope)", Style::Alert});
    return page;
  }
  page.fixed = deadlock_banner(report.deadlocks);
  for (const profiles::LockInversion& inversion : report.inversions) {
    page.fixed.push_back(Line{" " + inversion_lines(inversion, false).front() +
                                  " (hotscope locks --inversions: where)",
                              Style::Alert});
  }
  if (report.locks->empty()) {
    if (model.stats().unmodified_program) {
      page.fixed.push_back(unmodified_program_line("named locks"));
    }
    page.fixed.push_back(Line{" no lock recorded: HOTSCOPE_LOCKABLE names a lock; HOTSCOPE_LOCKS=1 "
                              "(or `hotscope run --locks`) records the pthread locks",
                              Style::Dim});
    return page;
  }
  page.fixed.push_back(
      Line{fmt::format(" locks: {}, deadlocks found in all: {}; waits and holds over "
                       "the window, holders and waiters now",
                       report.locks->size(), report.figures.deadlocks_found),
           Style::Dim});
  const std::vector<std::string> lines =
      align(lock_table(*report.locks), width > 0 ? 24 : 0, Glyphs{});
  page.fixed.push_back(Line{lines[0], Style::Heading});
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const profiles::LockStats& lock = (*report.locks)[i - 1];
    page.rows.push_back(Line{lines[i], lock.waiters.empty() ? Style::Normal : Style::Alert});
    page.keys.push_back(lock.name + '\t' + lock.address);
  }
  select_row(page, state);
  return page;
}

} // namespace hotscope::cli::console
