// Tab 7: the last seconds of the trace as a text flame graph (icicle: the root on top) of self
// time, all threads merged. Under it, the zoomed frame's children: Enter zooms into the
// selected one, Backspace zooms back out.
#include "model.hpp"
#include "text.hpp"
#include "view.hpp"

#include <fmt/format.h>

namespace hotscope::cli::console {
namespace {

constexpr std::size_t kDepth = 12;

// Draws `node` at `depth` from column `x` over `width` columns, its children under it.
void draw(const FlameNode& node, std::size_t depth, std::size_t x, std::size_t width,
          std::vector<std::string>& lines) {
  if (depth >= lines.size() || width < 2) {
    return;
  }
  std::string label = clip(node.name, width - 1, Glyphs{});
  label.insert(label.begin(), '|');
  lines[depth].replace(x, label.size(), label);
  std::size_t child_x = x;
  for (const FlameNode& child : node.children) {
    const auto child_width =
        static_cast<std::size_t>(static_cast<double>(width) * static_cast<double>(child.total_ns) /
                                 static_cast<double>(std::max<std::uint64_t>(node.total_ns, 1)));
    draw(child, depth + 1, child_x, child_width, lines);
    child_x += child_width;
  }
}

} // namespace

Page flame_page(const Model& model, ViewState& state, std::size_t width) {
  Page page;
  if (!model.has_flame()) {
    page.fixed.push_back(Line{" asking for the trace... (a process with HOTSCOPE_TRACE_MIB=0 "
                              "keeps none)",
                              Style::Dim});
    return page;
  }
  // Follow the zoom path as far as it still exists in this window.
  const FlameNode* root = &model.flame();
  std::string path = "all";
  for (const std::string& name : state.flame_zoom) {
    const auto child = std::find_if(root->children.begin(), root->children.end(),
                                    [&](const FlameNode& n) { return n.name == name; });
    if (child == root->children.end()) {
      break;
    }
    root = &*child;
    path += " > " + name;
  }
  page.fixed.push_back(
      Line{fmt::format(" self time in the trace's last {} s, all threads: {}  "
                       "({}); asked for every {} s",
                       model.flame_seconds(), path, duration(static_cast<double>(root->total_ns)),
                       model.flame_seconds()),
           Style::Dim});
  const std::size_t columns_wide = width > 2 ? width - 2 : 100;
  std::vector<std::string> lines(kDepth, std::string(columns_wide, ' '));
  draw(*root, 0, 0, columns_wide, lines);
  while (!lines.empty() && lines.back().find_first_not_of(' ') == std::string::npos) {
    lines.pop_back();
  }
  for (std::string& line : lines) {
    page.fixed.push_back(Line{" " + line});
  }
  page.fixed.push_back(Line{""});
  std::vector<Cells> table{{"Frame", "Total", "Self", "% of zoomed"}};
  for (const FlameNode& child : root->children) {
    table.push_back({child.name, duration(static_cast<double>(child.total_ns)),
                     duration(static_cast<double>(child.self_ns)),
                     percent(100.0 * static_cast<double>(child.total_ns) /
                             static_cast<double>(std::max<std::uint64_t>(root->total_ns, 1)))});
  }
  const std::vector<std::string> rows = align(table, width > 0 ? 50 : 0, Glyphs{});
  page.fixed.push_back(Line{rows[0], Style::Heading});
  for (std::size_t i = 1; i < rows.size(); ++i) {
    page.rows.push_back(Line{rows[i]});
    page.keys.push_back(root->children[i - 1].name);
  }
  if (root->children.empty()) {
    page.rows.push_back(Line{" no frame under this one", Style::Dim});
  }
  select_row(page, state);
  return page;
}

} // namespace hotscope::cli::console
