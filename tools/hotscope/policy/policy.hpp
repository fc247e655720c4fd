// A regression policy (docs/ci.md, "The policy file"): a TOML file, read with toml++, of
// absolute budgets on one run ("p99 = '< 2ms'") and rules on a change against a base
// ("p99_change = '< +10%'"), per function, heap site, queue or lock (names or globs), with
// min_calls, names to ignore and rules that only warn. `hotscope check NEW --policy FILE` judges
// one run; `hotscope diff BASE NEW --policy FILE` a comparison (diff/diff.hpp).
#pragma once

#include "diff/diff.hpp"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hotscope::cli::policy {

enum class Op { Less, LessEqual, Equal, GreaterEqual, Greater };

// One rule: `figure OP amount`, on the figure of one run or on its change.
struct Budget {
  std::string text;       // as written: p99 = "< 2ms"
  int line = 0;           // in the file
  std::size_t figure = 0; // index into the section's figures
  bool change = false;    // a "_change" key: judged on a comparison only
  Op op = Op::Less;
  diff::Amount amount;
};

enum class Section { Functions, Sites, Queues, Locks };

// A [functions."PATTERN"] (or sites, queues, locks) table: the budgets of every name PATTERN
// matches (a glob, fnmatch(3)).
struct Target {
  Section section = Section::Functions;
  std::string pattern;
  int line = 0;                           // its header's line
  std::optional<std::uint64_t> min_calls; // functions: overrides the file's
  bool warn = false;                      // its broken budgets only warn
  std::vector<Budget> budgets;
};

struct Policy {
  std::string path;
  std::uint64_t min_calls = 0;     // fewer calls: a function is not judged
  std::vector<std::string> ignore; // globs of names never judged
  std::vector<Target> targets;     // in the file's order, their budgets too
};

// The policy in the file at `path`; a Failure (kUsage) "PATH:LINE: ..." naming an unknown key, a
// malformed rule or duration, or the TOML syntax error.
Policy read_policy(const std::string& path);

// `comparison` (of NEW against a base, or diff::one_run(NEW)) judged by `policy`: fills its
// policy and judgements. Rules on a change are judged only where the comparison has both sides,
// and break only on a significant change (docs/diff-and-report.md#significance).
void judge(const Policy& policy, diff::Comparison& comparison);

// `hotscope check (NEW | -p PID | -n NAME) --policy FILE [--json]`: exit 0 within the policy, 1 a
// budget broken, 2 bad input.
class CheckCommand {
public:
  explicit CheckCommand(CLI::App& app);
  std::optional<int> run() const;

private:
  CLI::App* command_ = nullptr;
  diff::ProfileSource new_;
  std::string policy_;
  bool json_ = false;
};

} // namespace hotscope::cli::policy
