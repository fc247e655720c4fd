// Tab 4: the process's queues: depth, push and pop rates, time in the queue, who pushes and
// who pops (the `queues` array of the statistics, docs/formats-output.md).
#include "model.hpp"
#include "text.hpp"
#include "view.hpp"

#include <fmt/format.h>

namespace hotscope::cli::console {
namespace {

std::string names(const nlohmann::json& list) {
  std::string text;
  for (const nlohmann::json& name : list) {
    if (!text.empty()) {
      text += ',';
    }
    text += name.is_string() ? name.get<std::string>() : std::string("?");
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
  for (const QueueRow& row : queues) {
    const nlohmann::json& q = row.fields;
    const auto ns = [&](const char* key) { return duration(q.value(key, 0.0)); };
    const std::uint64_t capacity = q.value("capacity", std::uint64_t{0});
    table.push_back({q.value("name", ""), fmt::format("{}", q.value("depth", std::uint64_t{0})),
                     fmt::format("{}", q.value("max_depth", std::uint64_t{0})),
                     capacity == 0 ? "-" : fmt::format("{}", capacity), per_second(row.push_rate),
                     per_second(row.pop_rate), ns("wait_p50_ns"), ns("wait_p99_ns"),
                     ns("wait_max_ns"),
                     // Nothing waits: no age to show (a 0 would read as an item just pushed).
                     q.value("pending", std::uint64_t{0}) == 0 ? "-" : ns("oldest_pending_ns")});
    threads.push_back(names(q.value("push_threads", nlohmann::json::array())) + " -> " +
                      names(q.value("pop_threads", nlohmann::json::array())));
  }
  const std::vector<std::string> lines = align(table, 0, Glyphs{});
  page.fixed.push_back(Line{lines[0] + "  " + threads[0], Style::Heading});
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const nlohmann::json& q = queues[i - 1].fields;
    const std::uint64_t capacity = q.value("capacity", std::uint64_t{0});
    const bool full = capacity > 0 && q.value("depth", std::uint64_t{0}) >= capacity;
    page.rows.push_back(Line{lines[i] + "  " + threads[i], full ? Style::Alert : Style::Normal});
  }
  return page;
}

} // namespace hotscope::cli::console
