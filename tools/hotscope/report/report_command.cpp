#include "report.hpp"

#include "agent_client.hpp"
#include "agent_commands.hpp"
#include "export/formats.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>

namespace hotscope::cli::report {

ReportCommands::ReportCommands(CLI::App& app) {
  using exporters::Format;
  const auto file = [](Format format) { return exporters::format_info(format).file; };
  report_ = app.add_subcommand(
      "report", "Write one self-contained HTML page for a reports directory: functions, flame "
                "graphs, threads, heap sites");
  report_
      ->add_option("dir", input_,
                   fmt::format("The directory hotscope wrote its reports into (HOTSCOPE_OUT: {}, "
                               "{}, {}, {})",
                               file(Format::StatsJson), file(Format::Folded),
                               file(Format::CpuFolded), file(Format::Dhat)))
      ->required();
  report_->add_option("-o,--output", output_, "Write to FILE (default DIR/report.html)");
  report_->footer("Exit codes: 0 written, 2 bad input, 8 the output cannot be written "
                  "(docs/diff-and-report.md).");
  flame_ = app.add_subcommand(
      "flame", fmt::format("Draw a flame graph as an interactive SVG: {} (time by stack), {} "
                           "(CPU samples by stack) or {} (bytes by allocation stack)",
                           file(Format::Folded), file(Format::CpuFolded), file(Format::Dhat)));
  flame_
      ->add_option("file", input_,
                   fmt::format("{} (or any folded stacks), or a {}", file(Format::Folded),
                               file(Format::Dhat)))
      ->required();
  flame_->add_option("-o,--output", output_, "Write to FILE instead of standard output");
  flame_->add_option("--title", title_, "The title drawn on top (default: the file's name)");
  flame_
      ->add_option("--bytes", heap_bytes_,
                   fmt::format("{}: weigh stacks by their bytes in total, at t-gmax (the peak) or "
                               "at t-end",
                               file(Format::Dhat)))
      ->check(CLI::IsMember({"total", "gmax", "end"}))
      ->capture_default_str();
  flame_
      ->add_option("--minwidth", min_width_,
                   "Merge frames narrower than PX pixels into their callers (as flamegraph.pl); "
                   "past 20,000 frames the narrowest are merged whatever it is")
      ->check(CLI::Range(0.0, 1200.0))
      ->capture_default_str();
  flame_->footer("Exit codes: 0 written, 2 bad input, 8 the output cannot be written "
                 "(docs/diff-and-report.md).");
}

std::optional<int> ReportCommands::run() const {
  try {
    if (report_->parsed()) {
      const std::string output =
          output_.empty() ? (std::filesystem::path(input_) / "report.html").string() : output_;
      write_output(output, html_report(input_));
      return kOk;
    }
    if (flame_->parsed()) {
      return run_flame();
    }
    return std::nullopt;
  } catch (const Failure& failure) {
    std::fprintf(stderr, "hotscope: %s\n", failure.what());
    return failure.code;
  }
}

int ReportCommands::run_flame() const {
  const std::string text = profiles::read_text(input_);
  const std::string name = std::filesystem::path(input_).filename().string();
  FlameStyle style{title_.empty() ? name : title_, "", FlameUnit::Nanoseconds, true};
  // JSON (or what starts like it, cut short) is a profile: only a heap.json has stacks.
  std::string heap_text;
  profiles::StackLines stacks;
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && (text[first] == '{' || text[first] == '[')) {
    profiles::Profile heap = profiles::classify(profiles::parse_json(text, input_), input_);
    heap.text_bytes = text.size();
    if (heap.kind != profiles::Kind::Heap) {
      throw Failure(kUsage, fmt::format("{} is {}, which has no stacks: draw the {} beside it",
                                        input_, profiles::kind_name(heap.kind),
                                        exporters::format_info(exporters::Format::Folded).file));
    }
    const HeapBytes which = heap_bytes_ == "gmax"  ? HeapBytes::AtGmax
                            : heap_bytes_ == "end" ? HeapBytes::AtEnd
                                                   : HeapBytes::Total;
    heap_text = heap_stacks(profiles::heap_sites(heap), which);
    stacks = profiles::folded_stacks(heap_text, input_, kHeapSeparator);
    style.unit = FlameUnit::Bytes;
    style.subtitle =
        fmt::format("bytes allocated by stack ({})", heap_bytes_ == "gmax"  ? "at t-gmax"
                                                     : heap_bytes_ == "end" ? "at t-end"
                                                                            : "total");
  } else {
    stacks = profiles::folded_stacks(text, input_);
    // cpu.folded counts samples; other folded stacks, trace.folded's among them, nanoseconds.
    const bool samples = name == exporters::format_info(exporters::Format::CpuFolded).file;
    style.unit = samples ? FlameUnit::Samples : FlameUnit::Nanoseconds;
    style.subtitle =
        samples ? "CPU samples by stack" : "self time by stack (folded stacks, counts in ns)";
    if (stacks.starts.empty()) {
      throw Failure(kUsage,
                    fmt::format("{} holds no folded stacks (lines 'frame;frame count') and "
                                "is not a {}",
                                input_, exporters::format_info(exporters::Format::Dhat).file));
    }
  }
  style.subtitle += "; click to zoom, Search to highlight";
  write_output(output_, flame_svg(flame_graph(stacks, min_width_), style));
  return kOk;
}

} // namespace hotscope::cli::report
