// Tab 4: the process's queues: depth, push and pop rates, time in the queue, who pushes and
// who pops (the `queues` array of the statistics, docs/formats-output.md).
#include "model.hpp"
#include "text.hpp"
#include "view.hpp"

#include <fmt/format.h>

namespace hotscope::cli::console {
namespace {

std::string names(const std::vector<std::string>& list) {
  std::string text;
  for (const std::string& name : list) {
    if (!text.empty()) {
      text += ',';
    }
    text += name;
  }
  return text.empty() ? "-" : text;
}

} // namespace

Page queues_page(const Model& model) {
  Page page;
  const std::vector<QueueRow>& queues = model.queues();
  if (!model.stats().queues) {
    page.fixed.push_back(
        Line{" this process's agent reports no queues (an older hotscope)", Style::Alert});
    return page;
  }
  if (queues.empty() && model.stats().unmodified_program) {
    page.fixed.push_back(unmodified_program_line("queues"));
    return page;
  }
  if (queues.empty()) {
    page.fixed.push_back(Line{" no queue in this process: HOTSCOPE_QUEUE_PUSH(name, item) and "
                              "HOTSCOPE_QUEUE_POP(name, item) report one",
                              Style::Dim});
    return page;
  }
  page.fixed.push_back(Line{" rates over the last interval; wait = time in the queue", Style::Dim});
  std::vector<Cells> table{
      {"Queue", "Depth", "Max", "Cap", "Push/s", "Pop/s", "Wait p50", "p99", "max", "Oldest"}};
  // The threads last, left-aligned: lists of names vary in length.
  std::vector<std::string> threads{"Pushed by -> popped by"};
  for (const QueueRow& q : queues) {
    const auto ns = [](std::uint64_t value) { return duration(static_cast<double>(value)); };
    table.push_back({q.name, fmt::format("{}", q.depth), fmt::format("{}", q.max_depth),
                     q.capacity == 0 ? "-" : fmt::format("{}", q.capacity), per_second(q.push_rate),
                     per_second(q.pop_rate), ns(q.wait_p50_ns), ns(q.wait_p99_ns),
                     ns(q.wait_max_ns),
                     // Nothing waits: no age to show (a 0 would read as an item just pushed).
                     q.pending == 0 ? "-" : ns(q.oldest_pending_ns)});
    threads.push_back(names(q.push_threads) + " -> " + names(q.pop_threads));
  }
  const std::vector<std::string> lines = align(table, 0, Glyphs{});
  page.fixed.push_back(Line{lines[0] + "  " + threads[0], Style::Heading});
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const QueueRow& q = queues[i - 1];
    const bool full = q.capacity > 0 && q.depth >= q.capacity;
    page.rows.push_back(Line{lines[i] + "  " + threads[i], full ? Style::Alert : Style::Normal});
  }
  return page;
}

} // namespace hotscope::cli::console
