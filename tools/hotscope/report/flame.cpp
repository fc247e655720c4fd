// Flame graphs as SVG, by flamegraph.pl's conventions: the root ("all") at the bottom, each
// frame as wide as its share of the root, callees above their caller in name order, colours
// from a hash of the name (warm for time, green for memory). Every frame is drawn, however
// narrow (zooming in shows it, assets/flame.js), up to kMaxFlameFrames: past that the narrowest
// are merged into their callers, and the output stays bounded whatever the input.
#include "markup.hpp"
#include "report.hpp"

#include "export/common.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <queue>

namespace hotscope::cli::report {
namespace {

constexpr double kWidth = 1200;     // the SVG's width
constexpr double kMargin = 10;      // left and right of the frames
constexpr double kFrameHeight = 16; // a frame's row
constexpr double kFontSize = 12;
constexpr double kCharWidth = kFontSize * 0.59; // an average character of the font
constexpr double kTop = 3 * kFrameHeight;       // title, subtitle, buttons
constexpr double kBottom = 2 * kFrameHeight;    // details line

constexpr std::size_t kMaxDrawnName = 1000; // bytes of a frame's name drawn

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
  switch (unit) {
  case FlameUnit::Bytes:
    return exporters::detail::human_bytes(value);
  case FlameUnit::Samples:
    return fmt::format("{} sample{}", value, value == 1 ? "" : "s");
  case FlameUnit::Nanoseconds:
    break;
  }
  return exporters::detail::human_duration(static_cast<double>(value));
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

// `name` cut at kMaxDrawnName bytes, between two characters.
std::string drawn_name(std::string_view name) {
  if (name.size() <= kMaxDrawnName) {
    return std::string(name);
  }
  std::size_t cut = kMaxDrawnName;
  while (cut > 0 && (static_cast<unsigned char>(name[cut]) & 0xC0) == 0x80) {
    --cut;
  }
  return std::string(name.substr(0, cut)) + "...";
}

std::string frame_svg(const FlameFrame& frame, double total, double height, FlameUnit unit) {
  const double x = kMargin + static_cast<double>(frame.start) / total * (kWidth - 2 * kMargin);
  const double width = static_cast<double>(frame.value) / total * (kWidth - 2 * kMargin);
  const double y = height - kBottom - static_cast<double>(frame.depth + 1) * kFrameHeight;
  const std::string full = drawn_name(frame.name);
  const std::string name = escape(full);
  const std::string fill = colour(full, unit);
  return fmt::format(
      "<g class=\"frame\" data-name=\"{}\" data-start=\"{}\" data-value=\"{}\" data-depth=\"{}\" "
      "data-fill=\"{}\"><title>{} ({}, {:.2f}%)</title><rect x=\"{:.2f}\" y=\"{:.1f}\" "
      "width=\"{:.2f}\" height=\"{:.1f}\" fill=\"{}\" rx=\"2\" ry=\"2\"/><text x=\"{:.2f}\" "
      "y=\"{:.1f}\">{}</text></g>\n",
      name, frame.start, frame.value, frame.depth, fill, name, value_text(frame.value, unit),
      100.0 * static_cast<double>(frame.value) / total, x, y, width, kFrameHeight - 1, fill, x + 3,
      y + kFrameHeight - 4.5, escape(label(full, width)));
}

// Frame-wise order of two stacks' frames: a frame ends before any byte (its callee sorts after
// it), and bytes compare unsigned, as std::string does; flamegraph.pl's order of callees.
bool stack_less(std::string_view a, std::string_view b, char separator) {
  const std::size_t common = std::min(a.size(), b.size());
  for (std::size_t i = 0; i < common; ++i) {
    if (a[i] != b[i]) {
      if (a[i] == separator || b[i] == separator) {
        return a[i] == separator;
      }
      return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[i]);
    }
  }
  return a.size() < b.size();
}

// Keeps the `max_frames` widest frames. A caller is never narrower than its callee and is
// shallower, so ranking by (value desc, depth asc) keeps every kept frame's callers.
class Widest {
public:
  explicit Widest(std::size_t max_frames) : max_(std::max<std::size_t>(max_frames, 1)) {}

  void add(const FlameFrame& frame, std::size_t& merged) {
    kept_.push(frame);
    if (kept_.size() > max_) {
      kept_.pop();
      ++merged;
    }
  }
  std::vector<FlameFrame> take() {
    std::vector<FlameFrame> frames;
    frames.reserve(kept_.size());
    for (; !kept_.empty(); kept_.pop()) {
      frames.push_back(kept_.top());
    }
    return frames;
  }

private:
  struct Better {
    bool operator()(const FlameFrame& a, const FlameFrame& b) const {
      if (a.value != b.value) {
        return a.value > b.value;
      }
      return a.depth != b.depth ? a.depth < b.depth : a.start < b.start;
    }
  };
  std::size_t max_;
  std::priority_queue<FlameFrame, std::vector<FlameFrame>, Better> kept_; // the worst on top
};

} // namespace

