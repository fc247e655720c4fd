// The functions tab's detail pane for the selected function: its kept slowest calls, its latency
// percentiles as bars, its p99 over the last refreshes, its callers and callees in the trace, its
// CPU time and its allocations.
#include "model.hpp"
#include "text.hpp"
#include "view.hpp"

#include <fmt/format.h>

#include <cmath>

namespace hotscope::cli::console {
namespace {

constexpr std::size_t kNeighbours = 4;

// Percentiles span decades: the bars are on a log scale from the minimum to the maximum.
double log_fraction(double value, double low, double high) {
  if (high <= low || value <= low) {
    return value > 0 ? 0.02 : 0;
  }
  return std::log(value / std::max(low, 1.0)) / std::log(high / std::max(low, 1.0));
}

std::string neighbours(const std::vector<std::pair<std::string, std::uint64_t>>& list,
                       std::size_t width) {
  std::string text;
  for (std::size_t i = 0; i < std::min(list.size(), kNeighbours); ++i) {
    text += fmt::format("{}{} ({})", i > 0 ? ", " : "", list[i].first,
                        duration(static_cast<double>(list[i].second)));
  }
  return clip(text.empty() ? "-" : text, width, Glyphs{});
}

// One line on the function's kept calls, from which Enter lists them.
std::string kept_calls_line(const KeptCalls* kept) {
  if (kept == nullptr) {
    return "(asking...)";
  }
  if (kept->unsupported) {
    return "- (the agent has no /v1/slow: an older hotscope)";
  }
  if (kept->calls.empty()) {
    return kept->per_function == 0 ? "- (HOTSCOPE_SLOWEST=0 keeps none)" : "- (no call ended yet)";
  }
  const KeptCall& slowest = kept->calls.front();
  return fmt::format("{}, the slowest {} on {} at {}; Enter lists them", kept->calls.size(),
                     duration(static_cast<double>(slowest.duration_ns)), slowest.thread,
                     time_of_day(slowest.start_unix_ns));
}

} // namespace

Page function_detail(const Model& model, const ViewState& state, const Glyphs& glyphs,
                     std::size_t width) {
  Page page;
  const FunctionRow* row = model.function(state.selected[static_cast<std::size_t>(Tab::Functions)]);
  if (row == nullptr) {
    return page;
  }
  const std::size_t bar_width = width > 60 ? std::min<std::size_t>(width - 40, 50) : 20;
  page.detail.push_back(
      Line{clip(fmt::format(" {}  {}:{}  ({} calls)", row->name, row->file, row->line, row->calls),
                width, glyphs),
           Style::Heading});
  // Right under the heading: the pane may be cut on a short terminal.
  const KeptCalls* kept = model.kept_calls(row->name);
  page.detail.push_back(Line{clip("  kept calls: " + kept_calls_line(kept), width, glyphs)});
  page.detail_list = kept != nullptr && !kept->calls.empty();
  const std::array<std::pair<const char*, std::uint64_t>, 7> latency{{{"min", row->min_ns},
                                                                      {"p50", row->p50_ns},
                                                                      {"p90", row->p90_ns},
                                                                      {"p95", row->p95_ns},
                                                                      {"p99", row->p99_ns},
                                                                      {"p99.9", row->p999_ns},
                                                                      {"max", row->max_ns}}};
  for (const auto& [label, ns] : latency) {
    page.detail.push_back(
        Line{fmt::format("  {:<6}{:>11}  {}", label, duration(static_cast<double>(ns)),
                         bar(log_fraction(static_cast<double>(ns), static_cast<double>(row->min_ns),
                                          static_cast<double>(row->max_ns)),
                             bar_width, glyphs))});
  }
  const std::deque<double>* history = model.p99_history(row->key);
  page.detail.push_back(Line{fmt::format("  p99 over the last refreshes: {}",
                                         history ? sparkline(*history, bar_width, glyphs) : "")});
  page.detail.push_back(
      Line{"  callers: " + (model.has_flame() ? neighbours(model.callers(row->name), width - 12)
                                              : std::string("(asking for the trace...)"))});
  page.detail.push_back(
      Line{"  callees: " + (model.has_flame() ? neighbours(model.callees(row->name), width - 12)
                                              : std::string("(asking for the trace...)"))});
  if (model.stats().has_cpu_samples()) {
    // Inclusive CPU over inclusive wall time: how much of its time it computed.
    const double share = row->total_ns > 0 ? 100.0 * static_cast<double>(row->cpu_total_ns) /
                                                 static_cast<double>(row->total_ns)
                                           : 0;
    page.detail.push_back(Line{fmt::format("  CPU: self {}, with callees {} ({} of its wall time)",
                                           duration(static_cast<double>(row->cpu_self_ns)),
                                           duration(static_cast<double>(row->cpu_total_ns)),
                                           row->total_ns > 0 ? percent(share) : "-")});
  }
  if (model.has_allocations()) {
    page.detail.push_back(Line{
        fmt::format("  allocations: self {} in {} blocks, with callees {} in {} blocks",
                    bytes(static_cast<double>(row->alloc_bytes_self)), row->alloc_blocks_self,
                    bytes(static_cast<double>(row->alloc_bytes_total)), row->alloc_blocks_total)});
  }
  return page;
}

} // namespace hotscope::cli::console
