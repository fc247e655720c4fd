// Tab 3: the heap profiler's view: live and peak, the top sites by live bytes and by bytes
// allocated per second, and the sites whose live bytes kept growing (leak candidates).
#include "model.hpp"
#include "text.hpp"
#include "view.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace hotscope::cli::console {
namespace {

constexpr std::size_t kSitesPerList = 10;
// Refreshes in a row a site's live bytes must grow to be a leak candidate.
constexpr int kGrowingRefreshes = 3;

void site_table(Page& page, const std::string& title, const std::vector<const HeapSite*>& sites,
                std::size_t width) {
  page.rows.push_back(Line{title, Style::Heading});
  if (sites.empty()) {
    page.rows.push_back(Line{"   none", Style::Dim});
    return;
  }
  std::vector<Cells> table{{"Live", "Blocks", "Alloc/s", "Allocated", "Site"}};
  for (const HeapSite* site : sites) {
    table.push_back({bytes(static_cast<double>(site->live_bytes)),
                     fmt::format("{}", site->live_blocks), bytes(site->bytes_rate) + "/s",
                     bytes(static_cast<double>(site->total_bytes)), site->where});
  }
  std::vector<Cells> numbers = table;
  for (Cells& cells : numbers) {
    cells.pop_back();
    cells.insert(cells.begin(), "");
  }
  const std::vector<std::string> lines = align(numbers, 0, Glyphs{});
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::string line = lines[i] + "  " + table[i].back();
    page.rows.push_back(
        Line{width > 0 ? clip(line, width, Glyphs{}) : line, i == 0 ? Style::Dim : Style::Normal});
  }
}

} // namespace

Page memory_page(const Model& model, ViewState& state, const Glyphs& glyphs, std::size_t width) {
  Page page;
  const Memory& memory = model.memory();
  if (!memory.available) {
    page.fixed.push_back(Line{
        " " + (memory.hint.empty() ? std::string("asking for the heap profile...") : memory.hint),
        Style::Alert});
    return page;
  }
  page.fixed.push_back(Line{
      fmt::format(" live {} in {} blocks   at the peak of live bytes (t-gmax) {} in {} blocks   "
                  "allocated {} in the window",
                  bytes(static_cast<double>(memory.live_bytes)), memory.live_blocks,
                  bytes(static_cast<double>(memory.peak_bytes)), memory.peak_blocks,
                  bytes(static_cast<double>(memory.total_bytes)))});
  page.fixed.push_back(
      Line{fmt::format(" live bytes over the session: {}",
                       sparkline(memory.live_history, width > 40 ? width - 40 : 60, glyphs)),
           Style::Dim});

  std::vector<const HeapSite*> sites;
  for (const HeapSite& site : memory.sites) {
    sites.push_back(&site);
  }
  const auto top = [&](auto better) {
    std::vector<const HeapSite*> list = sites;
    std::stable_sort(list.begin(), list.end(), better);
    list.resize(std::min(list.size(), kSitesPerList));
    return list;
  };
  std::vector<const HeapSite*> live =
      top([](auto a, auto b) { return a->live_bytes > b->live_bytes; });
  std::erase_if(live, [](const HeapSite* site) { return site->live_bytes == 0; });
  std::vector<const HeapSite*> busy =
      top([](auto a, auto b) { return a->bytes_rate > b->bytes_rate; });
  std::erase_if(busy, [](const HeapSite* site) { return site->bytes_rate <= 0; });
  std::vector<const HeapSite*> growing;
  for (const HeapSite* site : sites) { // by live bytes already
    if (site->growing >= kGrowingRefreshes && growing.size() < kSitesPerList) {
      growing.push_back(site);
    }
  }
  site_table(page, " Top sites by live bytes", live, width);
  site_table(page, " Top sites by bytes allocated per second", busy, width);
  site_table(page,
             fmt::format(" Leak candidates: live bytes grew at each of the last {} refreshes",
                         kGrowingRefreshes),
             growing, width);
  // Every row selectable: the arrows scroll the lists on a short terminal.
  for (std::size_t i = 0; i < page.rows.size(); ++i) {
    page.keys.push_back(fmt::format("{}", i));
  }
  select_row(page, state);
  return page;
}

} // namespace hotscope::cli::console
