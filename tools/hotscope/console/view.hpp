// What a tab shows: lines of text with a style, built from the model. The screen (screen.cpp)
// draws them with ncurses and `--once` prints them, so both show the same figures.
#pragma once

#include <array>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hotscope::cli::profiles {
struct Deadlock;
} // namespace hotscope::cli::profiles

namespace hotscope::cli::console {

class Model;

// How a line is drawn; the selected row is drawn reversed on top of its style.
enum class Style { Normal, Heading, Alert, Dim };

struct Line {
  std::string text;
  Style style = Style::Normal;
};

enum class Tab { Functions, Threads, Memory, Queues, Tasks, Guests, Flame, Locks };
inline constexpr int kTabCount = static_cast<int>(Tab::Locks) + 1;

// The columns of the functions tab, in display order; each sorts the table.
enum class Column {
  Name,
  CallsRate,
  TimeRate,
  Core,
  Calls,
  P50,
  P95,
  P99,
  Max,
  Self,
  Total,
  Cpu, // CPU time, children included, sampled (docs/cpu.md); "-" without samples
  Alloc
};
inline constexpr int kColumnCount = static_cast<int>(Column::Alloc) + 1;
// The key that sorts by `column` (shown in the help and in docs/console.md).
char column_key(Column column);
std::optional<Column> column_of_key(int key);
std::string_view column_heading(Column column);

// Where the keys go while the detail pane is open: the functions, the list of the function's
// kept calls, or one kept call's tree (docs/console.md).
enum class DetailFocus { Functions, KeptCalls, Tree };

// What the user chose in the tabs, kept across refreshes.
struct ViewState {
  Tab tab = Tab::Functions;
  Column sort = Column::TimeRate;
  bool descending = true;
  std::string filter;
  // Each tab's selected row, by its key (Page::keys); "" is the first row.
  std::array<std::string, kTabCount> selected;
  bool detail = false; // the selected function's detail pane is open
  DetailFocus focus = DetailFocus::Functions;
  std::string kept_call;               // the selected kept call's id; "" is the first
  std::size_t tree_line = 0;           // the line of the kept call's tree at the cursor
  std::vector<std::string> flame_zoom; // the zoomed frame's stack, root first; empty is all
  bool flame_cpu = false;              // the flame tab shows CPU samples, not wall time in scopes

  std::string& selection() { return selected[static_cast<std::size_t>(tab)]; }
  const std::string& selection() const { return selected[static_cast<std::size_t>(tab)]; }
};

// Box and spark characters: UTF-8 where the terminal's locale is, ASCII otherwise.
struct Glyphs {
  bool unicode = false;
};

struct Page {
  std::vector<Line> fixed;       // above the rows: summaries, column headings
  std::vector<Line> rows;        // scroll with the selection
  std::vector<std::string> keys; // one per row when rows can be selected
  int selected = -1;             // index into rows, -1 for none
  std::vector<Line> detail;      // under the rows: the detail pane
  bool detail_list = false;      // the pane lists kept calls that Enter moves into
  // Set by a tab of thousands of rows (functions): its rows come without text, and this writes
  // the text of rows [first, first + count) and of the column heading above them, aligned
  // together, so that a refresh formats only the rows drawn. See format_rows().
  std::function<void(Page& page, std::size_t first, std::size_t count)> format;
};

// Gives rows [first, first + count) of `page` their text (all rows have it unless the page has
// `format`); the column widths are those of these rows.
void format_rows(Page& page, std::size_t first, std::size_t count);

// `name_width` caps the name column (0: whole names, as --once prints them).
Page functions_page(const Model& model, ViewState& state, const Glyphs& glyphs,
                    std::size_t name_width);
Page function_detail(const Model& model, const ViewState& state, const Glyphs& glyphs,
                     std::size_t width);
// The selected function's kept calls as rows, and the selected one's tree (kept_calls_view.cpp).
Page kept_calls_page(const Model& model, ViewState& state, const Glyphs& glyphs, std::size_t width);
Page kept_call_tree(const Model& model, ViewState& state, const Glyphs& glyphs, std::size_t width);
Page threads_page(const Model& model, ViewState& state, std::size_t width);
Page memory_page(const Model& model, ViewState& state, const Glyphs& glyphs, std::size_t width);
Page queues_page(const Model& model);
Page tasks_page(const Model& model);
Page guests_page(const Model& model);
Page flame_page(const Model& model, ViewState& state, std::size_t width);
Page locks_page(const Model& model, ViewState& state, std::size_t width);
// Each deadlock's line and its waiters' scopes (locks_text.hpp), as alerts: the top of the locks
// tab and the threads tab's banner.
std::vector<Line> deadlock_banner(const std::vector<profiles::Deadlock>& deadlocks);

// Why a tab has no `what` in an unmodified program (profiles::Stats::unmodified_program): it has
// no scopes.
Line unmodified_program_line(std::string_view what);

// Points page.selected at the row whose key is the tab's selection (the first row when none
// is), so that the selection follows its row when the rows move.
void select_row(Page& page, ViewState& state);

// What a tab asks the agent for beyond /v1/stats, which every refresh asks.
enum class TabAnswer { None, Threads, Heap, TraceWithDetail, Trace };
// One row per tab, in the order of `Tab` and of the tab bar (key '1' is the first): the tab bar,
// the number keys, the help, --tab and the fetch are all made from it (pages.cpp).
struct TabInfo {
  Tab tab;
  std::string_view name; // --tab's value, the tab bar's title
  TabAnswer answer;
  Page (*build)(const Model& model, ViewState& state, const Glyphs& glyphs, std::size_t width);
};
const TabInfo& tab_info(Tab tab);
std::string_view tab_name(Tab tab);
std::optional<Tab> tab_by_name(std::string_view name);
// "functions threads memory …": every tab's name, in order, for the help.
std::string tab_names(std::string_view separator);
// The same as a list, for --tab's choices.
std::vector<std::string> tab_list();
// "1-8": the number keys that switch tabs.
std::string tab_keys();

// The tab `state.tab`, with the detail pane when one is open.
Page build_page(const Model& model, ViewState& state, const Glyphs& glyphs, std::size_t width);

} // namespace hotscope::cli::console
