// The tabs' names and the page of the visible tab.
#include "model.hpp"
#include "view.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>

namespace hotscope::cli::console {
namespace {

Page functions_tab(const Model& model, ViewState& state, const Glyphs& glyphs, std::size_t width) {
  if (state.detail && state.focus == DetailFocus::KeptCalls) {
    return kept_calls_page(model, state, glyphs, width == 0 ? 120 : width);
  }
  if (state.detail && state.focus == DetailFocus::Tree) {
    return kept_call_tree(model, state, glyphs, width == 0 ? 120 : width);
  }
  // The name column takes what the figures leave, within reason.
  const std::size_t name_width = width == 0 ? 0 : std::clamp<std::size_t>(width / 3, 20, 60);
  Page page = functions_page(model, state, glyphs, name_width);
  if (state.detail) {
    Page detail = function_detail(model, state, glyphs, width == 0 ? 120 : width);
    page.detail = std::move(detail.detail);
    page.detail_list = detail.detail_list;
  }
  return page;
}

constexpr std::array<TabInfo, kTabCount> kTabs{{
    {Tab::Functions, "functions", TabAnswer::TraceWithDetail, functions_tab},
    {Tab::Threads, "threads", TabAnswer::Threads,
     [](const Model& model, ViewState& state, const Glyphs&, std::size_t width) {
       return threads_page(model, state, width);
     }},
    {Tab::Memory, "memory", TabAnswer::Heap, memory_page},
    {Tab::Queues, "queues", TabAnswer::None,
     [](const Model& model, ViewState&, const Glyphs&, std::size_t) { return queues_page(model); }},
    {Tab::Tasks, "tasks", TabAnswer::None,
     [](const Model& model, ViewState&, const Glyphs&, std::size_t) { return tasks_page(model); }},
    {Tab::Guests, "guests", TabAnswer::None,
     [](const Model& model, ViewState&, const Glyphs&, std::size_t) { return guests_page(model); }},
    {Tab::Flame, "flame", TabAnswer::Trace,
     [](const Model& model, ViewState& state, const Glyphs&, std::size_t width) {
       return flame_page(model, state, width);
     }},
    {Tab::Locks, "locks", TabAnswer::None,
     [](const Model& model, ViewState& state, const Glyphs&, std::size_t width) {
       return locks_page(model, state, width);
     }},
}};

constexpr bool in_order() {
  for (std::size_t i = 0; i < kTabs.size(); ++i) {
    if (static_cast<std::size_t>(kTabs[i].tab) != i) {
      return false;
    }
  }
  return true;
}
static_assert(in_order(), "kTabs lists every Tab once, in the enum's order");

} // namespace

const TabInfo& tab_info(Tab tab) {
  return kTabs[static_cast<std::size_t>(tab)];
}

std::string_view tab_name(Tab tab) {
  return tab_info(tab).name;
}

std::optional<Tab> tab_by_name(std::string_view name) {
  for (const TabInfo& info : kTabs) {
    if (info.name == name) {
      return info.tab;
    }
  }
  return std::nullopt;
}

std::vector<std::string> tab_list() {
  std::vector<std::string> names;
  for (const TabInfo& info : kTabs) {
    names.emplace_back(info.name);
  }
  return names;
}

std::string tab_names(std::string_view separator) {
  std::string names;
  for (const std::string& name : tab_list()) {
    names += (names.empty() ? "" : std::string(separator)) + name;
  }
  return names;
}

std::string tab_keys() {
  return "1-" + std::to_string(kTabs.size());
}

Line unmodified_program_line(std::string_view what) {
  return Line{
      fmt::format(" no {}: an unmodified program (`hotscope run`, `hotscope attach`) has no "
                  "scopes; the threads and memory tabs show what is known of it",
                  what),
      Style::Dim};
}

void select_row(Page& page, ViewState& state) {
  if (page.keys.empty()) {
    return;
  }
  const auto found = std::find(page.keys.begin(), page.keys.end(), state.selection());
  page.selected = found == page.keys.end() ? 0 : static_cast<int>(found - page.keys.begin());
  state.selection() = page.keys[static_cast<std::size_t>(page.selected)];
}

void format_rows(Page& page, std::size_t first, std::size_t count) {
  if (page.format && first < page.rows.size()) {
    page.format(page, first, std::min(count, page.rows.size() - first));
  }
}

Page build_page(const Model& model, ViewState& state, const Glyphs& glyphs, std::size_t width) {
  return tab_info(state.tab).build(model, state, glyphs, width);
}

} // namespace hotscope::cli::console
