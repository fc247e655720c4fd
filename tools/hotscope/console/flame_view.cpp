// Tab 7: a text flame graph (icicle: the root on top), all threads merged, of the trace's last
// seconds (self time in scopes) or, after `c`, of the CPU samples of the last seconds (CPU time
// in native frames and scopes). Under it, the zoomed frame's children: Enter zooms into the
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

// The CPU flame's hint while there are no samples to show: how to start the sampler.
std::optional<std::string> cpu_flame_hint(const Model& model) {
  const std::optional<profiles::CpuSampling>& cpu = model.stats().cpu;
  if (!model.has_stats()) {
    return std::nullopt;
  }
  if (!cpu || cpu->hz == 0) {
    const std::string why = cpu && !cpu->problem.empty() ? " (" + cpu->problem + ")" : "";
    return " the CPU sampler is off" + why +
           ": start the program with HOTSCOPE_CPU_HZ=99 (or under `hotscope run --cpu`), or "
           "take a profile of the next seconds with `hotscope cpu`; c: wall time";
  }
  return std::nullopt;
}

// The line above the flame: what it shows, the zoom path and its time.
std::string flame_heading(const Model& model, bool cpu, const std::string& path, std::uint64_t ns) {
  if (!cpu) {
    return fmt::format(" self time in the trace's last {} s, all threads: {}  ({}); asked for "
                       "every {} s; c: CPU time",
                       model.flame_seconds(), path, duration(static_cast<double>(ns)),
                       model.flame_seconds());
  }
  const std::string span = model.cpu_flame_seconds() > 0
                               ? fmt::format("the last {:.1f} s", model.cpu_flame_seconds())
                               : std::string("the measuring window");
  return fmt::format(" CPU time in {}, all threads, sampled at {} Hz: {}  ({}); c: wall time", span,
                     model.stats().cpu->hz, path, duration(static_cast<double>(ns)));
}

} // namespace

Page flame_page(const Model& model, ViewState& state, std::size_t width) {
  Page page;
  const bool cpu = state.flame_cpu;
  if (cpu) {
    if (const std::optional<std::string> hint = cpu_flame_hint(model)) {
      page.fixed.push_back(Line{*hint, Style::Dim});
      return page;
    }
  }
  if (!(cpu ? model.has_cpu_flame() : model.has_flame())) {
    page.fixed.push_back(Line{cpu ? " asking for the CPU samples..."
                                  : " asking for the trace... (a process with "
                                    "HOTSCOPE_TRACE_MIB=0 keeps none)",
                              Style::Dim});
    return page;
  }
  // Follow the zoom path as far as it still exists in this window.
  const FlameNode* root = cpu ? &model.cpu_flame() : &model.flame();
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
  page.fixed.push_back(Line{flame_heading(model, cpu, path, root->total_ns), Style::Dim});
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
    page.rows.push_back(!cpu && path == "all" && model.stats().unmodified_program
                            ? unmodified_program_line("trace")
                            : Line{" no frame under this one", Style::Dim});
  }
  select_row(page, state);
  return page;
}

} // namespace hotscope::cli::console