FlameGraph flame_graph(const profiles::StackLines& stacks, double min_width,
                       std::size_t max_frames) {
  const char separator = stacks.separator;
  std::vector<std::uint32_t> order = stacks.starts;
  std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    return stack_less(stacks.frames_at(a), stacks.frames_at(b), separator);
  });
  FlameGraph graph;
  graph.total = stacks.total;
  const double total = static_cast<double>(std::max<std::uint64_t>(stacks.total, 1));
  const double min_value = min_width / (kWidth - 2 * kMargin) * total;
  Widest widest(max_frames > 1 ? max_frames - 1 : 1); // and the root
  // The stacks in order walk the tree depth first: the frames open now, root first, each with
  // where its next callee starts.
  struct Open {
    FlameFrame frame;
    std::uint64_t next;
  };
  std::vector<Open> open{{{"all", 0, stacks.total, 0}, 0}};
  const auto close_to = [&](std::size_t size) {
    while (open.size() > size) {
      const FlameFrame done = open.back().frame;
      open.pop_back();
      open.back().next += done.value;
      if (static_cast<double>(done.value) < min_value) {
        ++graph.merged;
      } else {
        widest.add(done, graph.merged);
      }
    }
  };
  for (const std::uint32_t start : order) {
    const std::string_view frames = stacks.frames_at(start);
    const std::uint64_t count = stacks.count_at(start);
    bool matching = true;
    for (std::size_t from = 0, depth = 1;; ++depth) {
      const std::size_t end = std::min(frames.find(separator, from), frames.size());
      const std::string_view name = frames.substr(from, end - from);
      if (matching && (depth >= open.size() || open[depth].frame.name != name)) {
        matching = false;
        close_to(depth);
      }
      if (!matching) {
        const std::uint64_t at = open.back().next;
        open.push_back({{name, at, 0, static_cast<std::uint32_t>(depth)}, at});
      }
      open[depth].frame.value += count;
      if (end == frames.size()) {
        break;
      }
      from = end + 1;
    }
    // In this order a stack that matched all its frames is the previous one again: nothing
    // to close.
  }
  close_to(1);
  graph.frames = widest.take();
  graph.frames.push_back(open.front().frame);
  // Each frame before its callees, callees left to right: by start, then depth.
  std::sort(graph.frames.begin(), graph.frames.end(), [](const FlameFrame& a, const FlameFrame& b) {
    return a.start != b.start ? a.start < b.start : a.depth < b.depth;
  });
  return graph;
}

std::string heap_stacks(const std::vector<profiles::Site>& sites, HeapBytes which) {
  std::string text;
  for (const profiles::Site& site : sites) {
    const std::uint64_t count = which == HeapBytes::Total    ? site.total_bytes
                                : which == HeapBytes::AtGmax ? site.gmax_bytes
                                                             : site.end_bytes;
    if (count == 0) {
      continue;
    }
    for (auto frame = site.frames.rbegin(); frame != site.frames.rend(); ++frame) {
      std::string name = profiles::short_frame(**frame);
      std::replace(name.begin(), name.end(), kHeapSeparator, ' ');
      std::replace(name.begin(), name.end(), '\n', ' ');
      text += name;
      text += frame + 1 == site.frames.rend() ? ' ' : kHeapSeparator;
    }
    if (site.frames.empty()) {
      text += "(no frames) ";
    }
    text += std::to_string(count);
    text += '\n';
  }
  return text;
}

std::string flame_svg(const FlameGraph& graph, const FlameStyle& style) {
  std::uint32_t deepest = 0;
  for (const FlameFrame& frame : graph.frames) {
    deepest = std::max(deepest, frame.depth);
  }
  const double total = static_cast<double>(std::max<std::uint64_t>(graph.total, 1));
  const double height = kTop + static_cast<double>(deepest + 1) * kFrameHeight + kBottom;
  std::string frames;
  for (const FlameFrame& frame : graph.frames) {
    frames += frame_svg(frame, total, height, style.unit);
  }
  std::string subtitle = style.subtitle;
  if (graph.merged > 0) {
    subtitle += fmt::format("; {} narrow frames merged into their callers", graph.merged);
  }
  std::string svg;
  if (style.standalone) {
    svg += "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n";
  }
  svg += fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" class=\"hotscope-flame\" "
      "width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" data-width=\"{2}\" "
      "data-margin=\"{3}\" data-char-width=\"{4:.3f}\" data-unit=\"{5}\">\n",
      kWidth, height, kWidth - 2 * kMargin, kMargin, kCharWidth,
      style.unit == FlameUnit::Bytes     ? "bytes"
      : style.unit == FlameUnit::Samples ? "samples"
                                         : "ns");
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
      kWidth, height, kWidth / 2, escape(style.title), escape(subtitle), kMargin, kWidth - kMargin,
      height - 10);
  svg += "<g class=\"frames\">\n" + frames + "</g>\n";
  if (style.standalone) {
    svg += fmt::format("<script><![CDATA[\n{}]]></script>\n", assets::kFlameJs);
  }
  svg += "</svg>\n";
  return svg;
}

} // namespace hotscope::cli::report
