// `hotscope diff BASE NEW`: two profiles of one program compared, row by row, to catch
// regressions (docs/diff-and-report.md). Two stats.json (or a stats.json and a live process):
// per function, calls, mean, p50/p95/p99, self and total time per call, allocations per call,
// sorted by impact. Two heap.json: per allocation site (frames matched by function and file),
// bytes and blocks in total, at t-gmax and at t-end. `--fail-on` rules make it a CI gate.
#pragma once

#include "profiles/profiles.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace hotscope::cli::diff {

enum class Unit { Count, Nanoseconds, Bytes };

// One compared figure.
struct Column {
  const char* key;     // in rules and in --json: "p99", "end_bytes"
  const char* heading; // in the table: "P99", "End Bytes"
  Unit unit;
  std::uint64_t min_calls; // fewer calls on either side: not significant (timing only)
};
// The columns compared for profiles of `kind`, in table order.
const std::vector<Column>& columns(profiles::Kind kind);

// A change that is not significant: too few calls (Column::min_calls), or for times less than
// this share of the larger value, twice the histogram's resolution of 1/256 (each side's
// percentile is within 1/256 of a recorded value).
inline constexpr double kTimeResolution = 2.0 / 256;

// One --fail-on rule: "p99>+10%" is {column of p99, above, 10, percent}.
struct Rule {
  std::string text;
  std::size_t column = 0; // index into columns(kind)
  bool above = true;      // '>' (else '<')
  double amount = 0;      // signed; in the column's unit unless percent
  bool percent = false;
};
// The rules in `texts` (each may hold several, comma-separated), for profiles of `kind`; a
// Failure (kUsage) naming the first bad one and what a rule looks like.
std::vector<Rule> parse_rules(const std::vector<std::string>& texts, profiles::Kind kind);

struct Cell {
  std::optional<double> base, now; // none: the row is not on that side (or has no calls there)
  bool significant = false;
  // now - base (a side missing counts as 0).
  double change() const;
  // The change in % of base; none when base is 0 or missing.
  std::optional<double> percent() const;
};
bool matches(const Rule& rule, const Cell& cell);

enum class Side { Both, BaseOnly, NewOnly };

struct Row {
  std::string name;               // the function, or the site's first frame past the allocator
  std::string file;               // timing: the function's file
  int line = 0;                   // timing: its line (NEW's, else BASE's)
  std::vector<std::string> stack; // heap: the site's frames, "function (file)", innermost first
  Side side = Side::Both;
  double impact = 0;               // timing: ns; heap: bytes
  std::vector<Cell> cells;         // one per column
  std::vector<std::string> failed; // the rules it matches
  bool significant() const;
};

struct Comparison {
  profiles::Kind kind = profiles::Kind::Stats;
  std::string base_source, new_source;
  std::string base_summary, new_summary; // "workload (pid 4242), 1.20 s"
  std::vector<std::string> rules;
  std::vector<Row> rows;     // by impact, largest first
  std::optional<Row> totals; // heap: the sums over every site (rules apply to it too)
  bool failed() const;
};

// BASE and NEW compared; a Failure (kUsage) when they are of different kinds or malformed.
Comparison compare(const profiles::Profile& base, const profiles::Profile& now,
                   const std::vector<std::string>& rule_texts);
std::string as_text(const Comparison& comparison);
nlohmann::json as_json(const Comparison& comparison);

class DiffCommand {
public:
  explicit DiffCommand(CLI::App& app);
  // After parsing: the exit status when `diff` was chosen (0, 1 when a rule matched, or a
  // Failure's code), else nothing.
  std::optional<int> run() const;

private:
  CLI::App* command_ = nullptr;
  std::string base_, new_;
  std::int64_t pid_ = 0;
  std::string name_;
  std::vector<std::string> rules_;
  bool json_ = false;
};

} // namespace hotscope::cli::diff
