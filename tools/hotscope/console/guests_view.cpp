// Tab 6: guest tracks (docs/guest.md): each appears among the statistics' threads with an id
// above 2^32; its dropped records are the records of rejected batches.
#include "model.hpp"
#include "text.hpp"
#include "view.hpp"

#include <fmt/format.h>

namespace hotscope::cli::console {

Page guests_page(const Model& model) {
  constexpr std::int64_t kFirstTrackId = std::int64_t{1} << 32;
  Page page;
  std::vector<Cells> table{{"Guest track", "Id", "State", "Records", "Kept", "Rejected"}};
  for (const nlohmann::json& thread : model.stats().value("threads", nlohmann::json::array())) {
    const std::int64_t id = thread.value("os_tid", std::int64_t{0});
    if (id < kFirstTrackId) {
      continue;
    }
    const nlohmann::json records = thread.value("records", nlohmann::json::object());
    table.push_back({thread.value("name", ""), fmt::format("{}", id - kFirstTrackId),
                     thread.value("exited", false) ? "closed" : "open",
                     fmt::format("{}", records.value("written", std::uint64_t{0})),
                     fmt::format("{}", records.value("kept", std::uint64_t{0})),
                     fmt::format("{}", records.value("dropped", std::uint64_t{0}))});
  }
  if (table.size() == 1) {
    page.fixed.push_back(Line{" no guest in this process: `hotscope vm run` and GuestTrace add one "
                              "(docs/guest.md)",
                              Style::Dim});
    return page;
  }
  page.fixed.push_back(Line{" batches, nesting repairs and diagnostics are not reported by the "
                            "agent: they go to the runner's stderr",
                            Style::Dim});
  const std::vector<std::string> lines = align(table, 0, Glyphs{});
  page.fixed.push_back(Line{lines[0], Style::Heading});
  for (std::size_t i = 1; i < lines.size(); ++i) {
    page.rows.push_back(Line{lines[i]});
  }
  return page;
}

} // namespace hotscope::cli::console
