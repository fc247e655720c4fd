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
  using Json = nlohmann::json;
  const auto count = [](const Json& object, const char* key) {
    return fmt::format("{}", object.value(key, std::uint64_t{0}));
  };
  Page page;
  std::vector<Cells> table{{"Guest track", "Id", "State", "Records", "Kept", "Rejected",
                            "Batches ok", "Batches rejected", "Nesting repairs"}};
  std::vector<std::string> rejections;
  for (const Json& thread : model.stats().value("threads", Json::array())) {
    const std::int64_t id = thread.value("os_tid", std::int64_t{0});
    if (id < kFirstTrackId) {
      continue;
    }
    const Json records = thread.value("records", Json::object());
    const Json batches = thread.value("batches", Json::object());
    const std::string name = thread.value("name", "");
    table.push_back({name, fmt::format("{}", id - kFirstTrackId),
                     thread.value("exited", false) ? "closed" : "open", count(records, "written"),
                     count(records, "kept"), count(records, "dropped"), count(batches, "accepted"),
                     count(batches, "rejected"), count(batches, "nesting_repairs")});
    if (const std::string last = batches.value("last_rejection", ""); !last.empty()) {
      rejections.push_back(fmt::format(" {}: last rejected: {}", name, last));
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
