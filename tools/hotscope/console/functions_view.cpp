// Tab 1: one row per function, its rates over the last interval and its window's figures.
#include "model.hpp"
#include "text.hpp"
#include "view.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>

namespace hotscope::cli::console {
namespace {

struct ColumnInfo {
  Column column;
  std::string_view heading;
  char key;
};

constexpr std::array<ColumnInfo, kColumnCount> kColumns{{
    {Column::Name, "Function", 'n'},
    {Column::CallsRate, "Calls/s", 'c'},
    {Column::TimeRate, "Time/s", 't'},
    {Column::Core, "%Wall", 'o'},
    {Column::Calls, "Calls", 'a'},
    {Column::P50, "P50", 'm'},
    {Column::P95, "P95", 'e'},
    {Column::P99, "P99", 'i'},
    {Column::Max, "Max", 'x'},
    {Column::Self, "Self", 'f'},
    {Column::Total, "Total", 'l'},
    {Column::Cpu, "CPU", 'u'},
    {Column::Alloc, "Alloc", 'b'},
}};

double sort_value(const FunctionRow& row, Column column) {
  switch (column) {
  case Column::CallsRate:
    return row.calls_rate;
  case Column::TimeRate:
    return row.time_rate;
  case Column::Core:
    return row.core;
  case Column::Calls:
    return static_cast<double>(row.calls);
  case Column::P50:
    return static_cast<double>(row.p50_ns);
  case Column::P95:
    return static_cast<double>(row.p95_ns);
  case Column::P99:
    return static_cast<double>(row.p99_ns);
  case Column::Max:
    return static_cast<double>(row.max_ns);
  case Column::Self:
    return static_cast<double>(row.self_ns);
  case Column::Total:
    return static_cast<double>(row.total_ns);
  case Column::Cpu:
    return static_cast<double>(row.cpu_total_ns);
  case Column::Alloc:
    return static_cast<double>(row.alloc_bytes_total);
  case Column::Name:
    break;
  }
  return 0;
}

bool contains_folded(std::string_view text, std::string_view part) {
  return std::search(text.begin(), text.end(), part.begin(), part.end(), [](char a, char b) {
           return std::tolower(static_cast<unsigned char>(a)) ==
                  std::tolower(static_cast<unsigned char>(b));
         }) != text.end();
}

// `sampled`: the process has CPU samples; without, CPU time is not known (not 0).
Cells cells(const FunctionRow& row, bool sampled, bool with_alloc) {
  const auto ns = [](std::uint64_t value) { return duration(static_cast<double>(value)); };
  // A call still open that has allocated has no duration yet.
  const bool timed = row.calls > 0;
  Cells line{row.name,
             per_second(row.calls_rate),
             duration(row.time_rate),
             percent(row.core),
             fmt::format("{}", row.calls),
             timed ? ns(row.p50_ns) : "-",
             timed ? ns(row.p95_ns) : "-",
             timed ? ns(row.p99_ns) : "-",
             timed ? ns(row.max_ns) : "-",
             ns(row.self_ns),
             ns(row.total_ns),
             sampled ? ns(row.cpu_total_ns) : "-"};
  if (with_alloc) {
    line.push_back(bytes(static_cast<double>(row.alloc_bytes_total)));
  }
  return line;
}

} // namespace

char column_key(Column column) {
  return kColumns[static_cast<std::size_t>(column)].key;
}

std::string_view column_heading(Column column) {
  return kColumns[static_cast<std::size_t>(column)].heading;
}

std::optional<Column> column_of_key(int key) {
  for (const ColumnInfo& info : kColumns) {
    if (info.key == key) {
      return info.column;
    }
  }
  return std::nullopt;
}

Page functions_page(const Model& model, ViewState& state, const Glyphs& glyphs,
                    std::size_t name_width) {
  const bool with_alloc = model.has_allocations();
  const bool sampled = model.stats().has_cpu_samples();
  std::vector<const FunctionRow*> shown;
  for (const FunctionRow& row : model.functions()) {
    if (state.filter.empty() || contains_folded(row.name, state.filter)) {
      shown.push_back(&row);
    }
  }
  const Column sort = !with_alloc && state.sort == Column::Alloc ? Column::TimeRate : state.sort;
  std::stable_sort(shown.begin(), shown.end(), [&](const FunctionRow* a, const FunctionRow* b) {
    if (sort == Column::Name) {
      return state.descending ? a->name > b->name : a->name < b->name;
    }
    const double x = sort_value(*a, sort);
    const double y = sort_value(*b, sort);
    return state.descending ? x > y : x < y;
  });

  Cells heading;
  for (const ColumnInfo& info : kColumns) {
    if (info.column != Column::Alloc || with_alloc) {
      const char* arrow =
          state.descending ? (glyphs.unicode ? "▼" : " v") : (glyphs.unicode ? "▲" : " ^");
      heading.push_back(info.column == sort ? fmt::format("{}{}", info.heading, arrow)
                                            : std::string(info.heading));
    }
  }

  Page page;
  std::string summary = fmt::format(" {} functions", model.functions().size());
  if (!state.filter.empty()) {
    summary += fmt::format(", {} matching \"{}\"", shown.size(), state.filter);
  }
  summary += fmt::format("; sorted by {}; rates over the last interval", column_heading(sort));
  page.fixed.push_back(Line{summary, Style::Dim});
  const std::size_t heading_line = page.fixed.size();
  page.fixed.push_back(Line{align({heading}, name_width, glyphs).front(), Style::Heading});
  page.rows.resize(shown.size());
  page.keys.reserve(shown.size());
  for (const FunctionRow* row : shown) {
    page.keys.push_back(row->key);
  }
  if (!shown.empty()) {
    // Thousands of rows, a screenful drawn: only those are formatted (and aligned together).
    page.format = [shown = std::move(shown), heading = std::move(heading), heading_line, sampled,
                   with_alloc, name_width,
                   glyphs](Page& page, std::size_t first, std::size_t count) {
      std::vector<Cells> table{heading};
      table.reserve(count + 1);
      for (std::size_t i = first; i < first + count; ++i) {
        table.push_back(cells(*shown[i], sampled, with_alloc));
      }
      std::vector<std::string> lines = align(table, name_width, glyphs);
      page.fixed[heading_line].text = std::move(lines.front());
      for (std::size_t i = 0; i < count; ++i) {
        page.rows[first + i].text = std::move(lines[i + 1]);
      }
    };
  }
  select_row(page, state);
  if (page.rows.empty()) {
    page.rows.push_back(model.stats().unmodified_program && state.filter.empty()
                            ? unmodified_program_line("functions")
                            : Line{state.filter.empty() ? " no function has been called yet"
                                                        : " no function matches the filter",
                                   Style::Dim});
  }
  return page;
}

} // namespace hotscope::cli::console
