// Tab 6: guest tracks (docs/guest.md): each appears among the statistics' threads with an id
// above 2^32, with the batches its runner accepted and rejected; its dropped records are the
// records of rejected batches.
#include "model.hpp"
#include "text.hpp"
#include "view.hpp"

#include <fmt/format.h>

namespace hotscope::cli::console {

Page guests_page(const Model& model) {
  constexpr std::int64_t kFirstTrackId = std::int64_t{1} << 32;
  Page page;
  std::vector<Cells> table{{"Guest track", "Id", "State", "Records", "Kept", "Rejected",
                            "Batches ok", "Batches rejected", "Nesting repairs"}};
  std::vector<std::string> rejections;
  for (const profiles::ThreadStats& thread : model.stats().threads) {
    const std::int64_t id = thread.os_tid;
    if (id < kFirstTrackId) {
      continue;
    }
    const profiles::Records& records = thread.records;
    const profiles::Batches batches = thread.batches.value_or(profiles::Batches{});
    table.push_back({thread.name, fmt::format("{}", id - kFirstTrackId),
                     thread.exited ? "closed" : "open", fmt::format("{}", records.written),
                     fmt::format("{}", records.kept), fmt::format("{}", records.dropped),
                     fmt::format("{}", batches.accepted), fmt::format("{}", batches.rejected),
                     fmt::format("{}", batches.nesting_repairs)});
    if (!batches.last_rejection.empty()) {
      rejections.push_back(
          fmt::format(" {}: last rejected: {}", thread.name, batches.last_rejection));
    }
  }
  if (table.size() == 1) {
    page.fixed.push_back(Line{" no guest in this process: `hotscope vm run` and GuestTrace add one "
                              "(docs/guest.md)",
                              Style::Dim});
    return page;
  }
  const std::vector<std::string> lines = align(table, 0, Glyphs{});
  page.fixed.push_back(Line{lines[0], Style::Heading});
  for (std::size_t i = 1; i < lines.size(); ++i) {
    page.rows.push_back(Line{lines[i]});
  }
  for (const std::string& rejection : rejections) {
    page.rows.push_back(Line{rejection, Style::Alert});
  }
  return page;
}

} // namespace hotscope::cli::console
