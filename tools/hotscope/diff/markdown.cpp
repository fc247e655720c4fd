// A comparison as Markdown for a pull-request comment (docs/ci.md, "The comment"): a verdict
// line, the regressions beyond noise, the improvements, the policy's broken rules, and the rest
// in a <details> block. Rows keep the comparison's order (impact, then the files' order): the same
// files give the same bytes, so a bot can skip an update that changes nothing.
#include "diff.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace hotscope::cli::diff {
namespace {

// Lines per section: a comment has a size limit, and a reviewer reads the first few.
constexpr std::size_t kMaxLines = 30;
constexpr std::size_t kMaxName = 80;

// `text` in a code span inside a table cell: no backtick, no pipe, no line break, cut.
std::string code(const std::string& text) {
  std::string out;
  for (const char c : text.size() > kMaxName ? text.substr(0, kMaxName - 3) + "..." : text) {
    out += c == '`'    ? std::string("'")
           : c == '|'  ? std::string("\\|")
           : c == '\n' ? " "
                       : std::string(1, c);
  }
  return "`" + out + "`";
}

std::string row_name(const Comparison& comparison, const Row& row) {
  if (comparison.kind != profiles::Kind::Stats || row.file.empty()) {
    return code(row.name);
  }
  const std::size_t slash = row.file.rfind('/');
  return fmt::format("{} {}:{}{}", code(row.name),
                     code(slash == std::string::npos ? row.file : row.file.substr(slash + 1)),
                     row.line,
                     row.shares_place && !row.module.empty() ? " in " + code(row.module) : "");
}

// One figure of one row of a table: what moved, from what to what.
struct Line {
  const Table* table;
  const Row* row;
  std::size_t column;
};

std::string figures_cell(const Column& column, const Cell& cell) {
  const auto side = [&](const std::optional<double>& value) {
    return value ? value_text(column.unit, *value) : std::string("-");
  };
  return side(cell.base) + " → " + side(cell.now);
}

std::string noise_cell(const Table& table, const Column& column, const Row& row, const Cell& cell) {
  if (cell.significant) {
    return "beyond noise";
  }
  // A function's first cell is its calls (a queue's or a lock's count of waits is not a cell).
  const double calls = std::min(row.cells[0].base.value_or(0), row.cells[0].now.value_or(0));
  if (std::string_view(table.subject) == "function" && row.side == Side::Both &&
      calls < static_cast<double>(column.min_calls) && column.noise != Noise::Exact) {
    return fmt::format("too few calls (< {})", column.min_calls);
  }
  return row.side == Side::Both      ? "within noise"
         : row.side == Side::NewOnly ? "only in new"
                                     : "only in base";
}

// The lines of one table (their first column `subject`: "Function", "Queue"...), at most
// kMaxLines.
void table(std::string& out, const Comparison& comparison, const std::string& subject,
           const std::vector<Line>& lines) {
  out += fmt::format("| {} | Figure | Base → New | Change | Significance |\n"
                     "| --- | --- | ---: | ---: | --- |\n",
                     subject);
  for (std::size_t i = 0; i < std::min(lines.size(), kMaxLines); ++i) {
    const Column& column = lines[i].table->columns[lines[i].column];
    const Cell& cell = lines[i].row->cells[lines[i].column];
    out += fmt::format("| {} | {} | {} | {} | {} |\n", row_name(comparison, *lines[i].row),
                       column.key, figures_cell(column, cell),
                       cell.base && cell.now ? change_text(column.unit, cell) : "-",
                       noise_cell(*lines[i].table, column, *lines[i].row, cell));
  }
  if (lines.size() > kMaxLines) {
    out += fmt::format("\n{} more not shown (`hotscope diff --json` has every row).\n",
                       lines.size() - kMaxLines);
  }
}

// One table per kind of row that has lines (functions, queues, locks; heap sites), in that order.
void tables(std::string& out, const Comparison& comparison, const std::vector<Line>& lines) {
  const Table* current = nullptr;
  std::vector<Line> part;
  const auto flush = [&] {
    if (!part.empty()) {
      std::string subject = current->subject;
      subject[0] = static_cast<char>(subject[0] - 'a' + 'A');
      out += current == lines.front().table ? "" : "\n";
      table(out, comparison, subject, part);
      part.clear();
    }
  };
  for (const Line& line : lines) {
    if (line.table != current) {
      flush();
      current = line.table;
    }
    part.push_back(line);
  }
  flush();
}

std::string plural(std::size_t count, const char* one, const char* many) {
  return fmt::format("{} {}", count, count == 1 ? one : many);
}

// The policy's broken rules (warnings too), and how many held.
void policy_section(std::string& out, const Comparison& comparison) {
  std::vector<const Judgement*> broken;
  for (const Judgement& judgement : comparison.judgements) {
    if (judgement.broken) {
      broken.push_back(&judgement);
    }
  }
  out += fmt::format("\n**Policy** {}: {} of {} rules held.\n", code(comparison.policy),
                     comparison.judgements.size() - broken.size(), comparison.judgements.size());
  if (broken.empty()) {
    return;
  }
  out += "\n| | Subject | Rule | Value | Line |\n| --- | --- | --- | ---: | ---: |\n";
  for (std::size_t i = 0; i < std::min(broken.size(), kMaxLines); ++i) {
    out += fmt::format("| {} | {} | {} | {} | {} |\n", broken[i]->warn ? "warns" : "**fails**",
                       code(broken[i]->subject), code(broken[i]->rule), broken[i]->value,
                       broken[i]->line);
  }
  if (broken.size() > kMaxLines) {
    out += fmt::format("\n{} more not shown.\n", broken.size() - kMaxLines);
  }
}

std::string verdict(const Comparison& comparison, std::size_t regressions,
                    std::size_t improvements) {
  std::size_t fails = 0, warns = 0, rule_rows = 0;
  for (const Judgement& judgement : comparison.judgements) {
    fails += judgement.fails() ? 1 : 0;
    warns += judgement.broken && judgement.warn ? 1 : 0;
  }
  for (const Row& row : comparison.rows) {
    rule_rows += row.failed.empty() ? 0 : 1;
  }
  std::string why =
      fmt::format("{} beyond noise, {}", plural(regressions, "regression", "regressions"),
                  plural(improvements, "improvement", "improvements"));
  if (!comparison.judgements.empty()) {
    why += fmt::format("; policy: {} broken, {}", fails, plural(warns, "warning", "warnings"));
  }
  if (!comparison.rules.empty()) {
    why += fmt::format("; --fail-on: {} failing", plural(rule_rows, "row", "rows"));
  }
  return fmt::format("**hotscope: {}** — {}.\n", comparison.failed() ? "fails" : "passes", why);
}

} // namespace

