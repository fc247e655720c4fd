#include "policy.hpp"

#include "agent_client.hpp"
#include "agent_commands.hpp"

#include <fmt/format.h>

#include <cstdio>

namespace hotscope::cli::policy {

CheckCommand::CheckCommand(CLI::App& app) {
  command_ = app.add_subcommand("check", "Judge one profile (stats.json or heap.json), or a "
                                         "running process's statistics, by a policy file's "
                                         "absolute budgets");
  new_.add_options(*command_, "The profile: a stats.json or a heap.json (or -p/-n)");
  command_->add_option("--policy", policy_, "The policy file (TOML)")->required();
  command_->add_flag("--json", json_, "Print the judgements as JSON");
  command_->footer("NEW is a file, or the process named by -p or -n (its statistics, as GET "
                   "/v1/stats gives them). Rules on a change (KEY_change) need a base: `hotscope "
                   "diff BASE NEW --policy FILE`. Exit codes: 0 within the policy, 1 a budget "
                   "broken, 2 bad input; with -p/-n as in docs/agent.md. The file's keys: "
                   "docs/ci.md.");
}

std::optional<int> CheckCommand::run() const {
  if (!command_->parsed()) {
    return std::nullopt;
  }
  try {
    const Policy policy = read_policy(policy_);
    const profiles::Profile now = diff::new_profile(new_, profiles::Kind::Stats, "check", "judge");
    diff::Comparison comparison = diff::one_run(now);
    judge(policy, comparison);
    if (json_) {
      nlohmann::json out = diff::as_json(comparison);
      out.erase("base");
      out.erase("rows");
      out.erase("totals");
      out.erase("queues");
      out.erase("locks");
      out.erase("rules");
      write_output("", out.dump(2) + "\n");
    } else {
      write_output("",
                   fmt::format("check: {}  {}\n", comparison.new_source, comparison.new_summary) +
                       diff::policy_text(comparison));
    }
    return comparison.failed() ? kFailed : kOk;
  } catch (const Failure& failure) {
    std::fprintf(stderr, "hotscope: %s\n", failure.what());
    return failure.code;
  }
}

} // namespace hotscope::cli::policy
