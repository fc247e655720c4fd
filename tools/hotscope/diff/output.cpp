// A comparison as tables (three lines per row: base, new, change; functions or heap sites, then
// queues and locks) and as JSON (docs/diff-and-report.md).
#include "diff.hpp"

#include "export/common.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace hotscope::cli::diff {
namespace {

using exporters::detail::human_bytes;
using exporters::detail::human_duration;

constexpr std::size_t kNameWidth = 48;

// Columns on a terminal: one per code point ("µs" is two bytes, one column).
std::size_t width_of(const std::string& text) {
  return static_cast<std::size_t>(
      std::count_if(text.begin(), text.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

} // namespace

std::string value_text(Unit unit, double value) {
  switch (unit) {
  case Unit::Nanoseconds:
    return human_duration(value);
  case Unit::Bytes:
    return human_bytes(static_cast<std::uint64_t>(std::llround(std::fabs(value))));
  case Unit::Count:
    break;
  }
  // Counts reach 2^64: past what an int64 holds, printed from the double.
  if (value == std::floor(value)) {
    return std::fabs(value) < 9e18 ? fmt::format("{}", static_cast<std::int64_t>(value))
                                   : fmt::format("{:.0f}", value);
  }
  return fmt::format("{:.2f}", value);
}

std::string change_text(Unit unit, const Cell& cell) {
  const double change = cell.change();
  std::string text;
  if (change == 0) {
    text = "=";
  } else if (const std::optional<double> percent = cell.percent()) {
    // Two decimals below 1 %, so that a small change does not read "+0.0%".
    text = std::fabs(*percent) < 1 ? fmt::format("{:+.2f}%", *percent)
                                   : fmt::format("{:+.1f}%", *percent);
  } else {
    text = (change > 0 ? "+" : "-") + value_text(unit, std::fabs(change));
  }
  return cell.significant || change == 0 ? text : "(" + text + ")";
}

namespace {

std::string cut(const std::string& text, std::size_t width) {
  return text.size() <= width ? text : text.substr(0, width - 3) + "...";
}

std::string impact_text(Unit unit, double impact) {
  return impact == 0 ? "=" : (impact > 0 ? "+" : "-") + value_text(unit, std::fabs(impact));
}

// Base, new and change lines of `row`, whose cells are `all`'s, their first column `label`.
void add_lines(const Comparison& comparison, const std::vector<Column>& all, const Row& row,
               const std::string& label, std::vector<std::vector<std::string>>& lines) {
  const bool timing = comparison.kind == profiles::Kind::Stats;
  std::vector<std::string> base{(row.failed.empty() ? "  " : "! ") + cut(label, kNameWidth),
                                "base"};
  std::vector<std::string> now{"", "new"};
  std::vector<std::string> change{"", "change"};
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (!comparison.shows(all[i])) {
      continue;
    }
    const Cell& cell = row.cells[i];
    const bool one_sided = row.side != Side::Both && timing;
    base.push_back(cell.base && !(row.side == Side::NewOnly) ? value_text(all[i].unit, *cell.base)
                                                             : "-");
    now.push_back(cell.now && !(row.side == Side::BaseOnly) ? value_text(all[i].unit, *cell.now)
                                                            : "-");
    change.push_back(one_sided || !cell.base || !cell.now ? "-" : change_text(all[i].unit, cell));
  }
  const Unit impact_unit = timing ? Unit::Nanoseconds : Unit::Bytes;
  base.push_back("");
  now.push_back("");
  const bool totals = comparison.totals && &row == &*comparison.totals;
  change.push_back(totals                       ? ""
                   : row.side == Side::NewOnly  ? "only in new"
                   : row.side == Side::BaseOnly ? "only in base"
                                                : impact_text(impact_unit, row.impact));
  if (!row.failed.empty()) {
    std::string rules;
    for (const std::string& rule : row.failed) {
      rules += rules.empty() ? rule : ", " + rule;
    }
    change.push_back("fails " + rules);
  }
  lines.push_back(std::move(base));
  lines.push_back(std::move(now));
  lines.push_back(std::move(change));
}

// Columns padded to their widest cell, two spaces apart: the name, the side and what follows
// the figures (the rules a row fails) on the left, the figures and the impact on the right.
std::string aligned(const std::vector<std::vector<std::string>>& lines, std::size_t figures) {
  std::vector<std::size_t> widths;
  for (const auto& line : lines) {
    widths.resize(std::max(widths.size(), line.size()), 0);
    for (std::size_t i = 0; i < line.size(); ++i) {
      widths[i] = std::max(widths[i], width_of(line[i]));
    }
  }
  std::string text;
  for (const auto& line : lines) {
    std::string out;
    for (std::size_t i = 0; i < line.size(); ++i) {
      const std::size_t pad = widths[i] - width_of(line[i]);
      const bool left = i < 2 || i >= 2 + figures + 1;
      out += i == 0 ? "" : "  ";
      out += left ? line[i] + std::string(pad, ' ') : std::string(pad, ' ') + line[i];
    }
    out.erase(out.find_last_not_of(' ') + 1);
    text += out + "\n";
  }
  return text;
}

// "parse (parse.cpp:40)": the file without its directories (--json has the whole path), and
// "parse (parse.cpp:40 in libparse.so)" where another row has the same name, file and line.
std::string row_label(const Row& row) {
  if (row.file.empty()) {
    return row.name;
  }
  const std::size_t slash = row.file.rfind('/');
  return fmt::format("{} ({}:{}{})", row.name,
                     slash == std::string::npos ? row.file : row.file.substr(slash + 1), row.line,
                     row.shares_place && !row.module.empty() ? " in " + row.module : "");
}

// `table` as three lines per row under a heading, `subject` its first column's; the heap's
// totals first.
std::string table_text(const Comparison& comparison, const Table& table, const char* subject) {
  std::vector<std::vector<std::string>> lines;
  std::vector<std::string> heading{fmt::format("  {}", subject), ""};
  for (const Column& column : table.columns) {
    if (comparison.shows(column)) {
      heading.emplace_back(column.heading);
    }
  }
  heading.emplace_back("Impact");
  lines.push_back(heading);
  if (comparison.totals) {
    add_lines(comparison, table.columns, *comparison.totals, comparison.totals->name, lines);
  }
  for (const Row& row : table.rows) {
    add_lines(comparison, table.columns, row, row_label(row), lines);
  }
  return aligned(lines, heading.size() - 3);
}

} // namespace

std::string policy_text(const Comparison& comparison) {
  if (comparison.policy.empty()) {
    return "";
  }
  std::size_t held = 0;
  std::string lines;
  for (const Judgement& judgement : comparison.judgements) {
    held += judgement.broken ? 0 : 1;
    if (judgement.broken) {
      lines += fmt::format("{} {}: {} is {} (line {})\n", judgement.warn ? "warns" : "FAILS",
                           judgement.subject, judgement.rule, judgement.value, judgement.line);
    }
  }
  return fmt::format("policy {}: {} of {} rules held\n", comparison.policy, held,
                     comparison.judgements.size()) +
         lines;
}

std::string as_text(const Comparison& comparison) {
  const bool timing = comparison.kind == profiles::Kind::Stats;
  std::string text =
      fmt::format("base: {}  {}\nnew:  {}  {}\n", comparison.base_source, comparison.base_summary,
                  comparison.new_source, comparison.new_summary);
  for (const Rebuilt& object : comparison.rebuilt) {
    text += fmt::format("rebuilt: {} (build id {} in base, {} in new): its functions matched by "
                        "name, file and line\n",
                        object.module, object.base_build_id, object.new_build_id);
  }
  text +=
      timing
          ? "Functions by impact: added self time per typical call (scaled by P50/mean) x calls in "
            "new, largest first.\n"
          : "Allocation sites by impact: the largest growth in bytes (total, at t-gmax or at "
            "t-end), largest first.\n";
  text += timing
              ? fmt::format("A change in parentheses is not significant: too few calls (10; "
                            "20 for P95, 100 for P99), within the noise the two sides' "
                            "spreads and calls imply, or under {:g} % or {:g} ns{} "
                            "(docs/diff-and-report.md).\n",
                            kDriftFloor * 100, kDriftFloorNs,
                            comparison.cpu ? "; CPU: within the noise of the samples' counts" : "")
              : "Frames are matched by function and file.\n";
  if (!comparison.rules.empty()) {
    text += "! marks a row that fails a --fail-on rule.\n";
  }
  const std::vector<Table> tables = comparison.tables();
  text += table_text(comparison, tables.front(), timing ? "Function" : "Site");
  if (comparison.rows.empty()) {
    text += timing ? "(no function on either side)\n" : "(no allocation site on either side)\n";
  }
  for (std::size_t i = 1; i < tables.size(); ++i) {
    if (!tables[i].rows.empty()) {
      const bool queues = &tables[i].rows == &comparison.queues;
      text += fmt::format("\n{} by impact: the {} added wait time, largest first.\n",
                          queues ? "Queues" : "Locks", queues ? "items'" : "waiting threads'");
      text += table_text(comparison, tables[i], queues ? "Queue" : "Lock");
    }
  }
  if (!comparison.rules.empty()) {
    std::size_t failing = 0;
    for (const Row& row : comparison.rows) {
      failing += row.failed.empty() ? 0 : 1;
    }
    failing += comparison.totals && !comparison.totals->failed.empty() ? 1 : 0;
    text += failing == 0 ? "no row fails the --fail-on rules\n"
                         : fmt::format("{} row{} fail{} the --fail-on rules\n", failing,
                                       failing == 1 ? "" : "s", failing == 1 ? "s" : "");
  }
  return text + policy_text(comparison);
}

namespace {

nlohmann::json cell_json(const Cell& cell) {
  nlohmann::json out = nlohmann::json::object();
  out["base"] = cell.base ? nlohmann::json(*cell.base) : nlohmann::json(nullptr);
  out["new"] = cell.now ? nlohmann::json(*cell.now) : nlohmann::json(nullptr);
  out["change"] = cell.base && cell.now ? nlohmann::json(cell.change()) : nlohmann::json(nullptr);
  const std::optional<double> percent = cell.percent();
  out["percent"] = percent && cell.now ? nlohmann::json(*percent) : nlohmann::json(nullptr);
  out["significant"] = cell.significant;
  return out;
}

nlohmann::json row_json(const Comparison& comparison, const std::vector<Column>& all,
                        const Row& row) {
  nlohmann::json out = nlohmann::json::object();
  out["name"] = row.name;
  if (comparison.kind == profiles::Kind::Stats) {
    out["file"] = row.file;
    out["line"] = row.line;
    out["module"] = row.module;
  } else {
    out["stack"] = row.stack;
  }
  out["side"] = row.side == Side::Both ? "both" : row.side == Side::BaseOnly ? "base" : "new";
  out["impact"] = row.impact;
  out["significant"] = row.significant();
  out["fails"] = row.failed;
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (comparison.shows(all[i])) {
      out["columns"][all[i].key] = cell_json(row.cells[i]);
    }
  }
  return out;
}

} // namespace

nlohmann::json as_json(const Comparison& comparison) {
  nlohmann::json out = nlohmann::json::object();
  out["kind"] = comparison.kind == profiles::Kind::Stats ? "stats" : "heap";
  out["base"] = {{"source", comparison.base_source}, {"summary", comparison.base_summary}};
  out["new"] = {{"source", comparison.new_source}, {"summary", comparison.new_summary}};
  if (comparison.kind == profiles::Kind::Stats) {
    out["rebuilt"] = nlohmann::json::array();
    for (const Rebuilt& object : comparison.rebuilt) {
      out["rebuilt"].push_back({{"module", object.module},
                                {"base_build_id", object.base_build_id},
                                {"new_build_id", object.new_build_id}});
    }
  }
  out["rules"] = comparison.rules;
  out["failed"] = comparison.failed();
  if (!comparison.policy.empty()) {
    out["policy"] = {{"file", comparison.policy}, {"judgements", nlohmann::json::array()}};
    for (const Judgement& judgement : comparison.judgements) {
      out["policy"]["judgements"].push_back({{"subject", judgement.subject},
                                             {"rule", judgement.rule},
                                             {"line", judgement.line},
                                             {"value", judgement.value},
                                             {"broken", judgement.broken},
                                             {"warn", judgement.warn}});
    }
  }
  const std::vector<Table> tables = comparison.tables();
  if (comparison.totals) {
    out["totals"] = row_json(comparison, tables.front().columns, *comparison.totals);
  }
  // "rows": the functions or the sites; then "queues" and "locks".
  for (const Table& table : tables) {
    const char* key = &table.rows == &comparison.queues  ? "queues"
                      : &table.rows == &comparison.locks ? "locks"
                                                         : "rows";
    out[key] = nlohmann::json::array();
    for (const Row& row : table.rows) {
      out[key].push_back(row_json(comparison, table.columns, row));
    }
  }
  return out;
}

} // namespace hotscope::cli::diff
