// `hotscope diff BASE NEW`: two profiles of one program compared, row by row, to catch
// regressions (docs/diff-and-report.md). Two stats.json (or a stats.json and a live process):
// per function, calls, mean, p50/p95/p99, self and total time per call, allocations per call,
// sorted by impact, then the queues' and locks' figures. Two heap.json: per allocation site
// (frames matched by function and file), bytes and blocks in total, at t-gmax and at t-end.
// `--fail-on` rules make it a CI gate.
#pragma once

#include "agent_client.hpp"
#include "profiles/profiles.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hotscope::cli::diff {

enum class Unit { Count, Nanoseconds, Bytes };
// How a figure's run-to-run noise is estimated (docs/diff-and-report.md#significance).
enum class Noise {
  Exact,      // counts and allocations: any change is one
  Mean,       // the mean call (and total time per call)
  Self,       // self time per call: the mean's noise, the drift floor of the mean
  Percentile, // a percentile, Column::quantile
  Samples,    // CPU time per call: samples, Poisson (Spread::cpu_period_ns)
  Events,     // a count of chance events (contended acquisitions, a queue's depth): Poisson
  Max,        // the slowest one: another run's may be anything above it, never beyond noise
};

// One compared figure.
struct Column {
  const char* key;     // in rules and in --json: "p99", "end_bytes"
  const char* heading; // in the table: "P99", "End Bytes"
  Unit unit;
  std::uint64_t min_calls; // fewer calls on either side: not significant (timing only)
  Noise noise = Noise::Exact;
  double quantile = 0;  // Noise::Percentile: 0.5 for P50
  bool neutral = false; // a change is neither a regression nor an improvement (calls, items pushed)
  // Shown only when both sides have CPU samples (Comparison::cpu).
  bool sampled() const { return noise == Noise::Samples; }
};
// The columns compared for profiles of `kind`, in table order.
const std::vector<Column>& columns(profiles::Kind kind);
// The columns of a stats.json's queues and locks (docs/diff-and-report.md, "Queues and locks").
const std::vector<Column>& queue_columns();
const std::vector<Column>& lock_columns();

// A side's call durations as stats.json gives them (ns): what its noise is estimated from. A
// percentile the file lacks is left out (negative); min and max then default to the nearest
// percentile given.
struct Spread {
  double calls = 0, mean = -1, min = -1, max = -1;
  double p50 = -1, p90 = -1, p95 = -1, p99 = -1, p999 = -1;
  double cpu_period_ns = 0;      // the CPU time one sample stands for; 0: the run has no samples
  double samples_per_signal = 1; // periods that fell together (the kernel merged expirations)
};
// A time changed beyond noise when the intervals that hold each side's figure in another run of
// the same program (each with kNoiseZ standard errors) do not overlap and the change exceeds
// kDriftFloor of the larger value (the mean for self time) and kDriftFloorNs: a drift between
// runs that no single run's spread shows (clock frequency, caches, the machine's other load), and
// the histogram's resolution (1/256). The absolute floor is for calls of a few hundred ns, whose
// every call a shared machine can make slower for a whole run (docs/diff-and-report.md).
inline constexpr double kNoiseZ = 3;
inline constexpr double kDriftFloor = 0.05;
inline constexpr double kDriftFloorNs = 1000;
struct Interval {
  double low = 0, high = 0;
};
// The interval of `column`'s figure `value` for a run like `side`: the mean's is value ±
// kNoiseZ sigma / sqrt(calls), sigma that of the distribution the percentiles outline; the
// percentile q's spans the calls ranked calls q ± kNoiseZ sqrt(calls q (1 - q)), read from
// the percentiles, and is open (0 or infinite) past the fastest or the slowest call. CPU time
// per call is n samples of cpu_period_ns over the calls, in signals of w = samples_per_signal
// samples each: the signals are Poisson, so n's interval is n ± kNoiseZ sqrt(w max(n, w)).
Interval noise_interval(const Column& column, const Spread& side, double value);
// Whether `column` changed significantly from `b` (BASE) to `n` (NEW).
bool significant(const Column& column, const Spread& base, const Spread& now, double b, double n);

// One --fail-on rule: "p99>+10%" is {column of p99, above, 10, percent}.
struct Rule {
  std::string text;
  std::size_t column = 0; // index into columns(kind)
  bool above = true;      // '>' (else '<')
  double amount = 0;      // signed; in the column's unit unless percent
  bool percent = false;
};
// An AMOUNT of the rules' grammar for `column`: ('+' | '-')? NUMBER ('%' | UNIT)?; `error` says
// what is wrong when `text` is not one (also read by the policy file, policy/policy.hpp).
struct Amount {
  double value = 0; // in the column's unit unless percent
  bool percent = false;
  std::string error;
};
Amount parse_amount(std::string_view text, const Column& column);
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
  // change(), or in % when `in_percent`: a growth from 0 is +infinity %, no change 0 %.
  double change_by(bool in_percent) const;
};
bool matches(const Rule& rule, const Cell& cell);

enum class Side { Both, BaseOnly, NewOnly };

// An object (by file name) whose instrumented functions have one build id in BASE and another
// in NEW: a rebuilt program, whose functions are still matched by name, file and line.
struct Rebuilt {
  std::string module, base_build_id, new_build_id;
};

