// The process picker: `hotscope list`'s table, one row per process, Up/Down and Enter.
#include "session.hpp"

#include "../agent_commands.hpp"
#include "input.hpp"

#include <curses.h>
#include <fmt/format.h>

namespace hotscope::cli::console {

std::optional<AgentProcess> pick(Screen& screen, const std::vector<AgentProcess>& agents) {
  UiState ui;
  Page page;
  const std::vector<std::string> lines = process_table(agents);
  page.fixed.push_back(Line{" " + lines.front(), Style::Heading});
  for (std::size_t i = 0; i < agents.size(); ++i) {
    page.rows.push_back(Line{" " + lines[i + 1]});
    page.keys.push_back(fmt::format("{}", agents[i].pid));
  }
  for (;;) {
    select_row(page, ui.view);
    screen.draw(Frame{" hotscope console: choose the process to watch", ui.view.tab, &page, nullptr,
                      " Up Down choose  Enter watch  q quit", false, false});
    const int key = screen.read_key(-1);
    if (key == 'q' || key == 'Q' || key == 27) {
      return std::nullopt;
    }
    if (key == '\n' || key == '\r' || key == KEY_ENTER) {
      return agents[static_cast<std::size_t>(page.selected)];
    }
    if (key == KEY_UP || key == KEY_DOWN) {
      handle_key(key, ui, page);
    }
  }
}

} // namespace hotscope::cli::console
