// The policy file read with toml++ and its rules judged on a comparison's rows: functions, queues
// and locks, or heap sites (docs/ci.md, "The policy file").
#include "policy.hpp"

#include "agent_client.hpp"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <fnmatch.h>

#include <algorithm>
#include <string_view>

namespace hotscope::cli::policy {
namespace {

using diff::Column;
using diff::Unit;

const std::vector<Column>& figures(Section section) {
  switch (section) {
  case Section::Functions:
    return diff::columns(profiles::Kind::Stats);
  case Section::Sites:
    return diff::columns(profiles::Kind::Heap);
  case Section::Queues:
    return diff::queue_columns();
  case Section::Locks:
    break;
  }
  return diff::lock_columns();
}

constexpr std::string_view kSections[] = {"functions", "sites", "queues", "locks"};

// A figure's key in the file: the comparison's column key, "_per_call" added for the columns
// that are per call ("alloc_bytes_per_call").
std::string figure_name(const Column& column) {
  const std::string_view heading = column.heading;
  const bool per_call = heading.size() > 5 && heading.substr(heading.size() - 5) == "/call";
  return std::string(column.key) + (per_call ? "_per_call" : "");
}

std::string figure_names(Section section) {
  std::string names;
  for (const Column& column : figures(section)) {
    names += (names.empty() ? "" : ", ") + figure_name(column);
  }
  return names;
}

[[noreturn]] void bad(const std::string& path, std::uint32_t line, const std::string& why) {
  throw Failure(kUsage,
                fmt::format("{}:{}: {} (docs/ci.md, \"The policy file\")", path, line, why));
}

// `figure = "OP AMOUNT"`: OP one of <, <=, ==, >=, >; AMOUNT as in --fail-on
// (diff::parse_amount), a percent only in a rule on a change.
Budget parse_budget(const std::string& path, const std::string& key, const toml::node& node,
                    std::size_t figure, bool change, const Column& column) {
  Budget budget;
  budget.line = static_cast<int>(node.source().begin.line);
  budget.figure = figure;
  budget.change = change;
  const std::optional<std::string> text = node.value<std::string>();
  if (!text) {
    bad(path, budget.line, fmt::format("{}: a rule is a string such as \"< 2ms\"", key));
  }
  budget.text = fmt::format("{} = \"{}\"", key, *text);
  static constexpr std::pair<std::string_view, Op> kOps[] = {{"<=", Op::LessEqual},
                                                             {">=", Op::GreaterEqual},
                                                             {"==", Op::Equal},
                                                             {"<", Op::Less},
                                                             {">", Op::Greater}};
  const std::string_view rest = std::string_view(*text).substr(
      text->find_first_not_of(" \t") == std::string::npos ? text->size()
                                                          : text->find_first_not_of(" \t"));
  const auto op = std::find_if(std::begin(kOps), std::end(kOps), [&](const auto& candidate) {
    return rest.starts_with(candidate.first);
  });
  if (op == std::end(kOps)) {
    bad(path, budget.line, fmt::format("{}: starts with none of <, <=, ==, >=, >", budget.text));
  }
  budget.op = op->second;
  budget.amount = diff::parse_amount(rest.substr(op->first.size()), column);
  if (!budget.amount.error.empty()) {
    bad(path, budget.line, fmt::format("{}: {}", budget.text, budget.amount.error));
  }
  if (budget.amount.percent && !change) {
    bad(path, budget.line,
        fmt::format("{}: a percent is a change: write {}_change", budget.text, key));
  }
  return budget;
}

Target read_target(const std::string& path, Section section, const std::string& pattern,
                   const toml::table& table) {
  Target target;
  target.section = section;
  target.pattern = pattern;
  target.line = static_cast<int>(table.source().begin.line);
  const std::vector<Column>& all = figures(section);
  for (auto&& [key_node, node] : table) {
    const std::string key(key_node.str());
    const auto line = key_node.source().begin.line;
    if (key == "warn") {
      const std::optional<bool> warn = node.value<bool>();
      if (!warn) {
        bad(path, line, "warn: true or false");
      }
      target.warn = *warn;
      continue;
    }
    if (key == "min_calls" && section == Section::Functions) {
      const std::optional<std::int64_t> calls = node.value<std::int64_t>();
      if (!calls || *calls < 0) {
        bad(path, line, "min_calls: a whole number, 0 or more");
      }
      target.min_calls = static_cast<std::uint64_t>(*calls);
      continue;
    }
    const bool change = key.size() > 7 && key.ends_with("_change");
    const std::string name = change ? key.substr(0, key.size() - 7) : key;
    const auto figure = std::find_if(
        all.begin(), all.end(), [&](const Column& column) { return figure_name(column) == name; });
    if (figure == all.end()) {
      bad(path, line,
          fmt::format("unknown key '{}' in [{}.\"{}\"] (keys: warn, {}{}, and each with _change)",
                      key, kSections[static_cast<int>(section)], pattern,
                      section == Section::Functions ? "min_calls, " : "", figure_names(section)));
    }
    if (change && figure->noise == diff::Noise::Max) {
      bad(path, line,
          fmt::format("{}: a maximum is one item's, its change never beyond noise: give {} a "
                      "budget",
                      key, name));
    }
    target.budgets.push_back(parse_budget(
        path, key, node, static_cast<std::size_t>(figure - all.begin()), change, *figure));
  }
  // toml++ iterates a table by key; judgements and messages follow the file.
  std::stable_sort(target.budgets.begin(), target.budgets.end(),
                   [](const Budget& a, const Budget& b) { return a.line < b.line; });
  return target;
}

} // namespace

Policy read_policy(const std::string& path) {
  const std::string text = profiles::read_text(path);
  toml::table root;
  try {
    root = toml::parse(text, path);
  } catch (const toml::parse_error& error) {
    bad(path, error.source().begin.line, std::string(error.description()));
  }
  Policy policy;
  policy.path = path;
  for (auto&& [key_node, node] : root) {
    const std::string key(key_node.str());
    const auto line = key_node.source().begin.line;
    if (key == "min_calls") {
      const std::optional<std::int64_t> calls = node.value<std::int64_t>();
      if (!calls || *calls < 0) {
        bad(path, line, "min_calls: a whole number, 0 or more");
      }
      policy.min_calls = static_cast<std::uint64_t>(*calls);
      continue;
    }
    if (key == "ignore") {
      const toml::array* globs = node.as_array();
      if (globs == nullptr || (!globs->empty() && !globs->is_homogeneous<std::string>())) {
        bad(path, line, "ignore: a list of names or globs, [\"test_*\"]");
      }
      globs->for_each(
          [&](const toml::value<std::string>& glob) { policy.ignore.push_back(*glob); });
      continue;
    }
    const auto section = std::find(std::begin(kSections), std::end(kSections), key);
    if (section == std::end(kSections) || !node.is_table()) {
      bad(path, line,
          fmt::format("unknown key '{}' (keys: min_calls, ignore, and the tables functions, "
                      "sites, queues, locks)",
                      key));
    }
    for (auto&& [name, entry] : *node.as_table()) {
      if (!entry.is_table()) {
        bad(path, name.source().begin.line,
            fmt::format("{}.\"{}\": a table of rules, [{}.\"{}\"]", key, name.str(), key,
                        name.str()));
      }
      policy.targets.push_back(read_target(path,
                                           static_cast<Section>(section - std::begin(kSections)),
                                           std::string(name.str()), *entry.as_table()));
    }
  }
  std::stable_sort(policy.targets.begin(), policy.targets.end(),
                   [](const Target& a, const Target& b) { return a.line < b.line; });
  return policy;
}

namespace {

bool holds(Op op, double value, double amount) {
  switch (op) {
  case Op::Less:
    return value < amount;
  case Op::LessEqual:
    return value <= amount;
  case Op::Equal:
    return value == amount;
  case Op::GreaterEqual:
    return value >= amount;
  case Op::Greater:
    break;
  }
  return value > amount;
}

bool matches(const std::string& pattern, const std::string& name) {
  return fnmatch(pattern.c_str(), name.c_str(), 0) == 0;
}

struct Judging {
  const Policy& policy;
  diff::Comparison& comparison;
  const Target& target;
  std::string subject;
};

void add(const Judging& judging, const Budget& budget, const std::string& value, bool broken) {
  judging.comparison.judgements.push_back(
      {judging.subject, budget.text, budget.line, value, broken, judging.target.warn});
}

// The target's budgets on one comparison row (a function or a heap site).
void judge_row(const Judging& judging, const diff::Row& row) {
  const std::vector<Column>& all = figures(judging.target.section);
  const bool timing = judging.target.section == Section::Functions;
  const std::uint64_t min_calls = judging.target.min_calls.value_or(judging.policy.min_calls);
  const auto enough = [&](const std::optional<double>& calls) {
    return !timing || (calls && *calls >= static_cast<double>(min_calls));
  };
  for (const Budget& budget : judging.target.budgets) {
    const Column& column = all[budget.figure];
    const diff::Cell& cell = row.cells[budget.figure];
    if (!judging.comparison.shows(column) || !cell.now || !enough(row.cells[0].now)) {
      continue;
    }
    if (!budget.change) {
      add(judging, budget, diff::value_text(column.unit, *cell.now),
          !holds(budget.op, *cell.now, budget.amount.value));
      continue;
    }
    if (!cell.base || !enough(row.cells[0].base)) {
      continue;
    }
    add(judging, budget, diff::change_text(column.unit, cell),
        cell.significant &&
            !holds(budget.op, cell.change_by(budget.amount.percent), budget.amount.value));
  }
}

} // namespace

void judge(const Policy& policy, diff::Comparison& comparison) {
  comparison.policy = policy.path;
  const auto ignored = [&](const std::string& name) {
    return std::any_of(policy.ignore.begin(), policy.ignore.end(),
                       [&](const std::string& glob) { return matches(glob, name); });
  };
  const bool timing = comparison.kind == profiles::Kind::Stats;
  for (const Target& target : policy.targets) {
    // Functions, queues and locks in a stats.json's comparison, heap sites in a heap profile's.
    if (timing == (target.section == Section::Sites)) {
      continue;
    }
    const std::string_view section = kSections[static_cast<int>(target.section)];
    Judging judging{policy, comparison, target, ""};
    std::vector<const diff::Row*> rows;
    if (comparison.totals) {
      rows.push_back(&*comparison.totals);
    }
    const std::vector<diff::Row>& named = target.section == Section::Queues  ? comparison.queues
                                          : target.section == Section::Locks ? comparison.locks
                                                                             : comparison.rows;
    for (const diff::Row& row : named) {
      rows.push_back(&row);
    }
    std::size_t matched = 0;
    for (const diff::Row* row : rows) {
      if (matches(target.pattern, row->name) && !ignored(row->name)) {
        ++matched;
        judging.subject = fmt::format("{} {}", section.substr(0, section.size() - 1), row->name);
        judge_row(judging, *row);
      }
    }
    // A name without a glob that the run does not have: renamed or gone, worth a warning.
    if (matched == 0 && target.pattern.find_first_of("*?[") == std::string::npos &&
        !target.budgets.empty()) {
      comparison.judgements.push_back(
          {fmt::format("{} {}", section.substr(0, section.size() - 1), target.pattern),
           target.budgets.front().text, target.budgets.front().line, "not in the run", true, true});
    }
  }
}

} // namespace hotscope::cli::policy
