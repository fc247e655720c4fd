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
  return fmt::format("{} {}:{}", code(row.name),
                     code(slash == std::string::npos ? row.file : row.file.substr(slash + 1)),
                     row.line);
}

// One figure of one row: what moved, from what to what.
struct Line {
  const Row* row;
  std::size_t column;
};

// Whether a significant change of `column` is a regression: more time, bytes or blocks. A change
// in calls is neither better nor worse.
bool grows_worse(const Column& column) {
  return std::string_view(column.key) != "calls";
}

std::string figures_cell(const Column& column, const Cell& cell) {
  const auto side = [&](const std::optional<double>& value) {
    return value ? value_text(column.unit, *value) : std::string("-");
  };
  return side(cell.base) + " → " + side(cell.now);
}

std::string noise_cell(const Column& column, const Row& row, const Cell& cell) {
  if (cell.significant) {
    return "beyond noise";
  }
  const double calls = std::min(row.cells[0].base.value_or(0), row.cells[0].now.value_or(0));
  if (row.side == Side::Both && calls < static_cast<double>(column.min_calls) &&
      column.noise != Noise::Exact) {
    return fmt::format("too few calls (< {})", column.min_calls);
  }
  return row.side == Side::Both      ? "within noise"
         : row.side == Side::NewOnly ? "only in new"
                                     : "only in base";
}

void table(std::string& out, const Comparison& comparison, const std::vector<Line>& lines) {
  const std::vector<Column>& all = columns(comparison.kind);
  out += fmt::format("| {} | Figure | Base → New | Change | Significance |\n"
                     "| --- | --- | ---: | ---: | --- |\n",
                     comparison.kind == profiles::Kind::Stats ? "Function" : "Heap site");
  for (std::size_t i = 0; i < std::min(lines.size(), kMaxLines); ++i) {
    const Column& column = all[lines[i].column];
    const Cell& cell = lines[i].row->cells[lines[i].column];
    out += fmt::format("| {} | {} | {} | {} | {} |\n", row_name(comparison, *lines[i].row),
                       column.key, figures_cell(column, cell),
                       cell.base && cell.now ? change_text(column.unit, cell) : "-",
                       noise_cell(column, *lines[i].row, cell));
  }
  if (lines.size() > kMaxLines) {
    out += fmt::format("\n{} more not shown (`hotscope diff --json` has every row).\n",
                       lines.size() - kMaxLines);
  }
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
  const std::vector<Column>& all = columns(comparison.kind);
  std::vector<Line> regressions, improvements, rest;
  std::vector<const Row*> rows;
  if (comparison.totals) {
    rows.push_back(&*comparison.totals);
  }
  for (const Row& row : comparison.rows) {
    rows.push_back(&row);
  }
  for (const Row* row : rows) {
    bool moved = false;
    for (std::size_t i = 0; i < all.size(); ++i) {
      const Cell& cell = row->cells[i];
      if (!comparison.shows(all[i]) || !cell.significant || !cell.base || !cell.now) {
        continue;
      }
      moved = true;
      const bool worse = cell.change() > 0;
      (!grows_worse(all[i]) ? rest : worse ? regressions : improvements).push_back({row, i});
    }
    if (!moved) {
      // The headline figure of a row that did not move: the mean call, or the bytes in total.
      rest.push_back({row, comparison.kind == profiles::Kind::Stats ? 1U : 0U});
    }
  }
  std::string out = verdict(comparison, regressions.size(), improvements.size());
  out += fmt::format("\nBase: {} {}  \nNew: {} {}\n", code(comparison.base_source),
                     comparison.base_summary, code(comparison.new_source), comparison.new_summary);
  if (!regressions.empty()) {
    out += "\n#### Regressions\n\n";
    table(out, comparison, regressions);
  }
  if (!improvements.empty()) {
    out += "\n#### Improvements\n\n";
    table(out, comparison, improvements);
  }
  if (!comparison.judgements.empty()) {
    policy_section(out, comparison);
  }
  if (!rest.empty()) {
    out += fmt::format("\n<details><summary>{} not moved beyond noise</summary>\n\n",
                       plural(rest.size(), "other figure", "other figures"));
    table(out, comparison, rest);
    out += "\n</details>\n";
  }
  return out;
}

} // namespace hotscope::cli::diff
