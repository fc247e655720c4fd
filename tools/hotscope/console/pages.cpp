// The tabs' names and the page of the visible tab.
#include "model.hpp"
#include "view.hpp"

#include <algorithm>
#include <array>

namespace hotscope::cli::console {
namespace {

constexpr std::array<std::string_view, kTabCount> kTabNames{
    "functions", "threads", "memory", "queues", "tasks", "guests", "flame"};

} // namespace

std::string_view tab_name(Tab tab) {
  return kTabNames[static_cast<std::size_t>(tab)];
}

std::optional<Tab> tab_by_name(std::string_view name) {
  const auto found = std::find(kTabNames.begin(), kTabNames.end(), name);
  if (found == kTabNames.end()) {
    return std::nullopt;
  }
  return static_cast<Tab>(found - kTabNames.begin());
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
  switch (state.tab) {
  case Tab::Functions: {
    // The name column takes what the figures leave, within reason.
    const std::size_t name_width = width == 0 ? 0 : std::clamp<std::size_t>(width / 3, 20, 60);
    Page page = functions_page(model, state, glyphs, name_width);
    if (state.detail) {
      page.detail = function_detail(model, state, glyphs, width == 0 ? 120 : width).detail;
    }
    return page;
  }
  case Tab::Threads:
    return threads_page(model, state, width);
  case Tab::Memory:
    return memory_page(model, state, glyphs, width);
  case Tab::Queues:
    return queues_page(model);
  case Tab::Tasks:
    return tasks_page(model);
  case Tab::Guests:
    return guests_page(model);
  case Tab::Flame:
    return flame_page(model, state, width);
  }
  return Page{};
}

} // namespace hotscope::cli::console
