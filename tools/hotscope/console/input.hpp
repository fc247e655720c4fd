// What the keys do (docs/console.md lists them): tabs, sorting, the filter, the selection, the
// detail pane, the flame's zoom, pause, help, and the actions the session carries out.
#pragma once

#include "view.hpp"

#include <string>
#include <vector>

namespace hotscope::cli::console {

enum class Prompt { None, Filter, ConfirmReset };

struct UiState {
  ViewState view;
  bool paused = false;
  bool help = false;
  Prompt prompt = Prompt::None;
  std::string message; // the status line's last message
};

enum class Action {
  None,     // nothing to do but redraw
  Refresh,  // ask the agent now (another tab needs other data)
  Reset,    // the user confirmed a reset of the measuring window
  Snapshot, // save the reports
  Quit,
};

// Applies `key` (an ncurses key code) to `ui`; `page` is what is on screen.
Action handle_key(int key, UiState& ui, const Page& page);

// The help screen's lines.
std::vector<std::string> help_lines();

} // namespace hotscope::cli::console
