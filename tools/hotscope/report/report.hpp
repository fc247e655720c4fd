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
#include <vector>

namespace hotscope::cli::report {

// One frame of a flame graph: `value` counts its stacks and its callees' (inclusive).
struct FlameNode {
  std::string name;
  std::uint64_t value = 0;
  std::vector<FlameNode> children; // by name, as flamegraph.pl orders them
};
// `stacks` merged into one tree under a root frame "all".
FlameNode flame_tree(const std::vector<profiles::Stack>& stacks);

// Which bytes of a heap profile a flame graph weighs its stacks by.
enum class HeapBytes { Total, AtGmax, AtEnd };
// A heap profile's sites as stacks, root first (main before the allocating function), each
// frame shortened ("parse (service.cpp:40)"); sites with none of those bytes are left out.
std::vector<profiles::Stack> heap_stacks(const std::vector<profiles::Site>& sites, HeapBytes which);

enum class FlameUnit { Nanoseconds, Bytes };
struct FlameStyle {
  std::string title;
  std::string subtitle;
  FlameUnit unit = FlameUnit::Nanoseconds;
  // A file of its own (XML prolog, its script and styles inside); else an element for a page
  // that carries the script and the styles itself.
  bool standalone = true;
};
std::string flame_svg(const FlameNode& root, const FlameStyle& style);

// report.html for the reports directory `dir` (stats.json; trace.folded and heap.json when
// there); a Failure (kUsage) when it has no stats.json or a file is not what its name says.
std::string html_report(const std::string& dir);

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
};

} // namespace hotscope::cli::report