std::string as_markdown(const Comparison& comparison) {
  std::vector<Line> regressions, improvements, rest;
  const std::vector<Table> all_tables = comparison.tables();
  for (const Table& table : all_tables) {
    std::vector<const Row*> rows;
    if (comparison.totals) {
      rows.push_back(&*comparison.totals);
    }
    for (const Row& row : table.rows) {
      rows.push_back(&row);
    }
    for (const Row* row : rows) {
      bool moved = false;
      for (std::size_t i = 0; i < table.columns.size(); ++i) {
        const Cell& cell = row->cells[i];
        const Column& column = table.columns[i];
        if (!comparison.shows(column) || !cell.significant || !cell.base || !cell.now) {
          continue;
        }
        moved = true;
        // More time, bytes, blocks, depth or contention is worse; more calls neither.
        (column.neutral      ? rest
         : cell.change() > 0 ? regressions
                             : improvements)
            .push_back({&table, row, i});
      }
      if (!moved) {
        rest.push_back({&table, row, table.headline});
      }
    }
  }
  std::string out = verdict(comparison, regressions.size(), improvements.size());
  out += fmt::format("\nBase: {} {}  \nNew: {} {}\n", code(comparison.base_source),
                     comparison.base_summary, code(comparison.new_source), comparison.new_summary);
  for (const Rebuilt& object : comparison.rebuilt) {
    out += fmt::format("Rebuilt: {} (build id {} in base, {} in new)  \n", code(object.module),
                       code(object.base_build_id), code(object.new_build_id));
  }
  if (!regressions.empty()) {
    out += "\n#### Regressions\n\n";
    tables(out, comparison, regressions);
  }
  if (!improvements.empty()) {
    out += "\n#### Improvements\n\n";
    tables(out, comparison, improvements);
  }
  if (!comparison.judgements.empty()) {
    policy_section(out, comparison);
  }
  if (!rest.empty()) {
    out += fmt::format("\n<details><summary>{} not moved beyond noise</summary>\n\n",
                       plural(rest.size(), "other figure", "other figures"));
    tables(out, comparison, rest);
    out += "\n</details>\n";
  }
  return out;
}

} // namespace hotscope::cli::diff
