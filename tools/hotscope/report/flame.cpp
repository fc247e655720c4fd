// Flame graphs as SVG, by flamegraph.pl's conventions: the root ("all") at the bottom, each
// frame as wide as its share of the root, callees above their caller in name order, colours
// from a hash of the name (warm for time, green for memory). Every frame is drawn, however
// narrow: zooming in shows it (assets/flame.js).
#include "markup.hpp"
#include "report.hpp"

#include "export/common.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <map>

namespace hotscope::cli::report {
namespace {

constexpr double kWidth = 1200;     // the SVG's width
constexpr double kMargin = 10;      // left and right of the frames
constexpr double kFrameHeight = 16; // a frame's row
constexpr double kFontSize = 12;
constexpr double kCharWidth = kFontSize * 0.59; // an average character of the font
constexpr double kTop = 3 * kFrameHeight;       // title, subtitle, buttons
constexpr double kBottom = 2 * kFrameHeight;    // details line

std::size_t depth_of(const FlameNode& node) {
  std::size_t deepest = 0;
  for (const FlameNode& child : node.children) {
    deepest = std::max(deepest, depth_of(child) + 1);
  }
  return deepest;
}

// 32-bit FNV-1a of the name, three bytes of it scaled to 0..1.
std::array<double, 3> name_hash(const std::string& name) {
  std::uint32_t hash = 2166136261U;
  for (const char c : name) {
    hash = (hash ^ static_cast<unsigned char>(c)) * 16777619U;
  }
  return {(hash & 0xFF) / 255.0, ((hash >> 8) & 0xFF) / 255.0, ((hash >> 16) & 0xFF) / 255.0};
}

std::string colour(const std::string& name, FlameUnit unit) {
  const auto [a, b, c] = name_hash(name);
  if (unit == FlameUnit::Bytes) {
    return fmt::format("rgb({},{},{})", static_cast<int>(40 * c), static_cast<int>(170 + 70 * a),
                       static_cast<int>(60 + 110 * b));
  }
  return fmt::format("rgb({},{},{})", static_cast<int>(205 + 50 * c), static_cast<int>(230 * a),
                     static_cast<int>(55 * b));
}

std::string value_text(std::uint64_t value, FlameUnit unit) {
  return unit == FlameUnit::Bytes ? exporters::detail::human_bytes(value)
                                  : exporters::detail::human_duration(static_cast<double>(value));
}

// `name` cut to what fits `width` pixels ("" when not even three characters do).
std::string label(const std::string& name, double width) {
  const auto fits = static_cast<std::ptrdiff_t>((width - 6) / kCharWidth);
  if (fits < 3) {
    return "";
  }
  // Count code points, not bytes, and cut between them.
  std::ptrdiff_t count = 0;
  std::size_t cut = name.size();
  for (std::size_t i = 0; i < name.size(); ++i) {
    if ((static_cast<unsigned char>(name[i]) & 0xC0) != 0x80) {
      if (count == fits - 2 && cut == name.size()) {
        cut = i;
      }
      ++count;
    }
  }
  return count <= fits ? name : name.substr(0, cut) + "..";
}

struct Drawing {
  const FlameStyle& style;
  double total = 1;
  double height = 0;
  std::string frames;
};

void draw(const FlameNode& node, std::size_t depth, std::uint64_t start, Drawing& drawing) {
  const double x = kMargin + static_cast<double>(start) / drawing.total * (kWidth - 2 * kMargin);
  const double width = static_cast<double>(node.value) / drawing.total * (kWidth - 2 * kMargin);
  const double y = drawing.height - kBottom - static_cast<double>(depth + 1) * kFrameHeight;
  const std::string name = escape(node.name);
  const std::string fill = colour(node.name, drawing.style.unit);
  drawing.frames += fmt::format(
      "<g class=\"frame\" data-name=\"{}\" data-start=\"{}\" data-value=\"{}\" data-depth=\"{}\" "
      "data-fill=\"{}\"><title>{} ({}, {:.2f}%)</title><rect x=\"{:.2f}\" y=\"{:.1f}\" "
      "width=\"{:.2f}\" height=\"{:.1f}\" fill=\"{}\" rx=\"2\" ry=\"2\"/><text x=\"{:.2f}\" "
      "y=\"{:.1f}\">{}</text></g>\n",
      name, start, node.value, depth, fill, name, value_text(node.value, drawing.style.unit),
      100.0 * static_cast<double>(node.value) / drawing.total, x, y, width, kFrameHeight - 1, fill,
      x + 3, y + kFrameHeight - 4.5, escape(label(node.name, width)));
  std::uint64_t child_start = start;
  for (const FlameNode& child : node.children) {
    draw(child, depth + 1, child_start, drawing);
    child_start += child.value;
  }
}

} // namespace

FlameNode flame_tree(const std::vector<profiles::Stack>& stacks) {
  // Built in maps (name order), then moved into the vectors.
  struct Building {
    std::uint64_t value = 0;
    std::map<std::string, Building> children;
  };
  Building root;
  for (const profiles::Stack& stack : stacks) {
    Building* node = &root;
    node->value += stack.count;
    for (const std::string& frame : stack.frames) {
      node = &node->children[frame];
      node->value += stack.count;
    }
  }
  const auto convert = [](const auto& self, const std::string& name,
                          const Building& from) -> FlameNode {
    FlameNode node{name, from.value, {}};
    for (const auto& [child_name, child] : from.children) {
      node.children.push_back(self(self, child_name, child));
    }
    return node;
  };
  return convert(convert, "all", root);
}

std::vector<profiles::Stack> heap_stacks(const std::vector<profiles::Site>& sites,
                                         HeapBytes which) {
  std::vector<profiles::Stack> stacks;
  for (const profiles::Site& site : sites) {
    profiles::Stack stack;
    stack.count = which == HeapBytes::Total    ? site.total_bytes
                  : which == HeapBytes::AtGmax ? site.gmax_bytes
                                               : site.end_bytes;
    if (stack.count == 0) {
      continue;
    }
    for (auto frame = site.frames.rbegin(); frame != site.frames.rend(); ++frame) {
      stack.frames.push_back(profiles::short_frame(*frame));
    }
    stacks.push_back(std::move(stack));
  }
  return stacks;
}

std::string flame_svg(const FlameNode& root, const FlameStyle& style) {
  Drawing drawing{style, 1, 0, {}};
  drawing.total = static_cast<double>(std::max<std::uint64_t>(root.value, 1));
  drawing.height = kTop + static_cast<double>(depth_of(root) + 1) * kFrameHeight + kBottom;
  draw(root, 0, 0, drawing);
  std::string svg;
  if (style.standalone) {
    svg += "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n";
  }
  svg += fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" class=\"hotscope-flame\" "
      "width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" data-width=\"{2}\" "
      "data-margin=\"{3}\" data-char-width=\"{4:.3f}\" data-unit=\"{5}\">\n",
      kWidth, drawing.height, kWidth - 2 * kMargin, kMargin, kCharWidth,
      style.unit == FlameUnit::Bytes ? "bytes" : "ns");
  if (style.standalone) {
    svg += fmt::format("<style>{}</style>\n", assets::kFlameCss);
  }
  svg += fmt::format(
      "<rect class=\"hf-background\" x=\"0\" y=\"0\" width=\"{0}\" height=\"{1}\"/>\n"
      "<text class=\"hf-title\" x=\"{2}\" y=\"20\">{3}</text>\n"
      "<text class=\"hf-subtitle\" x=\"{2}\" y=\"38\">{4}</text>\n"
      "<text class=\"hf-button hf-reset-zoom hf-hidden\" x=\"{5}\" y=\"20\">Reset Zoom</text>\n"
      "<text class=\"hf-button hf-search\" x=\"{6}\" y=\"20\" text-anchor=\"end\">Search</text>\n"
      "<text class=\"hf-details\" x=\"{5}\" y=\"{7}\"> </text>\n"
      "<text class=\"hf-matched\" x=\"{6}\" y=\"{7}\"></text>\n",
      kWidth, drawing.height, kWidth / 2, escape(style.title), escape(style.subtitle), kMargin,
      kWidth - kMargin, drawing.height - 10);
  svg += "<g class=\"frames\">\n" + drawing.frames + "</g>\n";
  if (style.standalone) {
    svg += fmt::format("<script><![CDATA[\n{}]]></script>\n", assets::kFlameJs);
  }
  svg += "</svg>\n";
  return svg;
}

} // namespace hotscope::cli::report