struct Row {
  std::string name;               // the function, or the site's first frame past the allocator
  std::string file;               // timing: the function's file
  int line = 0;                   // timing: its line (NEW's, else BASE's)
  std::string module;             // timing: its object's file name ("" for a macro scope)
  bool shares_place = false;      // timing: another row has its name, file and line
  std::vector<std::string> stack; // heap: the site's frames, "function (file)", innermost first
  Side side = Side::Both;
  double impact = 0;               // timing: ns; heap: bytes
  std::vector<Cell> cells;         // one per column
  std::vector<std::string> failed; // the rules it matches
  bool significant() const;
};

// A policy's verdict on one figure (policy/policy.hpp), shown by every output.
struct Judgement {
  std::string subject; // "function handle_request", "queue jobs", "site (all sites)"
  std::string rule;    // as the policy file says it: p99 = "< 2ms"
  int line = 0;        // the rule's line in the policy file
  std::string value;   // the figure judged: "2.50 ms", "+12.0%"
  bool broken = false; // the figure is outside the rule
  bool warn = false;   // a broken rule only warns
  bool fails() const { return broken && !warn; }
};

// One table of a comparison: its rows, the columns of their cells, and the column that stands
// for a row that did not move.
struct Table {
  const char* subject; // "function", "queue", "lock", "heap site"
  const std::vector<Column>& columns;
  const std::vector<Row>& rows;
  std::size_t headline;
};

struct Comparison {
  profiles::Kind kind = profiles::Kind::Stats;
  std::string base_source, new_source;
  std::string base_summary, new_summary; // "workload (pid 4242), 1.20 s"
  std::vector<std::string> rules;
  std::vector<Row> rows;          // by impact, largest first
  std::optional<Row> totals;      // heap: the sums over every site (rules apply to it too)
  std::vector<Row> queues, locks; // timing: a stats.json's queues and locks, by impact
  bool cpu = false;               // timing: both sides have CPU samples, the CPU columns compared
  std::vector<Rebuilt> rebuilt;   // timing: the objects rebuilt between BASE and NEW
  std::string policy;             // the policy file judged by, "" for none
  std::vector<Judgement> judgements;
  // Whether a row fails a --fail-on rule or a judgement fails.
  bool failed() const;
  // Whether `column` is in the table and the JSON.
  bool shows(const Column& column) const { return cpu || !column.sampled(); }
  // Functions, queues and locks; or heap sites (the totals are not in it).
  std::vector<Table> tables() const;
};

// A stats.json's queues and locks compared, matched by name (locks by name and kind), in the
// files' order among equals; by impact, the added wait time. No BASE: one run's, NEW only.
std::vector<Row> queue_rows(const profiles::Stats* base, const profiles::Stats& now);
std::vector<Row> lock_rows(const profiles::Stats* base, const profiles::Stats& now);

// BASE and NEW compared; a Failure (kUsage) when they are of different kinds or malformed.
Comparison compare(const profiles::Profile& base, const profiles::Profile& now,
                   const std::vector<std::string>& rule_texts);
// One run's figures as a comparison's NEW side, with no BASE (what `hotscope check` judges).
Comparison one_run(const profiles::Profile& run);
std::string as_text(const Comparison& comparison);
// The policy's verdict: how many rules held, and each broken one ("" without a policy).
std::string policy_text(const Comparison& comparison);
nlohmann::json as_json(const Comparison& comparison);
// For a pull-request comment (docs/ci.md): a verdict line, the regressions, the improvements and
// the rest in a <details> block; the same input gives the same bytes.
std::string as_markdown(const Comparison& comparison);
// A figure, and a cell's change ("+12.0%", "-2.0ms", "=") as the table prints them.
std::string value_text(Unit unit, double value);
std::string change_text(Unit unit, const Cell& cell);

// NEW as `process` is now: its statistics, or its heap profile when BASE is a heap profile.
profiles::Profile live_profile(profiles::Kind kind, const AgentProcess& process);

// NEW as a command line names it: a file, or a live process by pid or by name.
struct ProfileSource {
  std::string path;
  std::optional<std::int64_t> pid;
  std::optional<std::string> name;
  // NEW (path_help says what it is), -p PID and -n NAME added to `command`.
  void add_options(CLI::App& command, const char* path_help);
};
// The profile `target` names (a process's of `kind`); a Failure (kUsage) for `command` ("diff")
// unless exactly one of the three is given ("say what to WHAT"), or as find_by_pid and
// find_by_name fail.
profiles::Profile new_profile(const ProfileSource& target, profiles::Kind kind, const char* command,
                              const char* what);

class DiffCommand {
public:
  explicit DiffCommand(CLI::App& app);
  // After parsing: the exit status when `diff` was chosen (0, 1 when a rule matched, or a
  // Failure's code), else nothing.
  std::optional<int> run() const;

private:
  CLI::App* command_ = nullptr;
  std::string base_;
  ProfileSource new_;
  std::vector<std::string> rules_;
  bool json_ = false;
  std::string format_ = "text";
  std::string policy_;
};

} // namespace hotscope::cli::diff
