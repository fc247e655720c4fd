// The functions tab's kept calls (docs/console.md): Enter in the detail pane lists the selected
// function's kept slowest calls as rows, and Enter on one shows its tree as the agent wrote it
// (GET /v1/slow, docs/slow.md); Backspace goes back up.
#include "model.hpp"
#include "text.hpp"
#include "view.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace hotscope::cli::console {
namespace {

const FunctionRow* selected_function(const Model& model, const ViewState& state) {
  return model.function(state.selected[static_cast<std::size_t>(Tab::Functions)]);
}

const KeptCall* selected_call(const KeptCalls* kept, const std::string& id) {
  if (kept == nullptr) {
    return nullptr;
  }
  const auto found = std::find_if(kept->calls.begin(), kept->calls.end(),
                                  [&](const KeptCall& call) { return call.id == id; });
  return found == kept->calls.end() ? nullptr : &*found;
}

std::string cut_note(const KeptCall& call) {
  return call.cut_events == 0 ? "-" : fmt::format("{} events", call.cut_events);
}

} // namespace

Page kept_calls_page(const Model& model, ViewState& state, const Glyphs& glyphs,
                     std::size_t width) {
  Page page;
  const FunctionRow* row = selected_function(model, state);
  const KeptCalls* kept = row == nullptr ? nullptr : model.kept_calls(row->name);
  page.fixed.push_back(
      Line{clip(fmt::format(" {}: its slowest calls, kept whole; Enter shows one, Backspace goes "
                            "back",
                            row == nullptr ? "?" : row->name),
                width, glyphs),
           Style::Heading});
  if (kept == nullptr || kept->calls.empty()) {
    page.rows.push_back(Line{kept == nullptr ? "  (asking...)" : "  no kept call now"});
    return page;
  }
  std::vector<Cells> cells{{"  #", "Duration", "Thread", "Tid", "Started", "Cut"}};
  for (const KeptCall& call : kept->calls) {
    cells.push_back({fmt::format("  {}", cells.size()),
                     duration(static_cast<double>(call.duration_ns)), call.thread,
                     std::to_string(call.os_tid), time_of_day(call.start_unix_ns), cut_note(call)});
    page.keys.push_back(call.id);
  }
  std::vector<std::string> lines = align(cells, 0, glyphs);
  page.fixed.push_back(Line{clip(lines.front(), width, glyphs), Style::Heading});
  for (std::size_t i = 1; i < lines.size(); ++i) {
    page.rows.push_back(Line{clip(lines[i], width, glyphs)});
  }
  const auto found = std::find(page.keys.begin(), page.keys.end(), state.kept_call);
  page.selected = found == page.keys.end() ? 0 : static_cast<int>(found - page.keys.begin());
  state.kept_call = page.keys[static_cast<std::size_t>(page.selected)];
  return page;
}

Page kept_call_tree(const Model& model, ViewState& state, const Glyphs& glyphs, std::size_t width) {
  Page page;
  const FunctionRow* row = selected_function(model, state);
  const KeptCall* call =
      selected_call(row == nullptr ? nullptr : model.kept_calls(row->name), state.kept_call);
  if (call == nullptr) { // a reset or another process since
    page.fixed.push_back(Line{" this call is no longer kept; Backspace goes back", Style::Alert});
    return page;
  }
  page.fixed.push_back(
      Line{clip(fmt::format(" {}: {} on {} (tid {}), started at {}; Backspace goes back", row->name,
                            duration(static_cast<double>(call->duration_ns)), call->thread,
                            call->os_tid, time_of_day(call->start_unix_ns)),
                width, glyphs),
           Style::Heading});
  if (call->cut_events != 0) {
    page.fixed.push_back(
        Line{fmt::format(" cut: the {} events after the cap were not kept", call->cut_events),
             Style::Alert});
  }
  std::string_view tree = call->tree;
  while (!tree.empty()) {
    const std::size_t end = std::min(tree.find('\n'), tree.size());
    page.rows.push_back(Line{clip(tree.substr(0, end), width, glyphs)});
    tree.remove_prefix(std::min(end + 1, tree.size()));
  }
  if (!page.rows.empty()) { // the cursor line, which the screen keeps in view
    state.tree_line = std::min(state.tree_line, page.rows.size() - 1);
    page.selected = static_cast<int>(state.tree_line);
  }
  return page;
}

} // namespace hotscope::cli::console
