// Pictures of a profile (docs/diff-and-report.md): `hotscope flame FILE` draws trace.folded (time
// by stack) or heap.json (bytes by allocation stack) as a standalone interactive SVG flame graph,
// and `hotscope report DIR` turns a reports directory into one self-contained HTML file: the
// per-function table, the flame graph, the threads and the top heap sites. The scripts and
// styles (assets/) are compiled in and written inline: the files need no network.
#pragma once

#include "profiles/profiles.hpp"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hotscope::cli::report {

// One frame drawn in a flame graph: `value` counts its stacks and its callees' (inclusive), from
// `start` (the sum of the values left of it) on the row `depth` (0: the root, "all").
struct FlameFrame {
  std::string_view name; // into the stacks' text, which must outlive the graph
  std::uint64_t start = 0, value = 0;
  std::uint32_t depth = 0;
};
// A flame graph holds at most this many frames (docs/diff-and-report.md, "Limits").
inline constexpr std::size_t kMaxFlameFrames = 20000;
struct FlameGraph {
  std::vector<FlameFrame> frames; // the root first, each frame before its callees, callees by name
  std::uint64_t total = 0;        // the root's value
  std::size_t merged = 0; // frames left out (too narrow), their value kept in their callers'
};
// `stacks` merged into one graph under a root frame "all", as flamegraph.pl does (callees in
// name order, a frame's own count right of its callees), without recursion whatever the depth.
// Frames narrower than `min_width` pixels are merged into their callers, and so are the
// narrowest past `max_frames`: the output stays bounded whatever the input.
FlameGraph flame_graph(const profiles::StackLines& stacks, double min_width = 0,
                       std::size_t max_frames = kMaxFlameFrames);

// Which bytes of a heap profile a flame graph weighs its stacks by.
enum class HeapBytes { Total, AtGmax, AtEnd };
// How heap_stacks() joins frames: a byte no frame name keeps.
inline constexpr char kHeapSeparator = '\x1f';
// A heap profile's sites as stack lines for profiles::folded_stacks(text, source,
// kHeapSeparator): root first (main before the allocating function), each frame shortened
// ("parse (service.cpp:40)"); sites with none of those bytes are left out.
std::string heap_stacks(const std::vector<profiles::Site>& sites, HeapBytes which);

enum class FlameUnit { Nanoseconds, Bytes, Samples };
struct FlameStyle {
  std::string title;
  std::string subtitle;
  FlameUnit unit = FlameUnit::Nanoseconds;
  // A file of its own (XML prolog, its script and styles inside); else an element for a page
  // that carries the script and the styles itself.
  bool standalone = true;
};
// The drawn frames' names are cut at 1,000 bytes.
std::string flame_svg(const FlameGraph& graph, const FlameStyle& style);

// report.html for the reports directory `dir` (stats.json; trace.folded, cpu.folded and
// heap.json when there); a Failure (kUsage) when it has no stats.json or a file is not what its
// name says.
std::string html_report(const std::string& dir);
// Folded stacks as the page gets them: the file's text when there, and where it was read from.
struct FoldedFile {
  std::optional<std::string> text;
  std::string source;
};
// The same page from what those files hold (`folded`: trace.folded's, `cpu_folded`:
// cpu.folded's).
std::string html_page(const profiles::Profile& stats, const std::optional<profiles::Profile>& heap,
                      const FoldedFile& folded, const FoldedFile& cpu_folded = {});

// `hotscope report` and `hotscope flame`.
class ReportCommands {
public:
  explicit ReportCommands(CLI::App& app);
  // After parsing: the exit status when one of them was chosen, else nothing.
  std::optional<int> run() const;

private:
  int run_flame() const;

  CLI::App* report_ = nullptr;
  CLI::App* flame_ = nullptr;
  std::string input_;
  std::string output_;
  std::string title_;
  std::string heap_bytes_ = "total";
  double min_width_ = 0;
};

} // namespace hotscope::cli::report
