#include "input.hpp"

#include <curses.h>
#include <fmt/format.h>

#include <algorithm>
#include <optional>

namespace hotscope::cli::console {
namespace {

constexpr int kEscape = 27;
constexpr int kPageRows = 10;

bool is_enter(int key) {
  return key == '\n' || key == '\r' || key == KEY_ENTER;
}
bool is_backspace(int key) {
  return key == KEY_BACKSPACE || key == 127 || key == 8;
}

Action edit_filter(int key, UiState& ui) {
  std::string& filter = ui.view.filter;
  if (is_enter(key)) {
    ui.prompt = Prompt::None;
  } else if (key == kEscape) {
    filter.clear();
    ui.prompt = Prompt::None;
  } else if (is_backspace(key)) {
    if (!filter.empty()) {
      filter.pop_back();
    }
  } else if (key >= ' ' && key < 127) {
    filter += static_cast<char>(key);
  }
  return Action::None;
}

// `selection` becomes the key of the row `delta` rows from the selected one.
void move_selection(std::string& selection, const Page& page, int delta) {
  if (page.keys.empty()) {
    return;
  }
  const int last = static_cast<int>(page.keys.size()) - 1;
  const int row = std::clamp(std::max(page.selected, 0) + delta, 0, last);
  selection = page.keys[static_cast<std::size_t>(row)];
}

// The rows an arrow, page or Home/End key moves by, in a page of `rows` rows.
std::optional<int> step_of(int key, int rows) {
  switch (key) {
  case KEY_UP:
    return -1;
  case KEY_DOWN:
    return 1;
  case KEY_PPAGE:
    return -kPageRows;
  case KEY_NPAGE:
    return kPageRows;
  case KEY_HOME:
    return -rows;
  case KEY_END:
    return rows;
  default:
    return std::nullopt;
  }
}

void switch_tab(UiState& ui, int tab) {
  ui.view.tab = static_cast<Tab>((tab + kTabCount) % kTabCount);
  ui.help = false;
}

// Sorting by the same column again turns the order around; names sort A to Z first.
void sort_by(ViewState& view, Column column) {
  if (view.sort == column) {
    view.descending = !view.descending;
  } else {
    view.sort = column;
    view.descending = column != Column::Name;
  }
}

// The keys every tab has; nullopt when `key` is not one of them.
std::optional<Action> any_tab_key(int key, UiState& ui, const Page& page) {
  ViewState& view = ui.view;
  const int tab = static_cast<int>(view.tab);
  if (key >= '1' && key < '1' + kTabCount) {
    switch_tab(ui, key - '1');
    return Action::Refresh;
  }
  switch (key) {
  case 'q':
  case 'Q':
    return Action::Quit;
  case '?':
    ui.help = !ui.help;
    return Action::None;
  case '\t':
    switch_tab(ui, tab + 1);
    return Action::Refresh;
  case KEY_BTAB:
    switch_tab(ui, tab - 1);
    return Action::Refresh;
  case 'p':
    ui.paused = !ui.paused;
    return Action::None;
  case 'r':
    ui.prompt = Prompt::ConfirmReset;
    return Action::None;
  case 's':
    return Action::Snapshot;
  case kEscape:
    ui.help = false;
    view.detail = false;
    view.focus = DetailFocus::Functions;
    return Action::None;
  default:
    break;
  }
  if (const std::optional<int> step = step_of(key, static_cast<int>(page.keys.size()))) {
    move_selection(view.selection(), page, *step);
    return Action::None;
  }
  return std::nullopt;
}

// The keys of the kept calls' list and of a kept call's tree; nullopt for the other keys.
std::optional<Action> kept_call_key(int key, UiState& ui, const Page& page) {
  ViewState& view = ui.view;
  const bool tree = view.focus == DetailFocus::Tree;
  if (is_backspace(key) || key == KEY_LEFT) {
    view.focus = tree ? DetailFocus::KeptCalls : DetailFocus::Functions;
    return Action::None;
  }
  if (is_enter(key) && !tree && page.selected >= 0 && !page.keys.empty()) {
    view.kept_call = page.keys[static_cast<std::size_t>(page.selected)];
    view.tree_line = 0;
    view.focus = DetailFocus::Tree;
    return Action::None;
  }
  const int rows = static_cast<int>(tree ? page.rows.size() : page.keys.size());
  if (const std::optional<int> step = step_of(key, rows)) {
    if (tree) {
      view.tree_line = static_cast<std::size_t>(
          std::clamp(static_cast<int>(view.tree_line) + *step, 0, std::max(rows - 1, 0)));
    } else {
      move_selection(view.kept_call, page, *step);
    }
    return Action::None;
  }
  return is_enter(key) ? std::optional(Action::None) : std::nullopt;
}

Action functions_key(int key, UiState& ui, const Page& page) {
  ViewState& view = ui.view;
  if (key == '/') {
    ui.prompt = Prompt::Filter;
    return Action::None;
  }
  if (is_enter(key) && view.detail && page.detail_list) {
    view.focus = DetailFocus::KeptCalls;
    view.kept_call.clear();
    return Action::None;
  }
  if (is_enter(key)) {
    view.detail = !view.detail;
    view.focus = DetailFocus::Functions;
    return view.detail ? Action::Refresh : Action::None;
  }
  if (key == '<' || key == '>') {
    const int next = static_cast<int>(view.sort) + (key == '>' ? 1 : -1);
    view.sort = static_cast<Column>((next + kColumnCount) % kColumnCount);
    view.descending = view.sort != Column::Name;
    return Action::None;
  }
  if (const std::optional<Column> column = column_of_key(key)) {
    sort_by(view, *column);
  }
  return Action::None;
}

Action flame_key(int key, UiState& ui, const Page& page) {
  ViewState& view = ui.view;
  if (is_enter(key) && page.selected >= 0) {
    view.flame_zoom.push_back(page.keys[static_cast<std::size_t>(page.selected)]);
    view.selection().clear();
  } else if ((is_backspace(key) || key == KEY_LEFT) && !view.flame_zoom.empty()) {
    view.selection() = view.flame_zoom.back();
    view.flame_zoom.pop_back();
  } else if (key == 'c') {
    view.flame_cpu = !view.flame_cpu;
    return Action::Refresh;
  }
  return Action::None;
}

} // namespace

Action handle_key(int key, UiState& ui, const Page& page) {
  if (ui.prompt == Prompt::Filter) {
    return edit_filter(key, ui);
  }
  if (ui.prompt == Prompt::ConfirmReset) {
    ui.prompt = Prompt::None;
    ui.message = key == 'y' || key == 'Y' ? "" : "reset cancelled";
    return key == 'y' || key == 'Y' ? Action::Reset : Action::None;
  }
  const ViewState& view = ui.view;
  if (view.tab == Tab::Functions && view.detail && view.focus != DetailFocus::Functions) {
    if (const std::optional<Action> action = kept_call_key(key, ui, page)) {
      return *action;
    }
  }
  if (const std::optional<Action> action = any_tab_key(key, ui, page)) {
    return *action;
  }
  switch (ui.view.tab) {
  case Tab::Functions:
    return functions_key(key, ui, page);
  case Tab::Flame:
    return flame_key(key, ui, page);
  default:
    return Action::None;
  }
}

std::vector<std::string> help_lines() {
  std::vector<std::string> lines{
      " Keys (any tab)",
      fmt::format("   {}, Tab, Shift-Tab   switch tab ({})", tab_keys(), tab_names(" ")),
      "   Up Down PgUp PgDn Home End   move the selection",
      "   p   pause / resume the refresh",
      "   r   reset the measuring window (asks first)",
      "   s   save a snapshot: stats.json, report.txt, trace.json, trace.folded, heap.json",
      "   ?   this help;  Esc  close the help or the detail pane;  q  quit",
      "",
      " Functions tab",
      "   /   filter by a part of the name (Enter keeps it, Esc clears it)",
      "   Enter   the selected function's detail pane; in it, Enter lists the function's kept",
      "           slowest calls, Enter on one shows its tree, Backspace or Left goes back",
      "   < >   sort by the previous / next column; a column's key sorts by it (again: reverse)",
  };
  std::string keys = "  ";
  for (int column = 0; column < kColumnCount; ++column) {
    const auto c = static_cast<Column>(column);
    keys += fmt::format("  {} {}", column_key(c), column_heading(c));
  }
  lines.push_back(keys);
  lines.insert(lines.end(),
               {"", " Flame tab",
                "   Enter   zoom into the selected frame;  Backspace, Left  zoom out",
                "   c   CPU time (the CPU sampler's stacks) / wall time in scopes (the trace)"});
  return lines;
}

} // namespace hotscope::cli::console
